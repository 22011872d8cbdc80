"""A STAND-IN of AMD's ROCm SDK wheels (``rocm``, ``rocm-sdk-core``, ``rocm-sdk-libraries``,
``rocm-sdk-devel``, ``rocm-sdk-device-gfx942``/``-gfx950``), made from Debian's real ROCm 7.2.4
binaries, for the tests of the ``rocm: {from: pip}`` mode. AMD's index is not reachable here.

:func:`ensure_standin_sdk` builds them once (a debian:sid-slim container downloads the .deb files of
``debs.lock``, refuses any whose sha256 differs, and ``assemble.py`` lays them out) and caches them by
content in ``$XDG_CACHE_HOME/rocm-buildkit/standin-sdk/<key>/``, with a PEP 503 index of them written
by buildkit's own static-index writer. :func:`serve` serves that index on 127.0.0.1.

What is faithful to TheRock (docs/packaging/python_packaging.md and its templates): the distribution
and folder names (``_rocm_sdk_core/lib``, ``_rocm_sdk_libraries/lib``, ``_rocm_sdk_devel`` expanded
from ``_devel.tar`` on the first ``rocm-sdk path``), libraries stored under their SONAME only
(AMD's SONAMEs: libamdhip64.so.7, libhiprtc.so.7, libhsa-runtime64.so.1), RUNPATHs ``$ORIGIN`` and
``$ORIGIN/../../_rocm_sdk_core/lib``, bundled system libraries in ``lib/rocm_sysdeps/lib``, the
selector's extras (``libraries``, ``devel``, ``device-<gfx>``, ``device-all``) pinned ``==`` to the
release, ``rocm_sdk.initialize_process/preload_libraries/find_libraries`` and ``rocm-sdk path
--root|--cmake|--bin``, ``version``, ``targets``, ``test``.

What differs from AMD's packages:
- the binaries are Debian's build of 7.2.4 (upstream LLVM 22, glibc >= 2.38), not TheRock's portable
  build; the version is 7.2.4, not 7.14 or 10.0;
- ``rocm-sdk-libraries`` holds rocFFT and hipFFT only: Debian's rocBLAS (210 MB), rocSOLVER (700 MB)
  and hipBLASLt are left out for size, so hipBLAS/rocBLAS SONAMEs are not in the stand-in;
  TheRock also names it ``rocm-sdk-libraries-<family>`` (the issue's ``rocm-sdk-libraries`` is kept);
- ``rocm-sdk-core`` has no compiler (no ``lib/llvm``, no ``bin/hipcc``: the builder image's hipcc
  compiles) and no comgr (Debian's links the shared libLLVM-22; HIP loads comgr only for code objects
  on a GPU); the bundled system libraries keep Debian's SONAMEs (TheRock renames them
  ``librocm_sysdeps_*``);
- a device package holds its target's device-library bitcode (``oclc_isa_version_942.bc``), not the
  math libraries' kernel databases;
- ``rocm`` is a wheel, not TheRock's selector sdist, and its package folders carry no version nonce.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import io
import os
import shutil
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).parent
VERSION = "7.2.4"
TARGETS = ("gfx942", "gfx950")
DISTRIBUTIONS = (
    "rocm",
    "rocm-sdk-core",
    "rocm-sdk-libraries",
    "rocm-sdk-devel",
    *(f"rocm-sdk-device-{t}" for t in TARGETS),
)
BASE_IMAGE = "debian:sid-slim"
STANDIN_NOTE = (
    "STAND-IN SDK: wheels laid out as TheRock's, made from Debian's ROCm 7.2.4 binaries "
    "(tests/helpers/standin_sdk); AMD's differ in version (7.14), compiler, libraries (rocBLAS) and "
    "device contents"
)


class StandinSdk(NamedTuple):
    """The built stand-in: its wheels and the static PEP 503 index (``<index>/simple/``) of them."""

    wheels: Path
    index: Path
    version: str = VERSION

    def wheel(self, dist: str) -> Path:
        prefix = dist.replace("-", "_") + f"-{self.version}-"
        (found,) = [p for p in self.wheels.glob("*.whl") if p.name.startswith(prefix)]
        return found


def inputs() -> list[Path]:
    """The files the stand-in is made from (its cache key)."""
    return sorted(
        [HERE / "debs.lock", HERE / "build.sh", HERE / "assemble.py", *(HERE / "template").rglob("*.py")]
    )


def cache_key() -> str:
    digest = hashlib.sha256()
    for path in inputs():
        digest.update(path.relative_to(HERE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "rocm-buildkit" / "standin-sdk"


def _context_tar() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in inputs():
            tar.add(path, arcname="standin/" + path.relative_to(HERE).as_posix())
    return buf.getvalue()


def _run_in_container(client: Any, command: list[str], progress: Any = print) -> tuple[str, bytes | None]:
    """Run ``build.sh`` in a throwaway debian:sid-slim container (network: the Debian mirror);
    return its output and, for a build, the tar of /out."""
    box = client.containers.create(
        BASE_IMAGE, command, labels={"io.rocm-buildkit.test": "standin-sdk"}, working_dir="/"
    )
    try:
        box.put_archive("/", _context_tar())
        box.start()
        status = box.wait(timeout=1800)
        logs = box.logs().decode(errors="replace")
        if status.get("StatusCode") != 0:
            raise RuntimeError(f"stand-in SDK build failed ({status}):\n{logs[-4000:]}")
        if command[-1] == "relock":
            return logs, None
        stream, _ = box.get_archive("/out")
        return logs, b"".join(stream)
    finally:
        box.remove(force=True)


def ensure_standin_sdk(client: Any, *, progress: Any = print) -> StandinSdk:
    """The stand-in SDK, built now unless the cache has it (its key: :func:`inputs`)."""
    from buildkit.manifest import sha256_file
    from buildkit.publish.index import add_wheels

    final = cache_root() / cache_key()
    if (final / "done").is_file():
        return StandinSdk(final / "wheels", final / "index")
    progress(f"building the stand-in ROCm SDK {VERSION} from Debian's packages into {final}")
    _logs, archive = _run_in_container(client, ["bash", "/standin/build.sh"], progress)
    assert archive is not None
    tmp = final.with_name(final.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "wheels").mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith(".whl") and "/" in member.name:
                data = tar.extractfile(member)
                assert data is not None
                (tmp / "wheels" / Path(member.name).name).write_bytes(data.read())
    wheels = sorted((tmp / "wheels").glob("*.whl"))
    if len(wheels) != len(DISTRIBUTIONS):
        raise RuntimeError(f"stand-in SDK build wrote {[w.name for w in wheels]}")
    (tmp / "index").mkdir()
    add_wheels(tmp / "index", [(w, sha256_file(w)) for w in wheels])
    (tmp / "done").write_text(cache_key() + "\n")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return StandinSdk(final / "wheels", final / "index")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve(index: Path) -> Iterator[str]:
    """Serve the static index on 127.0.0.1 (an ephemeral port); yields its ``/simple/`` URL."""

    def handler(*args: Any, **kwargs: Any) -> _Quiet:
        return _Quiet(*args, directory=str(index), **kwargs)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.helpers.standin_sdk [--relock]``: build (or find) the stand-in and print
    where; ``--relock`` prints debs.lock's rows with what the mirror serves now."""
    import argparse

    from buildkit.docker_engine import connect

    parser = argparse.ArgumentParser(prog="python -m tests.helpers.standin_sdk")
    parser.add_argument("--relock", action="store_true")
    args = parser.parse_args(argv)
    client = connect()
    if args.relock:
        logs, _ = _run_in_container(client, ["bash", "/standin/build.sh", "relock"])
        print(logs)
        return 0
    sdk = ensure_standin_sdk(client)
    for wheel in sorted(sdk.wheels.glob("*.whl")):
        print(f"{wheel.stat().st_size:>12,d}  {wheel}")
    print(f"index: {sdk.index / 'simple'}")
    return 0


#: a runtime with no system ROCm: Debian sid (glibc >= 2.38, which Debian's ROCm binaries need) and
#: its CPython with venv, nothing else
RUNTIME_DOCKERFILE = f"""FROM {BASE_IMAGE}
RUN apt-get -o Acquire::Check-Valid-Until=false update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-venv \\
 && rm -rf /var/lib/apt/lists/* \\
 && ! ldconfig -p | grep -q amdhip64 && test ! -e /opt/rocm
LABEL io.rocm-buildkit.test=standin-sdk-runtime
"""


def ensure_runtime_image(client: Any, *, progress: Any = print) -> str:
    """The clean runtime image (no ROCm at all), built once, tagged by its Dockerfile's content."""
    tag = "rocm-buildkit-test/standin-runtime:" + hashlib.sha256(RUNTIME_DOCKERFILE.encode()).hexdigest()[:12]
    try:
        client.images.get(tag)
        return tag
    except Exception:  # docker.errors.ImageNotFound: the SDK is imported lazily by the caller
        pass
    progress(f"building {tag}")
    client.images.build(fileobj=io.BytesIO(RUNTIME_DOCKERFILE.encode()), tag=tag, rm=True)
    return tag


def tar_folder(folder: Path, arcname: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(folder, arcname=arcname)
    return buf.getvalue()


def run_offline(client: Any, image: str, script: str, files: dict[str, Path], timeout: int = 900) -> str:
    """Run ``script`` (bash) in a container of ``image`` with no network at all, after copying each
    host folder of ``files`` to its container path; the index is served inside the container on
    127.0.0.1 by the script itself. Returns the output; AssertionError with it on a non-zero exit."""
    box = client.containers.create(
        image,
        ["bash", "-euo", "pipefail", "-c", script],
        network_mode="none",
        labels={"io.rocm-buildkit.test": "standin-sdk"},
    )
    try:
        for target, folder in files.items():
            box.put_archive("/", tar_folder(folder, target.lstrip("/")))
        box.start()
        status = box.wait(timeout=timeout)
        logs: str = box.logs().decode(errors="replace")
        assert status.get("StatusCode") == 0, f"exit {status}:\n{logs[-6000:]}"
        return logs
    finally:
        box.remove(force=True)


#: the bash lines that serve /index on 127.0.0.1:8000 inside an offline container
SERVE_INDEX = """python3 -m http.server --bind 127.0.0.1 8000 --directory /index >/tmp/http.log 2>&1 &
for _ in $(seq 50); do
  python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:8000/simple/")' 2>/dev/null && break
  sleep 0.2
done
"""
