"""Smoke tests of an INSTALLED buildkit-refkernels wheel (run them in the target environment).

REFKERNELS_EXPECT_ARCHS (';'-separated, else PYTORCH_ROCM_ARCH) names the archs the wheel must carry.
Without an AMD GPU the kernels must fail with NoDeviceError; with one, they must compute.
"""

from __future__ import annotations

import os
from array import array

import pytest
import refkernels


def test_build_targets_match_the_request() -> None:
    expected = os.environ.get("REFKERNELS_EXPECT_ARCHS") or os.environ.get("PYTORCH_ROCM_ARCH")
    if not expected:
        pytest.skip("set REFKERNELS_EXPECT_ARCHS to the archs the wheel was built for")
    assert set(refkernels.get_build_targets()) == {a for a in expected.split(";") if a}


def test_tuned_table_is_shipped_with_gfx() -> None:
    assert refkernels.select_kernel("gfx942", 304, 4096, 4096, 4096).source == "exact"


def test_kernels_run_or_report_no_gpu() -> None:
    a = array("f", [1.0, 2.0, 3.0, 4.0])
    if not refkernels.get_gfx_runtime().available:
        with pytest.raises(refkernels.NoDeviceError):
            refkernels.gemm(a, a, 2, 2, 2)
        return
    assert list(refkernels.gemm(a, a, 2, 2, 2)) == [7.0, 10.0, 15.0, 22.0]
    assert list(refkernels.rowsum(a, 2, 2)) == [3.0, 7.0]
