"""The section route of :mod:`~buildkit.inspect.elf`: an ELF's section header table, and its
``.dynamic``, ``.gnu.version_r`` and ``.dynsym`` sections read with pyelftools, as auditwheel reads
them, for a member without a usable ``PT_DYNAMIC`` (a static executable, an object file, dynamic
entries that map to no segment); and where a member's ``.hip_fatbin`` sections lie.

Every function reads the kept ranges of a :class:`~buildkit.inspect.sparse.SparseBuffer`; a byte not
kept raises :class:`~buildkit.inspect.sparse.MissingRange` (possibly wrapped by pyelftools:
:func:`missing_inside`), and the caller reads the member again keeping the ranges
:func:`exact_ranges` names.
"""

from __future__ import annotations

import struct
from collections.abc import Collection
from typing import IO, Any, cast

from buildkit.errors import WheelReadError
from buildkit.inspect import loader
from buildkit.inspect.limits import Limits
from buildkit.inspect.loader import ElfHeader, LoaderView
from buildkit.inspect.sparse import MissingRange, SparseBuffer, SparseStream

SHT_DYNAMIC = 6
SHT_DYNSYM = 11
SHT_NOBITS = 8
SHT_GNU_VERNEED = 0x6FFFFFFE
_FATBIN_SECTIONS = (b".hip_fatbin",)
_STRING_SLACK = 256  # kept past the end of a string table: pyelftools reads strings in 64-byte steps
#: the dynamic tags whose strings a view keeps -> the pyelftools attribute naming the string
_DYNAMIC_STRINGS = {
    "DT_NEEDED": "needed",
    "DT_SONAME": "soname",
    "DT_RPATH": "rpath",
    "DT_RUNPATH": "runpath",
}


def section_headers(h: ElfHeader, buf: SparseBuffer) -> list[tuple[int, int, int, int, int]]:
    """(sh_name, sh_type, sh_offset, sh_size, sh_link) of every section header."""
    if not h.shnum:
        return []
    entry = 64 if h.elf64 else 40
    # one read of the table: the bytes of every entry, each ``entry`` long at ``i * shentsize``
    raw = loader.require(buf.read)(h.shoff, (h.shnum - 1) * h.shentsize + entry)
    layout = struct.Struct(h.endian + ("IIQQQQI" if h.elf64 else "IIIIIII"))
    out = []
    for i in range(h.shnum):
        name, typ, _flags, _addr, offset, size, link = layout.unpack_from(raw, i * h.shentsize)
        out.append((name, typ, offset, size, link))
    return out


def fatbin_sections(h: ElfHeader, buf: SparseBuffer) -> list[tuple[int, int]]:
    """(offset, size) of every ``.hip_fatbin`` section (MissingRange when the names were not kept)."""
    if not h.shoff or not 0 < h.shstrndx < h.shnum:
        return []
    sections = section_headers(h, buf)
    _name, _typ, names_at, names_size, _link = sections[h.shstrndx]
    read = loader.require(buf.read)
    out = []
    for name_at, typ, offset, size, _link in sections:
        if typ == SHT_NOBITS or name_at >= names_size:
            continue
        want = max(len(n) for n in _FATBIN_SECTIONS) + 1
        name = read(names_at + name_at, min(want, names_size - name_at)).split(b"\0", 1)[0]
        if name in _FATBIN_SECTIONS:
            out.append((offset, size))
    return out


def shstrtab_range(h: ElfHeader, buf: SparseBuffer) -> list[tuple[int, int]]:
    if not h.shoff or not 0 < h.shstrndx < h.shnum or not buf.has(h.shoff, h.shnum * h.shentsize):
        return []
    _name, typ, offset, size, _link = section_headers(h, buf)[h.shstrndx]
    return [] if typ == SHT_NOBITS else [(h.shoff, h.shnum * h.shentsize), (offset, size)]


def exact_ranges(h: ElfHeader, buf: SparseBuffer, limits: Limits, member: str) -> list[tuple[int, int]]:
    """The ranges pyelftools needs on the section route, from the section table kept in the first pass."""
    if not h.shoff or not buf.has(h.shoff, h.shnum * h.shentsize):
        raise WheelReadError(f"{member}: ELF section headers unreadable")
    sections = section_headers(h, buf)
    wanted: set[int] = set()
    if h.shstrndx < len(sections):
        wanted.add(h.shstrndx)
    for index, (_name, typ, _offset, _size, link) in enumerate(sections):
        if typ in (SHT_DYNAMIC, SHT_GNU_VERNEED, SHT_DYNSYM):
            wanted.add(index)
            if link < len(sections):
                wanted.add(link)
    ranges = [(h.shoff, h.shnum * h.shentsize)]
    for index in sorted(wanted):
        _name, typ, offset, size, _link = sections[index]
        if typ == SHT_NOBITS:
            continue
        ranges.append((offset, size + _STRING_SLACK))
    total = sum(size for _start, size in ranges)
    if total > limits.max_second_pass_bytes:
        raise WheelReadError(
            f"{member}: the ELF's dynamic sections need {total} bytes in memory "
            f"(limit {limits.max_second_pass_bytes})"
        )
    return ranges


def parse_sections(member: str, h: ElfHeader, buf: SparseBuffer, interest: Collection[str]) -> LoaderView:
    """``.dynamic`` and ``.gnu.version_r`` through pyelftools, as auditwheel reads them (MissingRange,
    possibly wrapped, when a byte was not kept). A file with none of those sections (a static
    executable: Go, Rust-musl, patchelf's own) has nothing to read there: its view is empty, and
    pyelftools (~0.1 s to import) is not loaded for it."""
    sections = section_headers(h, buf)
    kinds = {typ for _name_at, typ, _offset, _size, _link in sections}
    if not kinds & {SHT_DYNAMIC, SHT_GNU_VERNEED} and not (SHT_DYNSYM in kinds and interest):
        return LoaderView((), None, (), (), {}, mentions_hip_register=False)
    from elftools.elf.dynamic import DynamicSection  # the rare route: imported when taken
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection
    from elftools.elf.sections import SymbolTableSection

    elf = ELFFile(cast(IO[bytes], SparseStream(buf)))
    strings: dict[str, list[str]] = {attr: [] for attr in _DYNAMIC_STRINGS.values()}
    version_needs: dict[str, set[str]] = {}
    undefined: set[str] = set()
    dynamic_seen = dynsym_seen = False
    # Only the sections we need become pyelftools objects: creating some others (.gnu.hash...) reads
    # their data, which was not kept.
    for index, (_name_at, typ, _offset, _size, _link) in enumerate(sections):
        if typ == SHT_DYNAMIC and not dynamic_seen:
            section = elf.get_section(index)
            if isinstance(section, DynamicSection):
                dynamic_seen = True
                for tag in section.iter_tags():
                    attr = _DYNAMIC_STRINGS.get(tag.entry.d_tag)
                    if attr is not None:
                        strings[attr].append(str(getattr(tag, attr)))
        elif typ == SHT_DYNSYM and not dynsym_seen and interest:
            section = elf.get_section(index)
            if isinstance(section, SymbolTableSection):
                dynsym_seen = True
                undefined.update(_undefined_in(member, h, section, interest))
        elif typ == SHT_GNU_VERNEED:
            section = elf.get_section(index)
            if isinstance(section, GNUVerNeedSection):
                for verneed, vernaux_iter in section.iter_versions():
                    version_needs.setdefault(str(verneed.name), set()).update(
                        str(v.name) for v in vernaux_iter
                    )
    return LoaderView(
        needed=tuple(strings["needed"]),
        soname=strings["soname"][-1] if strings["soname"] else None,
        rpath=_split_paths(strings["rpath"]),
        runpath=_split_paths(strings["runpath"]),
        version_needs={lib: tuple(sorted(names)) for lib, names in sorted(version_needs.items())},
        mentions_hip_register=False,
        undefined_of_interest=tuple(sorted(undefined)),
    )


def _split_paths(values: list[str]) -> tuple[str, ...]:
    return tuple(part for value in values for part in value.split(":") if part)


def _undefined_in(member: str, h: ElfHeader, section: Any, interest: Collection[str]) -> set[str]:
    """The undefined, non-weak names of a pyelftools symbol table that are in ``interest``."""
    if section["sh_entsize"] != h.sym_size or section["sh_size"] // h.sym_size > loader.MAX_SYMBOLS:
        raise WheelReadError(
            f"{member}: malformed ELF: .dynsym has {section['sh_size']} bytes in entries of "
            f"{section['sh_entsize']} (expected {h.sym_size}, at most {loader.MAX_SYMBOLS} entries)"
        )
    return {
        str(symbol.name)
        for symbol in section.iter_symbols()
        if symbol["st_shndx"] == "SHN_UNDEF"
        and symbol["st_info"]["bind"] != "STB_WEAK"
        and symbol.name in interest
    }


def missing_inside(err: BaseException, depth: int = 0) -> MissingRange | None:
    """pyelftools wraps stream errors in its own (ELFParseError(FieldError(MissingRange)))."""
    if isinstance(err, MissingRange):
        return err
    if depth > 5:
        return None
    for inner in (*err.args, err.__cause__, err.__context__):
        if isinstance(inner, BaseException):
            found = missing_inside(inner, depth + 1)
            if found is not None:
                return found
    return None
