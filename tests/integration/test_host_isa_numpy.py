"""The host-isa report on a real runtime-dispatched wheel from PyPI: numpy 2.2.6 holds AVX-512
(its SIMD dispatch, OpenBLAS's kernels) behind cpuid checks. The default report informs (warnings
naming the level and an instruction) and does not refuse; strict refuses, naming the instruction."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.gate.options import GateFlags, apply_options
from buildkit.inspect import inspect_wheel
from buildkit.inspect.isa import host_isa_of

NUMPY = "numpy==2.2.6"
CACHE = Path(os.environ.get("BUILDKIT_TEST_CACHE", Path.home() / ".cache" / "rocm-buildkit" / "test-wheels"))


def numpy_wheel() -> Path:
    """numpy 2.2.6's cp311 manylinux x86_64 wheel, downloaded once with pip into the cache."""
    folder = CACHE / "numpy-2.2.6"
    found = sorted(folder.glob("numpy-2.2.6-cp311-cp311-manylinux*x86_64*.whl"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", NUMPY, "--only-binary=:all:", "--no-deps"]
    argv += ["--python-version", "3.11", "--platform", "manylinux_2_17_x86_64", "-d", str(folder)]
    done = subprocess.run(argv, capture_output=True, text=True)
    found = sorted(folder.glob("numpy-2.2.6-cp311-cp311-manylinux*x86_64*.whl"))
    if done.returncode != 0 or not found:
        reason = f"pip download {NUMPY} failed: {done.stderr.strip()[-400:]}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {reason}", pytrace=False)
        pytest.skip(f"PyPI unreachable: {reason}")
    return found[0]


@pytest.fixture(scope="module")
def judged() -> tuple[Path, object]:
    wheel = numpy_wheel()
    report = inspect_wheel(wheel)
    return wheel, report


def test_numpy_holds_avx512_and_the_default_report_does_not_refuse(judged: tuple[Path, object]) -> None:
    wheel, report = judged
    with zipfile.ZipFile(wheel) as zf:
        scan = host_isa_of(zf, report, True)  # type: ignore[arg-type]
    assert scan is not None
    by_member = {e.member: e for e in scan}
    umath = by_member["numpy/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so"]
    assert umath.level == 4 and umath.counts[2] > 1000  # AVX-512 kernels behind cpuid dispatch
    assert any("zmm" in e.text for e in umath.above(3))
    # the Cython modules without dispatch stay at or below SSE3 (numpy's baseline)
    assert by_member["numpy/random/_mt19937.cpython-311-x86_64-linux-gnu.so"].level <= 2

    config = apply_options(GateConfig(), GateFlags(isa_report=True))
    verdict = evaluate(report, config, host_isa=scan)  # type: ignore[arg-type]
    isa = [f for f in verdict.findings if f.rule == "host-isa"]
    assert isa and all(f.severity == "warning" for f in isa)
    assert any("_multiarray_umath" in f.message and "x86-64-v4" in f.message for f in isa)
    assert verdict.passed, [f.message for f in verdict.errors]

    strict = evaluate(report, apply_options(GateConfig(), GateFlags(isa_strict=True)), host_isa=scan)  # type: ignore[arg-type]
    refused = [f for f in strict.errors if f.rule == "host-isa"]
    assert refused and not strict.passed
    assert any("_multiarray_umath" in f.message and "zmm" in f.message and f.symbol for f in refused)
