"""Run the HIP kernels: tuned dispatch in Python, launch in the compiled ``refkernels._C``."""

from __future__ import annotations

import importlib
from array import array
from types import ModuleType
from typing import Any

from .dispatch import KERNELS, Selection, select_kernel
from .errors import ExtensionUnavailable, NoDeviceError

__all__ = ["device", "extension", "gemm", "rowsum"]


def extension() -> ModuleType:
    """The compiled extension; ExtensionUnavailable (an ImportError) when it cannot load."""
    try:
        return importlib.import_module("refkernels._C")
    except ImportError as exc:
        raise ExtensionUnavailable(
            f"refkernels' HIP extension cannot be loaded ({exc}); it needs the ROCm runtime "
            "(libamdhip64) of the release it was built against"
        ) from exc


def device(index: int = 0) -> tuple[str, int]:
    """(gfx target id, compute units) of a GPU, from the HIP runtime. NoDeviceError if none."""
    ext = extension()
    count = ext.device_count()
    if index >= count:
        raise NoDeviceError(100, "hipErrorNoDevice", f"device {index} requested, {count} visible", "device")
    gfx, cu_num = ext.device_info(index)
    return str(gfx), int(cu_num)


def _floats(values: Any) -> Any:
    return (
        values
        if isinstance(values, (array, memoryview, bytes, bytearray))
        or hasattr(values, "__buffer__")
        or hasattr(values, "__array_interface__")
        else array("f", values)
    )


def gemm(a: Any, b: Any, m: int, n: int, k: int, *, kernel: str | None = None) -> array[float]:
    """C = A @ B in float32 (row-major A[m,k], B[k,n]) on GPU 0; returns array('f') of m*n values.

    The kernel comes from the tuned table for this GPU (:func:`refkernels.select_kernel`)
    unless ``kernel`` names one. Raises NoDeviceError when no AMD GPU is visible.
    """
    if kernel is None:
        gfx, cu_num = device(0)
        selection: Selection = select_kernel(gfx, cu_num, m, n, k)
        kernel = selection.kernel
    elif kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; compiled kernels: {sorted(KERNELS)}")
    out = array("f")
    out.frombytes(extension().gemm(kernel, _floats(a), _floats(b), m, n, k))
    return out


def rowsum(x: Any, rows: int, cols: int) -> array[float]:
    """Row sums of a row-major float32 [rows, cols] matrix on GPU 0; returns array('f')."""
    out = array("f")
    out.frombytes(extension().rowsum(_floats(x), rows, cols))
    return out
