"""AMDGPU code objects: the target id (``gfx90a:xnack-``) encoded in an ELF header's ``e_flags``.

Values from LLVM's ``llvm/include/llvm/BinaryFormat/ELF.h`` (``EF_AMDGPU_MACH_*``,
``EF_AMDGPU_FEATURE_*``) and AMDGPUUsage ("ELF Header" and "Code Object V3/V4+ Metadata"); the
machine table (:data:`buildkit.targets.MACH_NAMES`) is a target-ID fact and lives with them.
"""

from __future__ import annotations

import struct

from buildkit.targets import MACH_NAMES

EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64
EF_AMDGPU_MACH = 0x0FF

# EF_AMDGPU_FEATURE_XNACK_V3 / SRAMECC_V3 (code object v3: one bit each, set = on)
_XNACK_V3 = 0x100
_SRAMECC_V3 = 0x200
# code object v4+: two-bit fields: 0 unsupported, 1 any, 2 off, 3 on
_XNACK_V4_MASK = 0x300
_SRAMECC_V4_MASK = 0xC00

# e_ident[EI_ABIVERSION] under ELFOSABI_AMDGPU_HSA -> code object version
_ABI_TO_CODE_OBJECT = {0: 2, 1: 3, 2: 4, 3: 5, 4: 6}


def code_object_version(ei_osabi: int, ei_abiversion: int) -> int | None:
    """The code object version (2..6) from ``e_ident``, ``None`` when not an HSA code object."""
    if ei_osabi != ELFOSABI_AMDGPU_HSA:
        return None
    return _ABI_TO_CODE_OBJECT.get(ei_abiversion)


def target_id_from_flags(e_flags: int, version: int | None) -> str:
    """``e_flags`` -> target id as clang spells it: ``gfx90a``, ``gfx90a:xnack-``,
    ``gfx942:sramecc+:xnack-`` (features in alphabetical order, "any" omitted).

    An unknown machine value gives ``"unknown-0x..."`` rather than failing: the gate then reports it.
    """
    mach = e_flags & EF_AMDGPU_MACH
    name = MACH_NAMES.get(mach, f"unknown-0x{mach:03x}")
    features: list[str] = []
    if version is not None and version >= 4:
        sramecc = (e_flags & _SRAMECC_V4_MASK) >> 10
        xnack = (e_flags & _XNACK_V4_MASK) >> 8
        if sramecc in (2, 3):
            features.append("sramecc" + ("+" if sramecc == 3 else "-"))
        if xnack in (2, 3):
            features.append("xnack" + ("+" if xnack == 3 else "-"))
    elif version == 3:
        if e_flags & _SRAMECC_V3:
            features.append("sramecc+")
        if e_flags & _XNACK_V3:
            features.append("xnack+")
    return ":".join([name, *features])


def target_id_from_header(header: bytes) -> str | None:
    """Target id from the first 64 bytes of an ELF, ``None`` when it is not an AMDGPU ELF."""
    if len(header) < 52 or header[:4] != b"\x7fELF":
        return None
    endian = "<" if header[5] == 1 else ">"
    (machine,) = struct.unpack_from(endian + "H", header, 18)
    if machine != EM_AMDGPU:
        return None
    flags_at = 48 if header[4] == 2 else 36
    if len(header) < flags_at + 4:
        return None
    (e_flags,) = struct.unpack_from(endian + "I", header, flags_at)
    return target_id_from_flags(e_flags, code_object_version(header[7], header[8]))
