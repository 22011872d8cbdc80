"""A real third-party HIP project, end to end on the Debian builder: CuPy 13.6.0 from its PyPI sdist
(recipes/cupy.yaml, documented recipe keys only), built by its own setuptools/Cython/hipcc build with
seven ROCm libraries from Debian trixie (image.packages), gated, and smoke-imported in Debian's runtime
image extended with those libraries (smoke packages).

This is the longest test of the suite (one full CuPy build, about 16 minutes on 2 cores, plus the
packages layers); it prints its timings and the wheel's facts for the record. The smoke step installs
CuPy's dependencies (numpy, fastrlock) from a wheelhouse pinned by sha256 below, without network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "cupy.yaml"
JOB = "cp313-rocm5.7"
#: CuPy's run-time dependencies for the smoke test, pinned by version and sha256
SMOKE_REQUIREMENTS = """\
numpy==2.3.5 --hash=sha256:11e06aa0af8c0f05104d56450d6093ee639e15f24ecf62d417329d06e522e017
fastrlock==0.8.3 --hash=sha256:dbdea6deeccea1917c6017d353987231c4e46c93d5338ca3e66d6cd88fbce259
"""
#: the ROCm libraries (Debian trixie's SONAMEs) CuPy's HIP build links, besides libamdhip64.so.5
ROCM_LIBRARIES = {
    "libhipblas.so.0",
    "librocblas.so.0",
    "librocsolver.so.0",
    "libhipsparse.so.0",
    "libhiprand.so.1",
    "libhipfft.so.0",
    "libroctx64.so.4",
}


def _buildkit(*args: str, cwd: Path, timeout: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def smoke_wheelhouse() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rocm-buildkit" / "smoke-cupy"
    cache.mkdir(parents=True, exist_ok=True)
    requirements = cache / "requirements.txt"
    requirements.write_text(SMOKE_REQUIREMENTS)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--disable-pip-version-check",
            "--no-deps",
            "--require-hashes",
            "--only-binary=:all:",
            "--python-version",
            "3.13",
            "--implementation",
            "cp",
            "--platform",
            "manylinux_2_28_x86_64",
            "-r",
            str(requirements),
            "-d",
            str(cache),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return cache


def test_cupy_from_its_sdist_is_built_gated_and_imported(
    tmp_path: Path, debian_rocm_image: Any, smoke_wheelhouse: Path
) -> None:
    start = time.monotonic()
    built = _buildkit("build", str(RECIPE), "--out", "dist", "--log-dir", "logs", cwd=tmp_path, timeout=4800)
    build_seconds = time.monotonic() - start
    log = tmp_path / "logs" / f"{JOB}.log"
    tail = log.read_text(errors="replace")[-6000:] if log.exists() else ""
    assert built.returncode == 0, built.stdout + built.stderr[-6000:] + tail
    (wheel,) = (tmp_path / "dist" / JOB).glob("cupy-13.6.0-cp313-cp313-*.whl")
    assert wheel.name.endswith("manylinux_2_41_x86_64.whl"), wheel.name
    # the project's own build ran with what the recipe exported: its arch variable, its HIP switch
    text = log.read_text(errors="replace")
    assert "HCC_AMDGPU_TARGET" in text and "CUPY_INSTALL_USE_HIP" in text

    checked = _buildkit(
        "check", str(wheel), "--recipe", str(RECIPE), "--job", JOB, "--json", cwd=tmp_path, timeout=600
    )
    assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr
    report = json.loads(checked.stdout)["wheels"][0]
    assert report["passed"] and not [f for f in report["findings"] if f["severity"] == "error"]
    needed = {lib["library"] for lib in report["libraries"]}
    assert needed >= ROCM_LIBRARIES, sorted(needed)
    assert "libamdhip64.so.5" in needed
    gfx = {target for obj in report["gfx"] for target in obj["targets"]}
    assert gfx == {"gfx90a"}, gfx
    assert len(report["gfx"]) >= 3  # cub, thrust and the random generator carry device code

    start = time.monotonic()
    smoked = _buildkit(
        "smoke",
        str(wheel),
        "--recipe",
        str(RECIPE),
        "--wheelhouse",
        str(smoke_wheelhouse),
        "--json",
        cwd=tmp_path,
        timeout=3600,
    )
    smoke_seconds = time.monotonic() - start
    assert smoked.returncode == 0, smoked.stdout + smoked.stderr
    (result,) = json.loads(smoked.stdout)["results"]
    assert result["status"] == "passed", result
    outputs = {step["kind"]: step["output"] for step in result["steps"]}
    assert "cupy 13.6.0 HIP" in outputs["command"], result
    print(
        f"\ncupy e2e: build {build_seconds:.0f} s (image layers + compile + repair + gate), smoke "
        f"{smoke_seconds:.0f} s; wheel {wheel.name} {wheel.stat().st_size / 2**20:.1f} MiB; "
        f"{len(report['gfx'])} HIP objects for {sorted(gfx)}; links {sorted(needed & ROCM_LIBRARIES)}"
    )
