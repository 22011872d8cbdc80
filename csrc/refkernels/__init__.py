"""refkernels: the reference HIP extension of rocm-buildkit.

Pure-Python parts (no GPU, no ROCm runtime needed):

- :func:`get_build_targets` - the gfx targets compiled into the extension, read from its own
  ``.hip_fatbin`` section;
- :func:`get_gfx_runtime` - the GPUs on this machine, from rocminfo / rocm_agent_enumerator;
- :func:`select_kernel` - the tuned dispatch table (gfx, cu_num, M, N, K) -> kernel.

:func:`gemm` and :func:`rowsum` run the kernels through the compiled ``refkernels._C``.
"""

from __future__ import annotations

import importlib.util
import os

from .dispatch import KERNELS, KernelConfig, Selection, TunedTable, default_table, load_table, select_kernel
from .errors import BundleFormatError, ExtensionUnavailable, HipError, NoDeviceError, TunedTableError
from .fatbin import OffloadEntry, read_offload_entries
from .kernels import device, gemm, rowsum
from .runtime import GfxAgent, GfxRuntime, get_gfx_runtime

__version__ = "0.1.0"

__all__ = [
    "KERNELS",
    "BundleFormatError",
    "ExtensionUnavailable",
    "GfxAgent",
    "GfxRuntime",
    "HipError",
    "KernelConfig",
    "NoDeviceError",
    "OffloadEntry",
    "Selection",
    "TunedTable",
    "TunedTableError",
    "default_table",
    "device",
    "extension_path",
    "gemm",
    "get_build_targets",
    "get_gfx_runtime",
    "load_table",
    "read_offload_entries",
    "rowsum",
    "select_kernel",
]

# The dispatch table is part of the package contract: load it at import so a bad CSV fails here.
default_table()


def extension_path() -> str:
    """File of the compiled extension ``refkernels._C`` (found without loading it)."""
    spec = importlib.util.find_spec("refkernels._C")
    if spec is None or spec.origin is None:
        raise ExtensionUnavailable("refkernels._C is not installed (a source checkout without a build?)")
    return spec.origin


def get_build_targets(path: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """gfx target IDs compiled into the extension (or the ELF file ``path``), sorted, distinct.

    Read from the clang offload bundles in the binary's ``.hip_fatbin`` section; loading the
    extension (and so a ROCm runtime) is not needed.
    """
    entries = read_offload_entries(extension_path() if path is None else path)
    return tuple(sorted({entry.target for entry in entries if entry.target is not None}))
