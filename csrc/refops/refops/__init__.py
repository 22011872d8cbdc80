"""refops: the reference torch extension of rocm-buildkit.

``import refops`` imports torch first (the extension links its libtorch_cpu and libc10 and finds
them, already loaded, by SONAME), then ``refops._C``, whose ``TORCH_LIBRARY`` registers
``torch.ops.refops.rms_norm``: a CPU kernel, a HIP kernel for GPU tensors of a ROCm torch (the CUDA
dispatch key) and a Meta kernel (shapes only).
"""

from __future__ import annotations

import torch

from . import _C  # noqa: F401  (loading it registers torch.ops.refops)
from .reference import rms_norm_reference

__version__ = "0.1.0"

__all__ = ["rms_norm", "rms_norm_reference"]


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``x / sqrt(mean(x**2, -1) + eps) * weight``, over the last dimension of ``x`` (float32, float64
    on CPU; float32 on a GPU). Errors of the operator's checks raise RuntimeError."""
    return torch.ops.refops.rms_norm(x, weight, eps)
