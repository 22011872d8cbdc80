"""``buildkit check --exclude-set rocm --rocm 10.0`` on AMD's own ROCm 10.0 wheel (issue 39, part 4).

rocm-bindings-compiler 10.0.0.0.1.2 (PyPI, built by AMD on RHEL 8, 48 MiB) carries ROCm's LLVM as
``rocm/bindings/llvm/libLLVM.so`` (134 MB), which needs ``librocm_sysdeps_z.so.1`` and
``librocm_sysdeps_zstd.so.1``: TheRock's own zlib and zstd, found through RUNPATH
``/opt/rocm/lib/rocm_sysdeps/lib`` in the ROCm install, never in a wheel. With 7.14 and 10.0 in the data,
the ``rocm`` set excludes them and the wheel passes, with the two real findings left as warnings: its
RUNPATH points at a system ROCm install outside the wheel. Under 7.2 (the legacy stream, which has no
sysdeps) the same check still refuses them. The wheel's LLVM version is the one releases.yaml records
as read from it.

Real artifact, no mock: fetched once per machine, pinned by sha256 (as the corpus is).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit import rocm
from buildkit.service import rocm as rocm_refresh
from tests.corpus.fetch import CorpusWheel, FetchError, fetch

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
COMPILER = CorpusWheel(
    name="rocm-bindings-compiler",
    version="10.0.0.0.1.2",
    filename="rocm_bindings_compiler-10.0.0.0.1.2-cp312-abi3-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    sha256="62de4d99b017789c5c88e2fc34dca0ff69948beb6ae8265ca66da62751e87926",
    size=48_756_813,
)


@pytest.fixture(scope="module")
def wheel() -> Path:
    try:
        return fetch(COMPILER)
    except FetchError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {COMPILER.filename} cannot be fetched: {exc}", pytrace=False)
        pytest.skip(f"{COMPILER.filename} cannot be fetched from PyPI: {exc}")
        raise


def _check(wheel: Path, release: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", "check", "--exclude-set", "rocm", "--rocm", release, str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_amd_rocm_10_wheel_passes_with_therock_sysdeps_excluded(wheel: Path) -> None:
    out = _check(wheel, "10.0")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    assert "librocm_sysdeps_z.so.1     excluded (librocm_sysdeps_*.so*)" in text
    assert "librocm_sysdeps_zstd.so.1  excluded (librocm_sysdeps_*.so*)" in text
    warnings = [line.strip() for line in text.splitlines() if "WARNING [" in line]
    assert len(warnings) == 2 and all(
        w.startswith("WARNING [rpath] RUNPATH entry /opt/rocm/lib/") for w in warnings
    )


def test_under_the_legacy_7_2_the_sysdeps_are_external(wheel: Path) -> None:
    out = _check(wheel, "7.2")
    assert out.returncode != 0
    assert "needs librocm_sysdeps_z.so.1: not on the manylinux_2_27 whitelist" in out.stdout + out.stderr


def test_the_refresh_reads_what_releases_yaml_records(wheel: Path) -> None:
    files = rocm_refresh.parse_pypi_json(
        "rocm-bindings-compiler",
        (ROOT / "tests/data/rocm-sources/pypi-rocm-bindings-compiler.json").read_bytes(),
    )
    listed = rocm_refresh.newest_per_release(files)["10.0.0"]
    assert (listed.filename, listed.sha256) == (COMPILER.filename, COMPILER.sha256)
    seen = rocm_refresh.read_wheel(wheel, listed)
    assert seen.llvm == "23.0.0git" and seen.llvm_commit == "8f497e0992fb7513f7f78a6f6b6f1056c375e961"
    assert seen.sysdeps == ("librocm_sysdeps_z.so.1", "librocm_sysdeps_zstd.so.1")
    assert rocm.get_release("10.0").llvm.startswith(seen.llvm)
