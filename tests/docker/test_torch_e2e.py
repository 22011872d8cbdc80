"""The bookworm torch recipe end to end on the real engine (recipes/reference-torch-bookworm.yaml): one
build of the torch extension csrc/refops on the bookworm builder (Python 3.11, Debian's hipcc 5.2.3 /
clang 15)
against torch 2.13.0+cpu from the host-resolved, hash-locked wheelhouse, in a container without network;
then, reusing that build: `check`, `smoke` in the torch runtime image (the operator run on CPU tensors
and compared with torch), the refops tests in that image, `verify` (a byte-identical rebuild) and
`publish` to a local PEP 503 tree.

No AMD GPU here: the HIP kernel's code objects are built and inspected, never run; the CPU path runs.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from buildkit import image as images
from buildkit.docker_engine import throwaway
from buildkit.inspect import inspect_wheel
from buildkit.manifest import read as read_manifest
from buildkit.manifest import sha256_file
from tests.helpers.torch_ext import TORCH_2_14_1, torch_wheel
from tests.helpers.wheels_for_publish import signing_environment

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module", autouse=True)
def signing_keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The builds sign their attestations and publish trusts that key: ``publish --to`` runs the gate
    again with the configuration they sign (a publish trusts no unsigned manifest)."""
    with pytest.MonkeyPatch.context() as patch:
        signing_environment(patch, tmp_path_factory.mktemp("keys"))
        yield


ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "reference-torch-bookworm.yaml"
JOB = "cp311-rocm5.2-torch2.13"
#: auditwheel adds manylinux_2_34 beside the requested 2_36: the symbols allow it
WHEEL = (
    "buildkit_refops-0.1.0+rocm5.2.torch2.13.manylinux.2.36-cp311-cp311-"
    "manylinux_2_34_x86_64.manylinux_2_36_x86_64.whl"
)
EXTENSION = "refops/_C.cpython-311-x86_64-linux-gnu.so"


def _buildkit(*args: str, cwd: Path, timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # the tree under test, whatever is installed
    )


@pytest.fixture(scope="module")
def runtime_image(docker_client: Any) -> str:
    """The debian-torch-runtime image (built once, then reused by its content tag)."""
    try:
        docker_client.images.get("debian:bookworm-slim")
    except Exception:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but debian:bookworm-slim is missing (ci/install-docker.sh seeds it)")
        pytest.skip("base image debian:bookworm-slim missing: run `buildkit image seed debian:bookworm-slim`")
    return images.ensure_image(
        images.get_profile("debian-torch-runtime"), client=docker_client, progress=print
    ).tag


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, runtime_image: str) -> dict[str, Any]:
    """One build of the torch recipe (the builder image is made or reused by `buildkit build`)."""
    tmp = tmp_path_factory.mktemp("torch-e2e")
    t0 = time.monotonic()
    proc = _buildkit(
        "build", str(RECIPE), "--out", str(tmp / "dist"), "--log-dir", str(tmp / "logs"), cwd=tmp
    )
    seconds = time.monotonic() - t0
    log = tmp / "logs" / f"{JOB}.log"
    assert proc.returncode == 0, proc.stdout + proc.stderr + (log.read_text()[-6000:] if log.exists() else "")
    wheel = tmp / "dist" / JOB / WHEEL
    assert wheel.is_file(), sorted(p.name for p in (tmp / "dist").rglob("*"))
    print(f"torch wheel built in {seconds:.0f}s: {wheel.name} ({wheel.stat().st_size} bytes)")
    return {"tmp": tmp, "wheel": wheel, "log": log, "runtime": runtime_image}


def test_the_build_installs_the_locked_torch_offline_and_records_it(built: dict[str, Any]) -> None:
    wheel: Path = built["wheel"]
    data = read_manifest(wheel)
    assert data["network"] is False and data["image"]["profile"] == "debian-bookworm-rocm"
    files = {f["name"]: f for f in data["build_requirements"]["files"]}
    torch = data["torch"]
    assert torch["requirement"] == "torch==2.13.*" and torch["index_url"] is None
    assert torch["version"] == "2.13.0+cpu"
    assert torch["file"] == "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert re.fullmatch(r"[0-9a-f]{64}", torch["sha256"]) and files["torch"]["sha256"] == torch["sha256"]
    assert {"setuptools", "torch", "sympy", "filelock"} <= set(files)
    lock = wheel.with_name(wheel.name + ".requirements.lock").read_text(encoding="utf-8")
    assert f"torch==2.13.0+cpu --hash=sha256:{torch['sha256']}" in lock.splitlines()
    log = built["log"].read_text(encoding="utf-8", errors="replace")
    # the host downloaded that file into the staged wheelhouse, the only index of a container without
    # network, whose isolated build environment installed torch==2.13.* from it
    saved = r"^Saved \S+/\.buildkit/wheelhouse/torch-2\.13\.0\+cpu-cp311-cp311-manylinux_2_28_x86_64\.whl$"
    assert re.search(saved, log, re.M)
    assert "--network=none" in log and 'PIP_NO_INDEX="1"' in log
    isolated = r"Installing packages in isolated environment:\n  - setuptools>=77\n  - torch==2\.13\.\*"
    assert re.search(isolated, log)


def test_the_builds_gate_checked_the_torch_abi_against_the_locked_torch(built: dict[str, Any]) -> None:
    """``build`` gates a hermetic torch job with the torch-abi rule against the torch wheel of its
    lock (the file its build environment installed): every symbol needed from torch is exported."""
    log = built["log"].read_text(encoding="utf-8", errors="replace")
    m = re.search(
        r"torch ABI: checked against torch 2\.13\.0\+cpu "
        r"\(torch-2\.13\.0\+cpu-cp311-cp311-manylinux_2_28_x86_64\.whl\): "
        r"(\d+) symbol\(s\) needed from torch, (\d+) exported",
        log,
    )
    assert m is not None and int(m[1]) == int(m[2]) >= 10, log[-6000:]
    verdict = read_manifest(built["wheel"])["verdict"]
    assert verdict["passed"] is True and not [f for f in verdict["findings"] if f["rule"] == "torch-abi"]
    print(f"build gate: {m[1]} symbols needed from torch, {m[2]} exported by the locked torch")


def test_the_wheel_passes_check_links_torch_and_hip_and_grafts_neither(built: dict[str, Any]) -> None:
    wheel: Path = built["wheel"]
    proc = _buildkit("check", str(wheel), "--recipe", str(RECIPE), "--job", JOB, "--json", cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["passed"] is True and len(report["wheels"]) == 1, proc.stdout[:4000]
    inspected = inspect_wheel(wheel)
    members = list(inspected.members)
    assert "Requires-Dist: torch==2.13.*" in [f"Requires-Dist: {r}" for r in inspected.metadata_requires]
    assert not [n for n in members if re.search(r"(^|/)(libtorch|libc10|libamdhip64|libgomp)[^/]*\.so", n)], (
        members
    )
    assert not [n for n in members if ".libs/" in n], members  # auditwheel grafted nothing
    elf = next(e for e in inspected.elves if e.member == EXTENSION)
    assert {"libtorch_cpu.so", "libc10.so", "libamdhip64.so.5"} <= set(elf.needed), elf.needed
    assert not elf.rpath and not elf.runpath
    per_arch: dict[str, int] = {}  # the offload bundle's device entries (.hip_fatbin), per processor
    for entry in elf.offload_targets:
        if entry.gfx is not None:
            per_arch[entry.gfx] = per_arch.get(entry.gfx, 0) + 1
    assert per_arch == {"gfx908": 1, "gfx90a": 1}, per_arch  # one translation unit of device code
    assert elf.offload_bundles == 1
    print(f"DT_NEEDED {list(elf.needed)}; code objects per arch {per_arch}")


def _torch_abi_counts(wheel: Path, torch: str, checked: str) -> tuple[int, int]:
    """``check --recipe --job --torch-abi TORCH`` of the torch wheel: it passes, and its ``torch ABI:``
    line (``checked``: the torch it names, a regex) gives (needed from torch, exported)."""
    proc = _buildkit(
        "check", str(wheel), "--recipe", str(RECIPE), "--job", JOB, "--torch-abi", torch, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = re.search(
        rf"torch ABI: checked against torch {checked}: (\d+) symbol\(s\) needed from torch, (\d+) exported",
        proc.stdout,
    )
    assert m is not None, proc.stdout
    return int(m[1]), int(m[2])


def test_the_symbols_it_needs_from_torch_are_the_runtime_images_torch(built: dict[str, Any]) -> None:
    """The torch-abi rule against the torch the smoke image's Python finds (2.13.0+cpu): every symbol
    the extension needs from libtorch_cpu/libc10 (TORCH_CHECK's torchCheckFail, c10::Device's
    printer, at::empty_like, at::parallel_for's internals, the dispatcher's registration) is exported."""
    needed, exported = _torch_abi_counts(built["wheel"], built["runtime"], r"2\.13\.0\+cpu .*")
    assert needed == exported >= 10


def test_the_wheel_against_another_torch_2_14_1(built: dict[str, Any]) -> None:
    """The evidence of issue 13 against a torch it was not built with: torch 2.14.1 (a CUDA 13.0
    build, pinned by sha256 in tests/helpers/torch_ext.py). Measured: all 40 symbols refops needs from
    torch are exported by 2.14.1 too (the failing cases, a torch that lacks one, are
    tests/integration/test_torch_abi.py's); its METADATA still admits only torch 2.13.*."""
    other = torch_wheel(TORCH_2_14_1)
    checked = r"2\.14\.1\+cu130 \(torch-2\.14\.1-cp311-cp311-manylinux_2_28_x86_64\.whl\)"
    needed, exported = _torch_abi_counts(built["wheel"], str(other), checked)
    assert needed == exported >= 10
    print(f"against torch 2.14.1+cu130: {needed} needed, {exported} exported, 0 missing")


def test_smoke_runs_the_operator_in_the_torch_runtime_image(built: dict[str, Any]) -> None:
    proc = _buildkit("smoke", str(built["wheel"]), "--recipe", str(RECIPE), "--json", cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json.loads(proc.stdout)["results"]
    assert (result["name"], result["status"]) == ("torch-cpu-bookworm", "passed"), result
    assert result["image"].startswith("rocm-buildkit/debian-torch-runtime:")
    steps = {(s["kind"], s["what"]): s for s in result["steps"]}
    assert steps[("import", "torch")]["passed"] and steps[("import", "refops")]["passed"]
    selftest = steps[("command", "python -m refops.selftest")]
    # every case against pure torch, and the TORCH_CHECK refusals, on CPU tensors
    assert selftest["output"].startswith("torch 2.13.0+cpu, refops 0.1.0"), selftest["output"]
    assert "11 passed, 0 failed" in selftest["output"].splitlines(), selftest["output"]


def test_the_refops_tests_pass_in_the_runtime_image(built: dict[str, Any], docker_client: Any) -> None:
    """csrc/refops/tests (unittest: the runtime image has no pytest) against the installed wheel."""
    wheel: Path = built["wheel"]
    payload = io.BytesIO()
    with tarfile.open(fileobj=payload, mode="w") as tar:
        tar.add(wheel, arcname=f"refops-tests/{wheel.name}")
        tar.add(ROOT / "csrc" / "refops" / "tests" / "test_ops.py", arcname="refops-tests/tests/test_ops.py")
    script = (
        "set -e; cd /refops-tests; python3 -m venv --system-site-packages venv; "
        f"venv/bin/python -m pip install -q --no-index {wheel.name}; "
        "cd tests; ../venv/bin/python -m unittest -v test_ops"
    )
    with throwaway(docker_client, built["runtime"], ["sh", "-c", script], purpose="refops-tests") as box:
        assert box.put_archive("/", payload.getvalue())
        done = box.run(timeout=600)
    out = (done.stdout + done.stderr).decode(errors="replace")
    assert done.exit_code == 0, out
    assert re.search(r"^Ran 9 tests in ", out, re.M) and re.search(r"^OK$", out, re.M), out


def test_verify_rebuilds_the_torch_wheel_byte_for_byte(built: dict[str, Any]) -> None:
    proc = _buildkit("verify", str(built["wheel"]), "--json", cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["identical"] is True, result
    assert result["rebuilt_sha256"] == result["original_sha256"] == sha256_file(built["wheel"])
    assert not any("locks no build requirements" in note for note in result["notes"]), result["notes"]


def test_publish_puts_the_torch_wheel_in_a_pep503_tree(built: dict[str, Any]) -> None:
    tmp: Path = built["tmp"]
    site = tmp / "site"
    proc = _buildkit("publish", str(tmp / "dist"), "--to", str(site), cwd=tmp)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (site / "simple" / "buildkit-refops" / "index.html").read_text(encoding="utf-8")
    sha = sha256_file(built["wheel"])
    assert f'<a href="{WHEEL}#sha256={sha}"' in page, page
    assert (site / "simple" / "buildkit-refops" / WHEEL).read_bytes() == built["wheel"].read_bytes()
    assert 'data-requires-python="&gt;=3.10"' in page
