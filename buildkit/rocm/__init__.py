"""ROCm knowledge as data: releases, runtime-library sets, toolchains and target-ID features, in the
YAML files beside this module, each row with its ``source`` (what "supported targets" means:
the header of ``releases.yaml``).

The records and loaders are :mod:`buildkit.rocm.data`, imported on first use (PEP 562
``__getattr__``): a ``buildkit check`` without a ROCm pin or toolchain never builds them. The
target-ID helpers the gate's report sorts with are defined here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from buildkit.rocm.data import (
        LibrarySet,
        Observation,
        RocmRelease,
        RuntimeLibrary,
        Toolchain,
        TorchIndex,
        UnknownRelease,
        UnknownToolchain,
        exclude_globs,
        expected_sonames,
        feature_processors,
        get_release,
        get_toolchain,
        library_sets,
        min_release_for,
        observed,
        observed_since,
        releases,
        toolchains,
        version_key,
    )

_SUBMODULES = frozenset({"data", "install"})

__all__ = [
    "LibrarySet",
    "Observation",
    "RocmRelease",
    "RuntimeLibrary",
    "Toolchain",
    "TorchIndex",
    "UnknownRelease",
    "UnknownToolchain",
    "exclude_globs",
    "expected_sonames",
    "feature_processors",
    "get_release",
    "get_toolchain",
    "library_sets",
    "min_release_for",
    "observed",
    "observed_since",
    "processor_of",
    "processor_sort_key",
    "releases",
    "toolchains",
    "version_key",
]


def processor_of(target_id: str) -> str:
    """``gfx90a:xnack-`` -> ``gfx90a``."""
    return target_id.split(":", 1)[0]


def processor_sort_key(target_id: str) -> tuple[int, int, int, str]:
    """Stable order of target IDs: by GFX major, minor, stepping, then the text.

    ``gfx908`` = (9, 0, 8), ``gfx90a`` = (9, 0, 10), ``gfx1030`` = (10, 3, 0), ``gfx1201`` =
    (12, 0, 1); generic targets (``gfx9-4-generic``) sort after the specific ones of their major.
    Features only break ties (``gfx90a:xnack+`` before ``gfx90a:xnack-``, in text order).
    """
    name = processor_of(target_id)
    body = name[3:] if name.startswith("gfx") else name
    if body.endswith("-generic"):
        parts = body[: -len("-generic")].split("-")
        major = int(parts[0]) if parts[0].isdigit() else 99
        return (major, 99, 99, target_id)
    try:
        major = int(body[:-2])
        minor = int(body[-2], 16)
        stepping = int(body[-1], 16)
    except ValueError:
        return (99, 99, 99, target_id)
    return (major, minor, stepping, target_id)


def __getattr__(name: str) -> Any:
    """Everything else :mod:`buildkit.rocm` offers comes from :mod:`buildkit.rocm.data` (loaded now)."""
    if name.startswith("__") or name in _SUBMODULES:  # dunders, and what the import system probes for
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    data = importlib.import_module("buildkit.rocm.data")
    try:
        value = getattr(data, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value
