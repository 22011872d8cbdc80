"""``buildkit smoke`` in real runtime containers, and its agreement with the gate.

Runtime images: ``rocm-buildkit-test/runtime-<release>:<hash>``, built here FROM the seeded
``debian:<release>-slim`` with python3 + python3-venv (apt), cached by a tag derived from the Dockerfile.
The GLIBC wheel: a tiny shared library calling ``strlcpy`` (versioned GLIBC_2.38) compiled on the
trixie builder (glibc 2.41), loaded with ctypes on import. bookworm has glibc 2.36: the import must
fail there, pass on trixie, and the gate with bookworm's ceilings must fail it too.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from buildkit import docker_engine, manifest, smoke
from buildkit.errors import UsageError
from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.gate.options import GateFlags, apply_options
from buildkit.inspect import inspect_wheel
from tests.helpers.wheels_for_publish import write_wheel

# glibc / libstdc++ of the runtime images (Debian bookworm: glibc 2.36, GCC 12; trixie: 2.41, GCC 14)
BOOKWORM = {"max_glibc": "2.36", "max_glibcxx": "3.4.30"}
TRIXIE = {"max_glibc": "2.41", "max_glibcxx": "3.4.33"}

RUNTIME_DOCKERFILE = """\
FROM debian:{release}-slim
RUN apt-get update \\
 && apt-get install -y --no-install-recommends python3 python3-venv \\
 && rm -rf /var/lib/apt/lists/*
"""

NATIVE_C = """\
#include <string.h>
int copy_len(const char *src) {
    char buf[8];
    return (int) strlcpy(buf, src, sizeof buf);
}
"""

INIT_PY = b"""\
import ctypes, os
_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "_native.so"))
def copy_len(text):
    return _lib.copy_len(text.encode())
"""


def _containers_of(client: Any, name: str) -> list[Any]:
    """The smoke containers this test process made (``name``: the smoke test's, for the reader: one runs
    at a time). The engine is shared: another test's or another build's smoke containers are not ours."""
    labels = [f"{docker_engine.CONTAINER_LABEL}=smoke", f"{docker_engine.OWNER_PREFIX}pid={os.getpid()}"]
    return list(client.containers.list(all=True, filters={"label": labels}))


def runtime_image(client: Any, release: str) -> str:
    dockerfile = RUNTIME_DOCKERFILE.format(release=release)
    base_id = client.images.get(f"debian:{release}-slim").id
    digest = hashlib.sha256((dockerfile + base_id).encode()).hexdigest()[:12]
    tag = f"rocm-buildkit-test/runtime-{release}:{digest}"
    try:
        client.images.get(tag)
    except Exception:
        client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, forcerm=True)
    return tag


@pytest.fixture(scope="session")
def bookworm(docker_client: Any) -> str:
    return runtime_image(docker_client, "bookworm")


@pytest.fixture(scope="session")
def trixie(docker_client: Any) -> str:
    return runtime_image(docker_client, "trixie")


@pytest.fixture(scope="session")
def glibc238_wheel(
    docker_client: Any, debian_rocm_image: Any, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """glibc238demo-1.0-py3-none-linux_x86_64.whl with a .so needing GLIBC_2.38, built on trixie."""
    out = tmp_path_factory.mktemp("glibc238")
    source = io.BytesIO()
    with tarfile.open(fileobj=source, mode="w") as tar:
        data = NATIVE_C.encode()
        info = tarfile.TarInfo("src/native.c")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    container = docker_client.containers.create(
        debian_rocm_image.tag, entrypoint=["sleep"], command=["infinity"], network_mode="none"
    )
    try:
        container.put_archive("/tmp", source.getvalue())
        container.start()
        result = container.exec_run(
            ["gcc", "-shared", "-fPIC", "-O2", "-o", "/tmp/src/_native.so", "/tmp/src/native.c"]
        )
        assert result.exit_code == 0, result.output.decode()
        stream, _ = container.get_archive("/tmp/src/_native.so")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.extractfile("_native.so")
            assert member is not None
            native = member.read()
    finally:
        container.remove(force=True)
    return write_wheel(
        out / "glibc238demo-1.0-py3-none-linux_x86_64.whl",
        {"glibc238demo/__init__.py": INIT_PY, "glibc238demo/_native.so": native},
    )


@pytest.mark.docker
def test_smoke_and_gate_agree_on_a_glibc_238_wheel(
    docker_client: Any, bookworm: str, trixie: str, glibc238_wheel: Path
) -> None:
    report = inspect_wheel(glibc238_wheel)
    assert report.elves[0].max_versions["GLIBC"] >= (2, 38)  # the premise: strlcpy@GLIBC_2.38

    spec = smoke.SmokeSpec("glibc", bookworm, imports=("glibc238demo",), commands=(
        "python -c 'import glibc238demo; assert glibc238demo.copy_len(\"hello world\") == 11'",
    ))  # fmt: skip
    on_bookworm = smoke.run_smoke(glibc238_wheel, spec, client=docker_client)
    assert on_bookworm.status == "failed"
    assert "GLIBC_2.38 not found" in on_bookworm.reason
    [install] = [s for s in on_bookworm.steps if s.kind == "install"]
    assert install.passed  # the wheel installs; it is the import that fails
    bookworm_gate = evaluate(report, apply_options(GateConfig(), GateFlags(**BOOKWORM)))
    assert not bookworm_gate.passed
    ceiling = [f for f in bookworm_gate.findings if f.rule == "ceiling"]
    assert ceiling and "GLIBC_2.38" in ceiling[0].message and "2.36" in ceiling[0].message

    on_trixie = smoke.run_smoke(glibc238_wheel, smoke.SmokeSpec("glibc", trixie, spec.imports, spec.commands),
                                client=docker_client)  # fmt: skip
    assert on_trixie.status == "passed", on_trixie.reason
    assert [s.kind for s in on_trixie.steps] == ["setup", "install", "import", "command"]
    trixie_gate = evaluate(report, apply_options(GateConfig(), GateFlags(**TRIXIE)))
    assert not [f for f in trixie_gate.findings if f.rule == "ceiling"]
    assert _containers_of(docker_client, "glibc") == []


@pytest.mark.docker
def test_cli_exit_11_with_the_captured_error(bookworm: str, trixie: str, glibc238_wheel: Path) -> None:
    run = [sys.executable, "-m", "buildkit", "smoke", str(glibc238_wheel)]
    failed = subprocess.run([*run, "--image", bookworm], capture_output=True, text=True, check=False)
    assert failed.returncode == 11, failed.stdout + failed.stderr
    assert "GLIBC_2.38 not found" in failed.stdout  # the report
    assert "smoke failed: cli in " in failed.stderr and "GLIBC_2.38 not found" in failed.stderr
    assert "no GPU passthrough" in failed.stdout  # said, not silent
    # default imports come from the wheel's top-level packages
    assert "import   glibc238demo" in failed.stdout
    passed = subprocess.run([*run, "--image", trixie], capture_output=True, text=True, check=False)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "smoke: 1 passed, 0 failed, 0 skipped" in passed.stdout


@pytest.mark.docker
def test_dependencies_come_from_the_wheelhouse_only(docker_client: Any, trixie: str, tmp_path: Path) -> None:
    house = tmp_path / "house"
    house.mkdir()
    write_wheel(house / "depdemo-2.0-py3-none-any.whl", {"depdemo/__init__.py": b"ANSWER = 42\n"})
    wheel = tmp_path / "usesdep-1.0-py3-none-any.whl"
    write_wheel(wheel, {"usesdep/__init__.py": b"from depdemo import ANSWER\n"})
    _add_requirement(wheel, "depdemo==2.0")
    spec = smoke.SmokeSpec("deps", trixie, imports=("usesdep",), commands=("python -c 'import depdemo'",))
    with_house = smoke.run_smoke(wheel, spec, client=docker_client, wheelhouse=house)
    assert with_house.status == "passed", with_house.reason
    # no wheelhouse, no index: the container has no network, the dependency cannot come from anywhere
    without = smoke.run_smoke(wheel, spec, client=docker_client)
    assert without.status == "failed"
    assert without.reason.startswith("install failed") and "depdemo" in without.reason


def _add_requirement(wheel: Path, requirement: str) -> None:
    import zipfile

    with zipfile.ZipFile(wheel) as zf:
        members = {n: zf.read(n) for n in zf.namelist() if ".dist-info/" not in n}
    name, version = wheel.name.split("-")[:2]
    wheel.unlink()
    write_wheel(wheel, members, requires=(requirement,))
    assert (
        f"Requires-Dist: {requirement}"
        in zipfile.ZipFile(wheel).read(f"{name}-{version}.dist-info/METADATA").decode()
    )


@pytest.mark.docker
def test_container_removed_on_interrupt(docker_client: Any, trixie: str, tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path / "slow-1.0-py3-none-any.whl", {"slow/__init__.py": b""})
    spec = smoke.SmokeSpec("interrupted", trixie, commands=("sleep 60",))
    seen: list[int] = []

    def progress(line: str) -> None:
        seen.append(len(_containers_of(docker_client, "interrupted")))
        if "install:" in line:  # Ctrl-C while the container runs
            raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        smoke.run_smoke(wheel, spec, client=docker_client, progress=progress)
    assert seen and seen[0] == 1  # the container existed while the test ran
    assert _containers_of(docker_client, "interrupted") == []
    assert time.monotonic() - started < 60


@pytest.mark.docker
def test_gpu_entries_are_skipped_with_the_reason(docker_client: Any, trixie: str, tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path / "gpu_demo-1.0-py3-none-any.whl", {"gpu_demo/__init__.py": b""})
    gpu = smoke.gpu_access()
    spec = smoke.SmokeSpec("needs-gpu", trixie, imports=("gpu_demo",), labels=("gpu",))
    result = smoke.run_smoke(wheel, spec, client=docker_client, gpu=gpu)
    if gpu is None:  # this machine: no /dev/kfd
        assert result.status == "skipped"
        assert "needs a GPU" in result.reason and "/dev/kfd" in result.reason
        assert "skipped: needs a GPU" in smoke.render_human([result])
    else:
        assert result.status == "passed", result.reason
        assert result.gpu.startswith("GPU passthrough: /dev/kfd, /dev/dri")


def test_summarize_error() -> None:
    out = (
        "Traceback (most recent call last):\n  File ...\n"
        "OSError: /tmp/x/_native.so: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38' not found "
        "(required by /tmp/x/_native.so)\n"
    )
    assert smoke.summarize_error(out).startswith("GLIBC_2.38 not found: OSError:")
    cxx = "ImportError: /usr/lib/libstdc++.so.6: version `GLIBCXX_3.4.32' not found (required by x.so)"
    assert smoke.summarize_error(cxx).startswith("GLIBCXX_3.4.32 not found")
    assert smoke.summarize_error("Traceback\nModuleNotFoundError: No module named 'nope'\n") == (
        "ModuleNotFoundError: No module named 'nope'"
    )


def test_gpu_access_reads_device_nodes(tmp_path: Path) -> None:
    assert smoke.gpu_access(tmp_path) is None
    (tmp_path / "kfd").write_text("")
    (tmp_path / "dri").mkdir()
    (tmp_path / "dri" / "renderD128").write_text("")
    access = smoke.gpu_access(tmp_path)
    assert access is not None
    assert access.devices == (f"{tmp_path}/kfd:/dev/kfd:rwm", f"{tmp_path}/dri:/dev/dri:rwm")


RECIPE = """\
name: glibc238demo
source:
  path: .
version:
  base: "1.0"
python: ["3.12"]
rocm: ["6.4"]
archs:
  list: [gfx90a]
manylinux:
  policy: manylinux_2_28
image: manylinux_2_28-rocm
smoke:
  - name: old-runtime
    image: "{old}"
    imports: [glibc238demo]
    labels: [runtime]
  - name: new-runtime
    image: "{new}"
    commands: ["python -c 'import glibc238demo'"]
    labels: [runtime, current]
  - name: on-device
    image: "rocm/vllm:rocm{{rocm}}"
    imports: [glibc238demo]
    labels: [gpu]
"""


def test_recipe_entries_by_label_and_placeholders(tmp_path: Path) -> None:
    from buildkit.errors import UsageError
    from buildkit.recipe import load_recipe

    path = tmp_path / "r.yaml"
    path.write_text(RECIPE.format(old="old:1", new="new:1"))
    entries = load_recipe(path).smoke
    assert [s.name for s in smoke.specs_from_recipe(entries, ["current"])] == ["new-runtime"]
    with pytest.raises(UsageError, match=r"cannot fill the image 'rocm/vllm:rocm\{rocm\}'"):
        smoke.specs_from_recipe(entries, [])
    specs = smoke.specs_from_recipe(entries, [], values=smoke.job_values({"job": {"rocm": "7.2"}}))
    assert [s.image for s in specs] == ["old:1", "new:1", "rocm/vllm:rocm7.2"]
    assert specs[2].needs_gpu and not specs[0].needs_gpu
    with pytest.raises(UsageError, match="no smoke test of the recipe has label"):
        smoke.specs_from_recipe(entries, ["nope"])


@pytest.mark.docker
def test_cli_recipe_labels_and_gate_cli(
    bookworm: str, trixie: str, glibc238_wheel: Path, tmp_path: Path
) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(RECIPE.format(old=bookworm, new=trixie))
    wheel = tmp_path / glibc238_wheel.name
    shutil.copyfile(glibc238_wheel, wheel)
    manifest.write(wheel, {"job": {"rocm": "7.2", "python": "3.13"}, "verdict": {"passed": True}})
    run = [sys.executable, "-m", "buildkit", "smoke", str(wheel), "--recipe", str(recipe)]
    current = subprocess.run([*run, "--label", "current"], capture_output=True, text=True, check=False)
    assert current.returncode == 0, current.stdout + current.stderr
    assert "PASSED  new-runtime" in current.stdout and "old-runtime" not in current.stdout
    # all entries: the gpu one is skipped with its reason (no /dev/kfd here), the bookworm one fails
    everything = subprocess.run(run, capture_output=True, text=True, check=False)
    if smoke.gpu_access() is None:
        assert "SKIPPED on-device in rocm/vllm:rocm7.2" in everything.stdout  # filled from the manifest
        assert "skipped: needs a GPU" in everything.stdout
    assert everything.returncode == 11
    assert "FAILED  old-runtime" in everything.stdout and "GLIBC_2.38 not found" in everything.stdout
    # `buildkit check` with bookworm's ceilings agrees (exit 7), with trixie's it has no ceiling finding
    check = [sys.executable, "-m", "buildkit", "check", str(glibc238_wheel)]
    gate_old = subprocess.run([*check, "--max-glibc", "2.36", "--max-glibcxx", "3.4.30"], capture_output=True,
                              text=True, check=False)  # fmt: skip
    assert gate_old.returncode == 7, gate_old.stdout + gate_old.stderr
    assert "GLIBC_2.38" in gate_old.stdout + gate_old.stderr


@pytest.mark.docker
def test_dependencies_from_an_index_with_the_host_ca_bundle(
    docker_client: Any, trixie: str, tmp_path: Path
) -> None:
    """--index-url: the container gets network and the host's CA bundle (PIP_CERT); six comes from PyPI."""
    wheel = write_wheel(
        tmp_path / "usesix-1.0-py3-none-any.whl", {"usesix/__init__.py": b"import six\n"}, requires=("six",)
    )
    spec = smoke.SmokeSpec("index", trixie, imports=("usesix",), commands=('test -n "$PIP_CERT"',))
    result = smoke.run_smoke(wheel, spec, client=docker_client, index_url="https://pypi.org/simple/")
    assert result.status == "passed", result.reason + "".join(s.output for s in result.steps)


@pytest.mark.docker
def test_an_image_without_python_fails_setup_with_the_reason(docker_client: Any, tmp_path: Path) -> None:
    docker_client.images.get("debian:bookworm-slim")  # seeded minbase: no python3 in it
    wheel = write_wheel(tmp_path / "plain-1.0-py3-none-any.whl", {"plain/__init__.py": b""})
    spec = smoke.SmokeSpec("nopython", "debian:bookworm-slim", imports=("plain",))
    result = smoke.run_smoke(wheel, spec, client=docker_client)
    assert result.status == "failed"
    assert result.reason == "the runtime image has no usable python3 with venv or pip"
    assert [s.kind for s in result.steps] == ["setup", "setup"]
    assert _containers_of(docker_client, "nopython") == []


# --------------------------------------------------------------------------- refused before any container
def _smoke_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", "smoke", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_a_text_file_named_like_a_wheel_exits_6_before_any_container(tmp_path: Path) -> None:
    fake = tmp_path / "fake-1.0-py3-none-any.whl"
    fake.write_text("not a zip\n")
    proc = _smoke_cli(str(fake), "--image", "debian:trixie-slim")
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert "not a readable wheel" in proc.stderr and "Traceback" not in proc.stderr
    # the container would be labelled cli; check_wheel runs first, so nothing reached the engine
    with_imports = _smoke_cli(str(fake), "--image", "no-such-image:never", "--import", "fake")
    assert with_imports.returncode == 6, with_imports.stdout + with_imports.stderr


def test_usage_errors_for_timeout_and_empty_image(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path / "plain-1.0-py3-none-any.whl", {"plain/__init__.py": b""})
    for value in ("-1", "0"):
        proc = _smoke_cli(str(wheel), "--image", "debian:trixie-slim", "--timeout", value)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "--timeout" in proc.stderr and "python3" not in proc.stderr
    empty = _smoke_cli(str(wheel), "--image", "")
    assert empty.returncode == 2, empty.stdout + empty.stderr
    assert "--image: empty image name" in empty.stderr
    with pytest.raises(UsageError, match="at least 1 second"):
        smoke.run_smoke(wheel, smoke.SmokeSpec("t", "x"), client=None, timeout=0)


@pytest.mark.docker
def test_an_image_without_tmp(docker_client: Any, trixie: str, tmp_path: Path) -> None:
    """put_archive goes to / (every image has it); pip gets TMPDIR=/bk-smoke/tmp when /tmp is missing."""
    dockerfile = f"FROM {trixie}\nRUN rm -rf /tmp\n"
    tag = f"rocm-buildkit-test/runtime-notmp:{hashlib.sha256(dockerfile.encode()).hexdigest()[:12]}"
    try:
        docker_client.images.get(tag)
    except Exception:
        docker_client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, forcerm=True)
    wheel = write_wheel(tmp_path / "plain-1.0-py3-none-any.whl", {"plain/__init__.py": b"X = 1\n"})
    spec = smoke.SmokeSpec("notmp", tag, imports=("plain",), commands=("test ! -e /tmp", 'test -n "$TMPDIR"'))
    result = smoke.run_smoke(wheel, spec, client=docker_client)
    assert result.status == "passed", result.reason + "".join(s.output for s in result.steps)
    assert _containers_of(docker_client, "notmp") == []
