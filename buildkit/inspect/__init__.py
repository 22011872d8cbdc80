"""Streaming wheel inspection: ELF needs and symbol versions, clang offload bundles, AMDGPU code
objects, read straight from the zip without extracting anything to disk.

Entry point: :func:`inspect_wheel`. Hostile or corrupt input raises
:class:`buildkit.errors.WheelReadError` (exit code 6).
"""

from __future__ import annotations

from buildkit.inspect.limits import Limits
from buildkit.inspect.models import (
    CodeObject,
    ElfInfo,
    MemberFile,
    MemberStat,
    Oddity,
    OffloadEntry,
    RecordEntry,
    WheelReport,
    split_symbol_version,
)
from buildkit.inspect.wheel import inspect_wheel

__all__ = [
    "CodeObject",
    "ElfInfo",
    "Limits",
    "MemberFile",
    "MemberStat",
    "Oddity",
    "OffloadEntry",
    "RecordEntry",
    "WheelReport",
    "inspect_wheel",
    "split_symbol_version",
]
