"""The torch reference on the libtorch stable ABI, end to end on the ROCm 7.2 builder (issue 40):
recipes/reference-torch-stable.yaml built once against torch 2.13.0+cpu with torch's stable-only
flags, gated by ``torch-stable-abi`` (only torch's stable C shim, each function in torch 2.13), smoke-
tested under torch 2.13.0+cpu and torch 2.14.1 (the CUDA build: debian-sid-torch214-runtime); and
the same source built pinned (recipes/reference-torch.yaml) refused by the stable gate, passed by the
pinned one.

Real parts only: the debian-sid-rocm image (experimental's hipcc 7.2.4), the torch wheels of the pip
configuration, the runtime images. Each build's wall time is written to the log
(``BUILD SECONDS``): the figure of "N torch minors pinned = N builds, stable = 1".
"""

from __future__ import annotations

import re
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from buildkit.inspect import inspect_wheel
from buildkit.manifest import read as read_manifest
from tests.helpers.build_run import build_job, run_buildkit

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
STABLE = ROOT / "recipes" / "reference-torch-stable.yaml"
PINNED = ROOT / "recipes" / "reference-torch.yaml"
FLAGS = "-DTORCH_STABLE_ONLY -DTORCH_TARGET_VERSION=0x020d000000000000"


def _build(tmp: Path, recipe: Path, job: str) -> dict[str, Any]:
    start = time.monotonic()
    built = build_job(tmp, recipe, job, timeout=3600)
    seconds = time.monotonic() - start
    print(f"BUILD SECONDS {recipe.name} {job}: {seconds:.1f}")
    return {"tmp": tmp, "wheel": next((tmp / "dist" / job).glob("*.whl")), "log": built.log}


@pytest.fixture(scope="module")
def stable(tmp_path_factory: pytest.TempPathFactory, docker_client: Any) -> dict[str, Any]:
    return _build(tmp_path_factory.mktemp("torch-stable"), STABLE, "cp311-rocm7.2")


@pytest.fixture(scope="module")
def pinned(tmp_path_factory: pytest.TempPathFactory, docker_client: Any) -> dict[str, Any]:
    return _build(tmp_path_factory.mktemp("torch-pinned"), PINNED, "cp311-rocm7.2-torch2.13")


def test_the_stable_wheel_is_built_once_for_every_torch_from_2_13_and_gated_for_it(
    stable: dict[str, Any],
) -> None:
    wheel: Path = stable["wheel"]
    assert wheel.name.startswith("buildkit_refops-0.1.0+rocm7.2.manylinux.2.31-cp311-cp311-")  # no torch
    log: str = stable["log"]
    # torch's stable-only flags reached the operator's compile; the build ran against torch 2.13
    assert re.search(rf"c\+\+ .*src/ops_stable\.cpp .*{re.escape(FLAGS)}", log), log[-6000:]
    assert "src/ops.cpp" not in log
    m = re.search(
        r"torch stable ABI: declared lowest torch 2\.13: (\d+) shim function\(s\) needed, the newest from "
        r"torch 2\.1[0-3] \(\w+\); serves torch>=2\.13 \(no upper bound\)",
        log,
    )
    assert m is not None and int(m[1]) >= 20, log[-6000:]
    data = read_manifest(wheel)
    assert data["verdict"]["passed"] is True and data["torch"]["version"] == "2.13.0+cpu"
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        requires = [line for line in zf.read(meta).decode().splitlines() if line.startswith("Requires-Dist")]
    assert requires == ["Requires-Dist: torch>=2.13"]
    report = inspect_wheel(wheel)
    needed = {lib for elf in report.elves for lib in elf.needed}
    assert "libtorch_cpu.so" in needed and "libc10.so" not in needed, needed
    targets = {e.target_id for elf in report.elves for e in elf.offload_targets if e.target_id}
    assert {t.split(":")[0] for t in targets} == {"gfx90a", "gfx942", "gfx950"}


def test_check_says_which_torch_range_the_stable_wheel_serves(stable: dict[str, Any]) -> None:
    job = ("--recipe", str(STABLE), "--job", "cp311-rocm7.2")
    out = run_buildkit("check", str(stable["wheel"]), *job, "-v", cwd=stable["tmp"])
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "serves torch>=2.13 (no upper bound)" in out.stdout
    # declared from 2.10, the same wheel is refused: built targeting 2.13, the stable headers' error
    # handling calls torch_exception_get_what, which appeared in torch 2.13
    older = run_buildkit("check", str(stable["wheel"]), *job, "--torch-stable", "2.10", cwd=stable["tmp"])
    assert older.returncode != 0
    assert "torch_exception_get_what from torch" in older.stdout and "appeared in torch 2.13" in older.stdout


@pytest.mark.parametrize(("label", "version"), [("torch213", "2.13.0+cpu"), ("torch214", "2.14.1+cu130")])
def test_the_stable_wheel_runs_under_torch_2_13_and_2_14(
    stable: dict[str, Any], label: str, version: str
) -> None:
    wheel, tmp = str(stable["wheel"]), stable["tmp"]
    out = run_buildkit(
        "smoke", wheel, "--recipe", str(STABLE), "--label", label, "--json", cwd=tmp, timeout=3600
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    assert f"torch {version}, refops 0.1.0, operator refops.rms_norm" in out.stdout + out.stderr


def test_the_pinned_build_of_the_same_source_passes_the_pinned_gate_and_not_the_stable_one(
    pinned: dict[str, Any],
) -> None:
    assert read_manifest(pinned["wheel"])["verdict"]["passed"] is True  # torch-pin, torch-abi
    job = ("--recipe", str(PINNED), "--job", "cp311-rocm7.2-torch2.13")
    out = run_buildkit("check", str(pinned["wheel"]), *job, "--torch-stable", "2.13", cwd=pinned["tmp"])
    assert out.returncode != 0
    refused = re.findall(r"torch-stable-abi.*?needs (c10::\S+|at::\S+|torch::\S+)", out.stdout)
    assert refused, out.stdout[-4000:]
    assert "refops/_C.cpython-311-x86_64-linux-gnu.so needs c10::" in out.stdout
    # its METADATA pins torch==2.13.*: not the range of a stable-ABI wheel
    assert "torch-pin" in out.stdout and "bounds torch from above" in out.stdout
