"""The version definitions of an ELF file (``.gnu.version_d``): the symbol versions a library defines.

A library *defines* versions (libc.so.6: ``GLIBC_2.2.5`` ... ``GLIBC_2.41``), a binary *needs* them
(``.gnu.version_r``, read by :mod:`buildkit.inspect.elf`). :func:`version_definitions` reads the
former from an ELF image in memory with pyelftools: what the image ceilings
(:mod:`buildkit.image.ceilings`) are computed from.
"""

from __future__ import annotations

import io

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerDefSection

VER_FLG_BASE = 0x1  # the verdef entry naming the file itself (its SONAME), not a version


def version_definitions(data: bytes) -> tuple[str, tuple[str, ...]]:
    """``(machine, definitions)`` of an ELF image in memory: names of ``.gnu.version_d`` entries
    without the base entry (the file's own name). Raises ``ValueError`` when not ELF."""
    try:
        elf = ELFFile(io.BytesIO(data))
        machine = str(elf["e_machine"]).removeprefix("EM_").lower()
        names: set[str] = set()
        for section in elf.iter_sections():
            if not isinstance(section, GNUVerDefSection):
                continue
            for verdef, aux in section.iter_versions():
                if verdef["vd_flags"] & VER_FLG_BASE:
                    continue
                first = next(iter(aux), None)  # the first aux names the version, the rest its parents
                if first is not None:
                    names.add(str(first.name))
    except (ELFError, ValueError, KeyError) as exc:
        raise ValueError(f"not a readable ELF file: {exc}") from None
    return machine, tuple(sorted(names))
