"""``python -m refops.selftest``: run refops.rms_norm on CPU tensors and compare it with the pure-torch
reference (torch.testing.assert_close); check that the operator's TORCH_CHECKs raise RuntimeError
with their message. Prints one line per case; exits 1 when any case fails (a smoke test)."""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch

import refops

#: (shape of x, dtype, eps): rows of one element, rows longer than a work-group, 3-d input
CASES: tuple[tuple[tuple[int, ...], torch.dtype, float], ...] = (
    ((1, 1), torch.float32, 1e-6),
    ((3, 7), torch.float32, 1e-6),
    ((4, 1024), torch.float32, 1e-5),
    ((2, 3, 257), torch.float32, 0.0),
    ((5, 33), torch.float64, 1e-12),
    ((0, 8), torch.float32, 1e-6),
)

#: calls that must raise RuntimeError with the given text (the C++ TORCH_CHECK messages)
REFUSED: tuple[tuple[str, Callable[[], object], str], ...] = (
    ("weight shape", lambda: refops.rms_norm(torch.ones(2, 4), torch.ones(3)), "weight must have shape [4]"),
    (
        "dtype mismatch",
        lambda: refops.rms_norm(torch.ones(2, 4), torch.ones(4, dtype=torch.float64)),
        "x is Float but weight is Double",
    ),
    ("integer dtype", lambda: refops.rms_norm(torch.ones(2, 4, dtype=torch.int32), torch.ones(4, dtype=torch.int32)), "not implemented for 'Int'"),
    ("0-d input", lambda: refops.rms_norm(torch.tensor(1.0), torch.ones(1)), "at least one dimension"),
    ("negative eps", lambda: refops.rms_norm(torch.ones(2, 4), torch.ones(4), -1.0), "eps must be finite"),
)


def inputs(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=generator, dtype=dtype)
    weight = torch.rand(shape[-1], generator=generator, dtype=dtype) + 0.5
    return x, weight


def run() -> list[str]:
    """The failures, one line each (empty: everything passed)."""
    failures = []
    for seed, (shape, dtype, eps) in enumerate(CASES):
        name = f"rms_norm {tuple(shape)} {str(dtype).removeprefix('torch.')} eps={eps:g}"
        x, weight = inputs(shape, dtype, seed)
        try:
            got = refops.rms_norm(x, weight, eps)
            torch.testing.assert_close(got, refops.rms_norm_reference(x, weight, eps))
        except Exception as exc:  # a mismatch (AssertionError) or the operator's error
            failures.append(f"{name}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            print(f"FAIL {name}")
        else:
            print(f"ok   {name}")
    for name, call, expected in REFUSED:
        try:
            call()
        except RuntimeError as exc:
            if expected in str(exc):
                print(f"ok   refused: {name}")
                continue
            failures.append(f"refused {name}: the error does not say {expected!r}: {str(exc).splitlines()[0]}")
        else:
            failures.append(f"refused {name}: no error")
        print(f"FAIL refused: {name}")
    return failures


def main() -> int:
    print(f"torch {torch.__version__}, refops {refops.__version__}, operator {torch.ops.refops.rms_norm}")
    failures = run()
    for line in failures:
        print(f"error: {line}", file=sys.stderr)
    total = len(CASES) + len(REFUSED)
    print(f"{total - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
