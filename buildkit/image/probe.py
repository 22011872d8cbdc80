"""The builder contract, probed: what an image must have before a build runs in it (the list:
docs/REFERENCE.md, exit code 14).

An image that lacks one piece fails minutes into a build with an error that names something else
(or builds a wheel without its device code), so one throwaway container with no network runs
``probe.sh`` (:func:`probe_script`) and :func:`check_builder` refuses the image with one message
listing every gap. Why some pieces: auditwheel >= :data:`MIN_AUDITWHEEL` is the first whose
``--exclude`` takes globs (an older one takes ``libamdhip64.so*`` literally and grafts the ROCm
runtime into the wheel); hipcc's clang must select a GCC of ``g++``'s major version, else host code
is compiled against other C++ headers than the one the wheel links. A profile's image is also
probed for its contract (:mod:`buildkit.image.contract`).

A passing probe is remembered per (image id, contract) in ``~/.cache/rocm-buildkit/probe/``: an
image id names immutable content, so it is probed once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from buildkit.docker_engine import ENGINE_ERRORS, engine_failed, throwaway
from buildkit.errors import BuilderContractError
from buildkit.fsutil import atomic_write, cache_home
from buildkit.image.contract import ImageContract, Piece

#: auditwheel 6.2.0 added globs to ``repair --exclude`` (pypa/auditwheel#508)
MIN_AUDITWHEEL = "6.2.0"
UTILITY_PYTHON = "cp39-cp39"  # cibuildwheel's utility interpreter (oci_container.UTILITY_PYTHON)
PROBE_TIMEOUT = 300
_FRONTENDS_NEEDING_UV = frozenset({"build[uv]", "uv"})

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Contract:
    """What the jobs that use one image need from it."""

    pythons: tuple[str, ...]  # the folders of /opt/python: cp313-cp313
    archs: tuple[str, ...]  # target ids: gfx90a, gfx942:xnack-
    needs_uv: bool = False
    #: a profile's image: its ROCm pieces (:func:`buildkit.image.contract.image_contract`)
    image: ImageContract | None = None

    @classmethod
    def of(
        cls,
        cp_tags: Iterable[str],
        archs: Iterable[str],
        frontend: str = "build",
        image: ImageContract | None = None,
    ) -> Contract:
        """The contract of jobs building for ``cp_tags`` (``cp313``: the interpreter is
        ``/opt/python/cp313-cp313``, as in the manylinux images), ``archs`` and ``frontend``, in an
        image that must also hold ``image``'s pieces."""
        return cls(
            pythons=tuple(sorted({tag if "-" in tag else f"{tag}-{tag}" for tag in cp_tags})),
            archs=tuple(sorted(set(archs))),
            needs_uv=frontend in _FRONTENDS_NEEDING_UV,
            image=image,
        )

    def pieces(self, kind: str) -> tuple[Piece, ...]:
        return tuple(p for p in (self.image.pieces if self.image else ()) if p.kind == kind)

    def digest(self) -> str:
        doc: dict[str, object] = {
            "pythons": self.pythons,
            "archs": self.archs,
            "uv": self.needs_uv,
            "aw": MIN_AUDITWHEEL,
        }
        if self.image is not None:
            doc["image"] = [[p.kind, p.name, p.package] for p in self.image.pieces] + [
                list(self.image.libdirs)
            ]
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


def probe_environment(contract: Contract) -> dict[str, str]:
    """The inputs of ``probe.sh`` (beside this module) for ``contract``."""
    return {
        "PROBE_PYTHONS": " ".join((*contract.pythons, UTILITY_PYTHON)),
        "PROBE_ARCHS": " ".join(contract.archs),
        "PROBE_UV": "1" if contract.needs_uv else "0",
        "PROBE_LIBS": " ".join(p.name for p in contract.pieces("library")),
        "PROBE_LIBDIRS": " ".join(contract.image.libdirs if contract.image else ()),
    }


def probe_script() -> str:
    """The probe (``buildkit/image/probe.sh``): one ``<check>\t<ok|missing|bad>\t<detail>`` line
    per check."""
    return resources.files("buildkit.image").joinpath("probe.sh").read_text(encoding="utf-8")


def parse_probe(output: str) -> dict[str, tuple[str, str]]:
    """``check -> (status, detail)`` of a probe's output."""
    found: dict[str, tuple[str, str]] = {}
    for line in output.splitlines():
        parts = line.split("\t")
        if len(parts) == 3:
            found[parts[0]] = (parts[1], parts[2].strip())
    return found


def _version_in(text: str) -> Version | None:
    for word in text.replace(",", " ").split():
        try:
            return Version(word)
        except InvalidVersion:
            continue
    return None


def _gcc_major(path: str) -> str:
    """``/opt/rh/gcc-toolset-13/root/usr/lib/gcc/x86_64-redhat-linux/13`` -> ``13``."""
    return path.rstrip("/").rsplit("/", 1)[-1].split(".")[0]


def problems(found: dict[str, tuple[str, str]], contract: Contract) -> list[str]:
    """What the image lacks for ``contract``, one line each (empty: the image serves it)."""
    out: list[str] = []

    def status(check: str) -> tuple[str, str]:
        return found.get(check, ("missing", "(the probe did not report it)"))

    for tag in contract.pythons:
        if status(f"python:{tag}")[0] != "ok":
            out.append(f"/opt/python/{tag}/bin/python (the planned CPython {tag})")
    if status(f"python:{UTILITY_PYTHON}")[0] != "ok":
        out.append(f"/opt/python/{UTILITY_PYTHON}/bin/python (cibuildwheel's utility interpreter)")
    state, detail = status("auditwheel")
    if state != "ok":
        out.append(f"auditwheel >= {MIN_AUDITWHEEL} on PATH (repair)")
    else:
        version = _version_in(detail)
        if version is None or version < Version(MIN_AUDITWHEEL):
            out.append(
                f"auditwheel >= {MIN_AUDITWHEEL} (found {detail or 'no version'}): older releases take "
                "--exclude literally, so the ROCm runtime globs would be grafted into the wheel"
            )
    if status("patchelf")[0] != "ok":
        out.append("patchelf on PATH (auditwheel repair needs it)")
    platform = status("hip-platform")[1]
    if platform not in ("", "amd"):
        out.append(f"HIP_PLATFORM=amd (the image sets HIP_PLATFORM={platform})")
    if status("hipcc")[0] != "ok":
        named = "".join(f" ({p.name}: install {p.package})" for p in contract.pieces("compiler"))
        out.append(f"a HIP compiler: hipcc on PATH or in $ROCM_PATH/bin{named}")
    else:
        state, detail = status("hip-archs")
        if state != "ok":
            archs = ", ".join(contract.archs)
            out.append(f"a hipcc that compiles for every planned arch ({archs}): {detail or 'it failed'}")
        gcc, gxx = status("hipcc-gcc")[1], status("gxx")
        if gxx[0] == "ok" and not gcc:
            out.append(
                f"hipcc's clang to find the GCC of g++ {gxx[1]} (it selected no GCC installation): "
                "point it there with --gcc-install-dir in a clang config file"
            )
        elif gcc and gxx[0] == "ok" and _gcc_major(gcc) != gxx[1].split(".")[0]:
            out.append(
                f"hipcc's clang to use the GCC of g++ {gxx[1]} (it selected {gcc}): host code would "
                "be compiled against other C++ headers than the libstdc++ the wheel links"
            )
    folders = " or ".join(contract.image.libdirs) if contract.image else ""
    for piece in contract.pieces("library"):
        if status(piece.check)[0] != "ok":
            out.append(f"{piece.name} ({piece.what}) in {folders}: install {piece.package}")
    if contract.needs_uv and status("uv")[0] != "ok":
        out.append("uv on PATH (build_frontend build[uv] / uv)")
    return out


def _cache_file(image_id: str, contract: Contract) -> Path:
    key = image_id.removeprefix("sha256:")[:32]
    return cache_home() / "probe" / f"{key}-{contract.digest()}.json"


def run_probe(client: Any, image: str, contract: Contract) -> dict[str, tuple[str, str]]:
    """Run :func:`probe_script` in a throwaway container of ``image`` (no network)."""
    script = probe_script()
    env = probe_environment(contract)
    try:
        with throwaway(
            client, image, ["-c", script], purpose="probe", entrypoint=["/bin/sh"], environment=env
        ) as box:
            done = box.run(timeout=PROBE_TIMEOUT)
    except ENGINE_ERRORS as exc:
        raise engine_failed(exc, during=f"probing the builder image {image}") from None
    text = done.stdout.decode("utf-8", "replace")
    if done.exit_code != 0 and not text:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise BuilderContractError(
            f"builder image {image} cannot run the contract probe (/bin/sh, exit {done.exit_code}): "
            + " | ".join(detail)
        )
    return parse_probe(text)


def check_builder(
    client: Any, image: str, image_id: str, contract: Contract, *, progress: Progress | None = None
) -> None:
    """Refuse ``image`` unless it serves ``contract`` (as the module docstring says)."""
    cached = _cache_file(image_id, contract)
    if cached.is_file():
        return
    if progress:
        archs = ", ".join(contract.archs)
        progress(f"probing {image} for the builder contract ({', '.join(contract.pythons)}; {archs})")
    gaps = problems(run_probe(client, image, contract), contract)
    if gaps:
        raise BuilderContractError(
            f"builder image {image} does not meet the builder contract; it lacks:\n"
            + "".join(f"  - {gap}\n" for gap in gaps)
            + "  hint: add them to the image (image.packages, or your Dockerfile), or use a profile "
            "of docker/profiles.toml"
        )
    cached.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(
        cached, json.dumps({"image": image, "image_id": image_id, "contract": contract.digest()}) + "\n"
    )
