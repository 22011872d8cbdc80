"""AMDGPU target IDs: which processors exist, which target-ID features each accepts, and the
canonical spelling of a target ID (``gfx90a``, ``gfx90a:xnack-``, ``gfx90a:sramecc+:xnack-``).

The bottom layer of the arch facts, so the recipe schema, the plan, the gate and the wheel
inspection can all use it. An unknown processor (``gfx905``) is an
:class:`~buildkit.errors.ArchError` with "did you mean"; features are limited to what the processor
accepts (``buildkit/rocm/targets.yaml``) and put in alphabetical order (clang's canonical form).
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from buildkit import rocm as rocmdata
from buildkit.errors import ArchError

#: Environment variables build systems read their GPU arch list from, with the separator each
#: expects: PyTorch's extensions and aiter (``PYTORCH_ROCM_ARCH``, ``GPU_ARCHS``: ``;``), projects
#: using the old hcc-era name (``HCC_AMDGPU_TARGET``: ``,``), the ROCm libraries' CMake lists
#: (``AMDGPU_TARGETS``, ``GPU_TARGETS``) and CMake's own (``CMAKE_HIP_ARCHITECTURES``), all ``;``
#: (``archs.export``).
ARCH_VARIABLES: dict[str, str] = {
    "PYTORCH_ROCM_ARCH": ";",
    "GPU_ARCHS": ";",
    "HCC_AMDGPU_TARGET": ",",
    "AMDGPU_TARGETS": ";",
    "GPU_TARGETS": ";",
    "CMAKE_HIP_ARCHITECTURES": ";",
}
#: the separators an exported arch list may use
ARCH_SEPARATORS: tuple[str, ...] = (";", ",", " ", ":")
#: exported whatever the recipe says (what rocm-buildkit has always set)
ALWAYS_EXPORTED: tuple[str, ...] = ("PYTORCH_ROCM_ARCH", "GPU_ARCHS")

_PROCESSOR = re.compile(r"^gfx(?:[0-9]{1,2}[0-9a-f]{2}|[0-9]{1,2}(?:-[0-9]+)?-generic)$")
_FEATURE = re.compile(r"^([a-z][a-z0-9-]*)([+-])$")
_SEPARATORS = re.compile(r"[;,\s]+")

#: ``EF_AMDGPU_MACH_*`` value -> processor, from LLVM's ``llvm/include/llvm/BinaryFormat/ELF.h``:
#: every AMDGPU processor LLVM defines (:mod:`buildkit.inspect.codeobject` decodes ``e_flags`` with it).
MACH_NAMES: dict[int, str] = {
    0x020: "gfx600", 0x021: "gfx601", 0x022: "gfx700", 0x023: "gfx701", 0x024: "gfx702",
    0x025: "gfx703", 0x026: "gfx704", 0x028: "gfx801", 0x029: "gfx802", 0x02A: "gfx803",
    0x02B: "gfx810", 0x02C: "gfx900", 0x02D: "gfx902", 0x02E: "gfx904", 0x02F: "gfx906",
    0x030: "gfx908", 0x031: "gfx909", 0x032: "gfx90c", 0x033: "gfx1010", 0x034: "gfx1011",
    0x035: "gfx1012", 0x036: "gfx1030", 0x037: "gfx1031", 0x038: "gfx1032", 0x039: "gfx1033",
    0x03A: "gfx602", 0x03B: "gfx705", 0x03C: "gfx805", 0x03D: "gfx1035", 0x03E: "gfx1034",
    0x03F: "gfx90a", 0x040: "gfx940", 0x041: "gfx1100", 0x042: "gfx1013", 0x043: "gfx1150",
    0x044: "gfx1103", 0x045: "gfx1036", 0x046: "gfx1101", 0x047: "gfx1102", 0x048: "gfx1200",
    0x049: "gfx1250", 0x04A: "gfx1151", 0x04B: "gfx941", 0x04C: "gfx942", 0x04E: "gfx1201",
    0x04F: "gfx950", 0x050: "gfx1310", 0x051: "gfx9-generic", 0x052: "gfx10-1-generic",
    0x053: "gfx10-3-generic", 0x054: "gfx11-generic", 0x055: "gfx1152", 0x057: "gfx1154",
    0x058: "gfx1153", 0x059: "gfx12-generic", 0x05A: "gfx1251", 0x05B: "gfx12-5-generic",
    0x05C: "gfx1172", 0x05D: "gfx1170", 0x05E: "gfx1171", 0x05F: "gfx9-4-generic",
    0x062: "gfx11-7-generic", 0x063: "gfx13-generic",
}  # fmt: skip


@functools.cache
def _data_processors() -> frozenset[str]:
    """Processors buildkit's ROCm data names (releases, toolchains, target-ID features)."""
    names: set[str] = set()
    for release in rocmdata.releases():
        names.update(release.official)
        names.update(rocmdata.processor_of(t) for t in release.library_targets)
    for toolchain in rocmdata.toolchains():
        names.update(toolchain.archs)
    for processors in rocmdata.feature_processors().values():
        names.update(processors)
    return frozenset(names)


@functools.cache
def known_processors() -> frozenset[str]:
    """Every AMDGPU processor LLVM defines: the ``EF_AMDGPU_MACH`` names of LLVM's ELF.h
    (:data:`MACH_NAMES`, which the wheel inspection decodes code objects with) plus those
    buildkit's ROCm data names."""
    return frozenset(MACH_NAMES.values()) | _data_processors()


def _is_processor(name: str) -> bool:
    # the data's names first: the common case needs no union with LLVM's table
    return name in _data_processors() or name in known_processors()


def processor_suggestions(name: str) -> list[str]:
    """Up to three known processors spelled like ``name`` (difflib), the ones some ROCm release
    supports first: ``gfx905`` -> ``["gfx950", "gfx90a", "gfx908"]``."""
    supported = sorted({a for release in rocmdata.releases() for a in release.archs})
    import difflib  # only for a misspelt target: not on every check's start-up

    close = difflib.get_close_matches(name, supported, n=3, cutoff=0.6)
    return close or difflib.get_close_matches(name, sorted(known_processors()), n=3, cutoff=0.6)


def _unknown_processor(text: str, name: str) -> str:
    message = f"invalid GPU arch {text!r}: {name} is not an AMDGPU processor"
    close = processor_suggestions(name)
    if close:
        shown = close[0] if len(close) == 1 else ", ".join(close[:-1]) + " or " + close[-1]
        message += f"; did you mean {shown}?"
    return message


class TargetId(NamedTuple):
    """An AMDGPU target ID: a processor and its target-ID features (``("xnack-",)``)."""

    name: str
    features: tuple[str, ...] = ()

    def __str__(self) -> str:
        return ":".join((self.name, *self.features))

    @property
    def sort_key(self) -> tuple[int, int, int, str]:
        return rocmdata.processor_sort_key(str(self))


def parse_target_id(text: str) -> TargetId:
    """Parse and canonicalise a target ID; raise :class:`ArchError` naming what is wrong."""
    raw = text.strip()
    parts = raw.split(":")
    name = parts[0].lower()
    if not _PROCESSOR.match(name):
        raise ArchError(
            f"invalid GPU arch {text!r}: expected an AMDGPU processor such as gfx90a or gfx1100, "
            "optionally with features (gfx90a:xnack-, gfx90a:sramecc+:xnack-)"
        )
    if not _is_processor(name):
        raise ArchError(_unknown_processor(text, name))
    accepted = rocmdata.feature_processors()
    features: dict[str, str] = {}
    for part in parts[1:]:
        m = _FEATURE.match(part)
        if not m:
            raise ArchError(f"invalid GPU arch {text!r}: feature {part!r} must look like xnack+ or xnack-")
        feature, sign = m.groups()
        if feature not in accepted:
            raise ArchError(
                f"invalid GPU arch {text!r}: {feature!r} is not a target-ID feature "
                f"(known: {', '.join(sorted(accepted))})"
            )
        if name not in accepted[feature]:
            raise ArchError(f"invalid GPU arch {text!r}: {name} does not support the {feature} feature")
        if feature in features:
            raise ArchError(f"invalid GPU arch {text!r}: feature {feature} given twice")
        features[feature] = sign
    return TargetId(name, tuple(f"{k}{features[k]}" for k in sorted(features)))


def split_arch_list(text: str) -> list[str]:
    """``"gfx908;gfx90a, gfx942"`` -> ``["gfx908", "gfx90a", "gfx942"]``."""
    return [t for t in _SEPARATORS.split(text.strip()) if t]
