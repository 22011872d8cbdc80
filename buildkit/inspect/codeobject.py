"""AMDGPU code objects: the target id (``gfx90a:xnack-``) encoded in an ELF header's ``e_flags``.

Values from LLVM's ``llvm/include/llvm/BinaryFormat/ELF.h`` (``EF_AMDGPU_MACH_*``,
``EF_AMDGPU_FEATURE_*``) and AMDGPUUsage ("ELF Header" and "Code Object V3/V4+ Metadata").
"""

from __future__ import annotations

import struct

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
