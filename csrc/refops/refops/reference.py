"""The pure-torch definition refops.rms_norm is compared with."""

from __future__ import annotations

import torch


def rms_norm_reference(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm in torch operations, computed in float64 and returned in ``x``'s dtype."""
    x64 = x.to(torch.float64)
    scale = torch.rsqrt(x64.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (x64 * scale * weight.to(torch.float64)).to(x.dtype)
