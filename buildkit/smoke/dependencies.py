"""The wheel's dependencies the runtime image lacks (the ``deps`` step of the package's docstring; what
is downloaded: docs/REFERENCE.md, ``buildkit smoke``), copied in: the container keeps no network."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Mapping
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from buildkit.building.requirements import target_platforms
from buildkit.errors import WheelReadError
from buildkit.smoke.container import Box
from buildkit.smoke.payload import copy_wheels
from buildkit.smoke.report import OUTPUT_LIMIT, Step
from buildkit.smoke.spec import manifest_of


def wheel_requirements(wheel: Path) -> tuple[str, ...]:
    """The ``Requires-Dist`` lines of the wheel's ``.dist-info/METADATA`` (none without one)."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            meta = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            text = zf.read(meta[0]).decode("utf-8", errors="replace") if len(meta) == 1 else ""
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        raise WheelReadError(f"{wheel}: not a readable wheel (zip): {exc}") from None
    return tuple(HeaderParser().parsestr(text).get_all("Requires-Dist") or ())


def missing_requirements(
    requires: Iterable[str], python_version: str, installed: Mapping[str, str]
) -> tuple[str, ...]:
    """The requirements (markers evaluated for CPython ``python_version`` on this platform, no extra)
    that no installed distribution (canonical name -> version) satisfies, without their markers."""
    env = {"python_version": python_version, "python_full_version": f"{python_version}.0", "extra": ""}
    out = []
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue  # pip refuses the wheel at install and says why
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        have = installed.get(canonicalize_name(req.name))
        if have is not None and req.specifier.contains(have, prereleases=True):
            continue
        req.marker = None
        out.append(str(req))
    return tuple(out)


def locked_versions(manifest_data: Mapping[str, Any] | None) -> dict[str, str]:
    """name -> version of every file the build's lock names (the manifest's ``build_requirements``)."""
    lock = (manifest_data or {}).get("build_requirements") or {}
    return {
        str(f["name"]): str(f["version"]) for f in lock.get("files") or () if "name" in f and "version" in f
    }


def download_command(
    requirements: Iterable[str], python_version: str, wheel: Path, dest: Path, constraints: Path | None
) -> list[str]:
    """``pip download`` of ``requirements`` with their dependencies, wheels only, for CPython
    ``python_version`` and the wheel's manylinux platform down to manylinux2014 (the host's platform
    for a wheel without one), with the user's pip configuration."""
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--progress-bar", "off"]
    cmd += ["--only-binary=:all:", "--python-version", python_version, "--implementation", "cp"]
    cmd += ["--abi", f"cp{python_version.replace('.', '')}"]
    platforms = sorted(
        {t.platform for t in parse_wheel_filename(wheel.name)[3] if t.platform.startswith("manylinux")}
    )
    if platforms:
        for tag in target_platforms(platforms[-1]):
            cmd += ["--platform", tag]
    if constraints is not None:
        cmd += ["--constraint", str(constraints)]
    return [*cmd, "--dest", str(dest), *requirements]


def fetch_dependencies(
    box: Box, py: str, wheel: Path, timeout: int, progress: Callable[[str], None]
) -> Step | None:
    """The wheel's dependencies the image lacks downloaded on the host and copied into the container's
    wheelhouse; the ``deps`` step (None when there was nothing to download)."""
    with tempfile.TemporaryDirectory(prefix="buildkit-smoke-deps-") as tmp:
        deps, files = _download(box, py, wheel, Path(tmp), timeout)
        if deps is not None:
            progress(f"deps: {deps.outcome()}")
        if files:
            copy_wheels(box.container, files)
    return deps


def _installed(box: Box, py: str) -> tuple[str, dict[str, str]] | Step:
    """The container's CPython (``3.13``) and its installed distributions (canonical name ->
    version); the failed step when either cannot be read."""
    version = box.run(
        "deps", "the runtime Python", [py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]
    )
    listing = box.run("deps", "pip list", [py, "-m", "pip", "list", "--format=json"])
    if not version.passed or not listing.passed:
        failed = version if not version.passed else listing
        return Step("deps", f"reading the runtime's Python: {failed.what}", failed.exit_code, failed.output)
    try:
        rows = json.loads(listing.output.strip().splitlines()[-1])
        installed: dict[str, str] = {canonicalize_name(str(r["name"])): str(r["version"]) for r in rows}
    except (ValueError, KeyError, IndexError, TypeError):
        installed = {}
    return version.output.strip().splitlines()[-1], installed


def _download(box: Box, py: str, wheel: Path, work: Path, timeout: int) -> tuple[Step | None, list[Path]]:
    """The dependencies the image lacks, downloaded into ``work`` (None and no file when there are none)."""
    requires = wheel_requirements(wheel)
    if not requires:
        return None, []
    found = _installed(box, py)
    if isinstance(found, Step):
        return found, []
    python_version, installed = found
    missing = missing_requirements(requires, python_version, installed)
    if not missing:
        return None, []
    pins = locked_versions(manifest_of(wheel))
    constraints = None
    if pins:
        constraints = work / "build-lock-constraints.txt"
        constraints.write_text("".join(f"{n}=={v}\n" for n, v in sorted(pins.items())), encoding="utf-8")
    dest = work / "wheelhouse"
    dest.mkdir()
    cmd = download_command(missing, python_version, wheel, dest, constraints)
    what = f"pip download on the host (CPython {python_version}): {' '.join(missing)}"
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, errors="replace", timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Step("deps", what, 1, str(exc)), []
    output = (proc.stdout + proc.stderr)[-OUTPUT_LIMIT:]
    return Step("deps", what, proc.returncode, output), sorted(dest.glob("*.whl"))
