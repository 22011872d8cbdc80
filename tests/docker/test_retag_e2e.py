"""A setuptools project declared ``wheel: {abi: py3-none}`` (issue 39, part 2), on the real engine.

tests/data/pyindep/ctypes-setuptools: the ctypes-style library of ctypes.yaml (host C and HIP device code
for gfx942, built by hipcc through the glibc2.28 sysroot) packaged by plain setuptools, which tags a
wheel carrying a binary ``cp313-cp313``. The build retags it ``py3-none`` (no member exports
``PyInit_*``), the gate passes the one wheel, and the smoke command the summary prints passes under each
of the three CPythons it serves in the 7.2 runtime image. Before, the gate refused it: "expected
py3-none ... found cp313-cp313", with a hint setuptools could not follow.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from buildkit.inspect import inspect_wheel
from buildkit.manifest import read as read_manifest

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "tests" / "data" / "pyindep" / "ctypes-setuptools.yaml"


def test_a_setuptools_ctypes_wheel_is_retagged_py3_none_gated_and_smoked_under_three_pythons(
    docker_client: Any, tmp_path: Path
) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "buildkit", "build", str(RECIPE), "--out", "dist", "--log-dir", "logs"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-4000:]
    (wheel,) = (tmp_path / "dist").glob("*/*.whl")
    assert wheel.name.startswith("buildkit_ctypesdemo-0.1.0-py3-none-"), wheel.name
    assert "manylinux_2_28_x86_64" in wheel.name.split("-")[-1], wheel.name  # with auditwheel's aliases
    assert {t.split("-", 2)[0] + "-" + t.split("-", 2)[1] for t in inspect_wheel(wheel).tags} == {"py3-none"}
    (log,) = (tmp_path / "logs").glob("*.log")
    assert "retagged cp313-cp313 -> py3-none" in log.read_text()
    manifest = read_manifest(wheel)
    assert manifest["verdict"]["passed"] is True and manifest["job"]["wheel_tag"] == "py3-none"
    (line,) = [x.strip() for x in built.stdout.splitlines() if x.strip().startswith("buildkit smoke ")]
    smoke = subprocess.run(
        [sys.executable, "-m", "buildkit", *shlex.split(line)[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert smoke.returncode == 0, smoke.stdout[-4000:] + smoke.stderr[-4000:]
    passed = [x for x in smoke.stdout.splitlines() if x.startswith("PASSED ")]
    for python in ("3.13", "3.14", "3.15"):
        assert any(f"(CPython {python}) in " in x for x in passed), smoke.stdout
