"""The torch axis on the ROCm 7.2 builder: recipes/reference-torch.yaml end to end.

Real parts only: the debian-sid-rocm image for ROCm 7.2 (experimental's hipcc 7.2.4 on clang 22, and
bookworm's CPython 3.11 beside sid's), torch 2.13.0+cpu resolved on the host with the pip
configuration and locked by sha256 (the only torch wheel reachable here that imports without CUDA
libraries: no ROCm build of torch is reachable), the glibc2.31 sysroot for the operator's C++ (C++20
against torch's headers with GCC 10's libstdc++), the torch-abi rule against the locked torch wheel,
and the debian-sid-torch-runtime smoke image (libamdhip64.so.7, torch 2.13.0+cpu).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from buildkit.inspect import inspect_wheel
from buildkit.manifest import read as read_manifest
from buildkit.policy import version_tuple

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "reference-torch.yaml"
JOB = "cp311-rocm7.2-torch2.13"


def _buildkit(*args: str, cwd: Path, timeout: int = 2400) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, docker_client: Any) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("torch-rocm72")
    proc = _buildkit(
        "build", str(RECIPE), "--out", str(tmp / "dist"), "--log-dir", str(tmp / "logs"), cwd=tmp
    )
    log = tmp / "logs" / f"{JOB}.log"
    assert proc.returncode == 0, (
        proc.stdout[-3000:] + proc.stderr[-3000:] + (log.read_text()[-6000:] if log.exists() else "")
    )
    wheel = next((tmp / "dist" / JOB).glob("*.whl"))
    return {"tmp": tmp, "wheel": wheel, "log": log}


def test_the_extension_is_gated_against_the_locked_torch(built: dict[str, Any]) -> None:
    """torch-abi ran in the build's gate against the locked torch wheel: every symbol the operator
    needs from libtorch_cpu/libc10 is exported by it; the manifest names that wheel and the sysroot."""
    log = built["log"].read_text(encoding="utf-8", errors="replace")
    m = re.search(
        r"torch ABI: checked against torch 2\.13\.0\+cpu "
        r"\(torch-2\.13\.0\+cpu-cp311-cp311-manylinux_2_28_x86_64\.whl\): "
        r"(\d+) symbol\(s\) needed from torch, (\d+) exported",
        log,
    )
    assert m is not None and int(m[1]) == int(m[2]) >= 10, log[-6000:]
    data = read_manifest(built["wheel"])
    assert data["torch"]["version"] == "2.13.0+cpu" and data["job"]["sysroot"] == "glibc2.31"
    assert data["verdict"]["passed"] is True


def test_the_wheel_links_hip_7_and_torch_within_the_ceilings(built: dict[str, Any]) -> None:
    wheel: Path = built["wheel"]
    assert wheel.name.startswith("buildkit_refops-0.1.0+rocm7.2.torch2.13.manylinux.2.31-cp311-cp311-")
    report = inspect_wheel(wheel)
    needed = {lib for elf in report.elves for lib in elf.needed}
    assert {"libamdhip64.so.7", "libtorch_cpu.so", "libc10.so"} <= needed, needed
    assert not any(m.endswith((".so.7", "libtorch_cpu.so")) for m in report.members)  # nothing grafted
    limits = {"GLIBC": (2, 31), "GLIBCXX": (3, 4, 28), "CXXABI": (1, 3, 12)}
    for elf in report.elves:
        for versions in elf.version_needs.values():
            for version in versions:
                prefix, _, number = version.partition("_")
                if prefix in limits:
                    assert (version_tuple(number) or ()) <= limits[prefix], (elf.member, version)
    targets = {e.target_id for elf in report.elves for e in elf.offload_targets if e.target_id}
    assert {t.split(":")[0] for t in targets} == {"gfx90a", "gfx942", "gfx950"}


def test_smoke_after_torch_in_the_7_2_torch_runtime(built: dict[str, Any]) -> None:
    out = _buildkit("smoke", str(built["wheel"]), "--recipe", str(RECIPE), cwd=built["tmp"], timeout=1200)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
