"""What the builder image holds for a job: its interpreter, and the toolchain versions read inside it
for the manifest."""

from __future__ import annotations

import functools
import re
import shlex
import sys
from importlib import resources
from typing import Any

from buildkit.building import provenance
from buildkit.docker_engine import throwaway
from buildkit.plan.models import Job

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


@functools.cache
def _cibuildwheel_interpreters() -> dict[str, str]:
    """cibuildwheel's own table of build identifiers and interpreter folders (``cp312-manylinux_x86_64``
    -> ``/opt/python/cp312-cp312``), read from its ``resources/build-platforms.toml``."""
    try:
        text = resources.files("cibuildwheel").joinpath("resources/build-platforms.toml").read_text("utf-8")
        configs = tomllib.loads(text)["linux"]["python_configurations"]
    except (OSError, KeyError, ValueError, ModuleNotFoundError):
        return {}
    return {
        str(c["identifier"]): str(c["path_str"]) for c in configs if "identifier" in c and "path_str" in c
    }


def job_interpreter(job: Job) -> str:
    """The Python cibuildwheel builds ``job`` with in its builder image: ``/opt/python/<cp>-<cp>``
    (``/opt/python/cp312-cp312/bin/python`` for a cp312 job). The Debian builder has only
    ``cp313-cp313`` (and ``cp39-cp39``, a link to it, as cibuildwheel's utility interpreter)."""
    home = _cibuildwheel_interpreters().get(f"{job.cp_tag}-manylinux_x86_64")
    if home is None:
        match = re.fullmatch(r"(cp\d+)t?", job.cp_tag)
        home = f"/opt/python/{match.group(1) if match else job.cp_tag}-{job.cp_tag}"
    return f"{home}/bin/python"


def toolchain_versions(
    client: Any,
    image: str,
    *,
    python: str = provenance.BUILDER_PYTHON,
    build_id: str | None = None,
) -> dict[str, str]:
    """Versions of hipcc, clang, ``python``, auditwheel, patchelf, gcc and glibc read inside the builder
    image (``build_id``: the build the container belongs to)."""
    interpreter = shlex.quote(python)
    script = (
        "echo hipcc=$(hipcc --version 2>/dev/null | grep -m1 -o 'HIP version: .*' || echo none);"
        "echo clang=$( (hipcc --version 2>/dev/null || clang --version) "
        "| grep -m1 'clang version' || echo none);"
        f"echo python=$(if [ -x {interpreter} ]; then {interpreter} --version 2>&1; else echo none; fi);"
        "echo auditwheel=$(auditwheel --version 2>&1 | head -1);"
        "echo patchelf=$(patchelf --version 2>&1 | head -1);"
        "echo gcc=$(gcc --version 2>/dev/null | head -1 || echo none);"
        "echo glibc=$(ldd --version 2>&1 | head -1)"
    )
    with throwaway(client, image, ["sh", "-c", script], purpose="build-probe", run_id=build_id) as box:
        raw = box.run(timeout=120).stdout
    out: dict[str, str] = {}
    for line in raw.decode(errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key:
            out[key.strip()] = value.strip()
    return out
