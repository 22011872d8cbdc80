"""What the dynamic loader reads of an ELF, located the way ``ld.so`` locates it.

The ELF header gives the program headers; ``PT_DYNAMIC`` gives the dynamic section; its entries
(``DT_NEEDED``, ``DT_SONAME``, ``DT_RPATH``, ``DT_RUNPATH``, ``DT_STRTAB``/``DT_STRSZ``,
``DT_VERNEED``/``DT_VERNEEDNUM``) are string offsets and virtual addresses, mapped to file offsets
through the ``PT_LOAD`` segments. No section header is read: those sit at the end of the file, while
the loader's data can be reached from the front (the program headers) plus a few ranges the dynamic
entries name. This is the same information auditwheel reads through pyelftools' ``.dynamic`` and
``.gnu.version_r`` sections (they are the same bytes in any file a loader accepts).

Every function takes ``read(offset, size)``, which returns exactly ``size`` bytes or raises
:class:`~buildkit.inspect.sparse.MissingRange`: the streaming caller then keeps those bytes when they
come by (or reads the member again) and calls again. Pure functions, no state.

pyelftools is not used here on purpose: its ``ELFFile`` reads the section-header string table when
constructed, i.e. the last bytes of the file, which is exactly what this route avoids reading.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from elftools.elf.enums import ENUM_E_MACHINE

from buildkit.errors import WheelReadError
from buildkit.inspect.sparse import MissingRange

ELF_MAGIC = b"\x7fELF"
PT_LOAD = 1
PT_DYNAMIC = 2
DT_NULL = 0
DT_NEEDED = 1
DT_STRTAB = 5
DT_STRSZ = 10
DT_SONAME = 14
DT_RPATH = 15
DT_RUNPATH = 29
DT_VERNEED = 0x6FFFFFFE
DT_VERNEEDNUM = 0x6FFFFFFF
MAX_DYNAMIC_ENTRIES = 1 << 16
MAX_VERNEED_ENTRIES = 1 << 16
HIP_REGISTER = b"\0__hipRegisterFatBinary\0"
_MACHINE_NAMES = {value: name for name, value in ENUM_E_MACHINE.items() if name != "_default_"}

Read = Callable[[int, int], bytes]


class Unmappable(Exception):
    """The dynamic entries point outside every ``PT_LOAD`` segment (the caller falls back to the
    section headers, as pyelftools and auditwheel would read them)."""


@dataclass(frozen=True)
class ElfHeader:
    elf64: bool
    endian: str
    machine: int
    osabi: int
    abiversion: int
    flags: int
    phoff: int
    phentsize: int
    phnum: int
    shoff: int
    shentsize: int
    shnum: int
    shstrndx: int

    @property
    def machine_name(self) -> str:
        """pyelftools' name without ``EM_``, lower case (``"x86_64"``, ``"aarch64"``)."""
        name = _MACHINE_NAMES.get(self.machine)
        return str(self.machine) if name is None else name.removeprefix("EM_").lower()


@dataclass(frozen=True)
class Segment:
    type: int
    offset: int
    vaddr: int
    filesz: int


@dataclass(frozen=True)
class DynamicTable:
    """``PT_DYNAMIC`` decoded: string offsets into the string table, and file offsets (already mapped
    through the segments) of the string table and of the version-needs table."""

    needed: tuple[int, ...]
    soname: int | None
    rpath: tuple[int, ...]
    runpath: tuple[int, ...]
    strtab: int | None
    strsz: int
    verneed: int | None
    verneednum: int | None

    def ranges(self) -> list[tuple[int, int]]:
        """The byte ranges the rest of the parse needs (the version-needs table's size is unknown
        until it is walked: a first window is asked for, the walk asks for more if it must)."""
        out = []
        if self.strtab is not None:
            out.append((self.strtab, self.strsz))
        if self.verneed is not None:
            out.append((self.verneed, 4096))
        return out


@dataclass(frozen=True)
class LoaderView:
    needed: tuple[str, ...]
    soname: str | None
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    version_needs: dict[str, tuple[str, ...]]
    mentions_hip_register: bool

    @property
    def links_hip_runtime(self) -> bool:
        """A HIP host object: it links the HIP runtime, or its dynamic strings name the call that
        registers a fat binary (``__hipRegisterFatBinary``)."""
        return self.mentions_hip_register or any(n.startswith("libamdhip64") for n in self.needed)


def parse_header(member: str, data: bytes, size: int) -> ElfHeader:
    if len(data) < 52 or data[:4] != ELF_MAGIC:
        raise WheelReadError(f"{member}: truncated ELF header ({size} bytes)")
    if data[4] not in (1, 2) or data[5] not in (1, 2):
        raise WheelReadError(f"{member}: ELF header has invalid class {data[4]} or data encoding {data[5]}")
    elf64 = data[4] == 2
    endian = "<" if data[5] == 1 else ">"
    if elf64:
        if len(data) < 64:
            raise WheelReadError(f"{member}: truncated ELF header ({size} bytes)")
        fields = struct.unpack_from(endian + "HHIQQQIHHHHHH", data, 16)
    else:
        fields = struct.unpack_from(endian + "HHIIIIIHHHHHH", data, 16)
    (
        _type,
        machine,
        _version,
        _entry,
        phoff,
        shoff,
        flags,
        _eh,
        phentsize,
        phnum,
        shentsize,
        shnum,
        shstrndx,
    ) = fields
    header = ElfHeader(
        elf64,
        endian,
        machine,
        data[7],
        data[8],
        flags,
        phoff,
        phentsize,
        phnum,
        shoff,
        shentsize,
        shnum,
        shstrndx,
    )
    ph_end = phoff + phnum * phentsize
    sh_end = shoff + shnum * shentsize
    if phnum and (phentsize < (56 if elf64 else 32) or ph_end > size):
        raise WheelReadError(
            f"{member}: truncated ELF: program headers end at {ph_end}, file has {size} bytes"
        )
    if shoff and (shentsize < (64 if elf64 else 40) or sh_end > size):
        raise WheelReadError(
            f"{member}: truncated ELF: section headers end at {sh_end}, file has {size} bytes"
        )
    return header


def segments(h: ElfHeader, read: Read) -> tuple[Segment, ...]:
    out = []
    for i in range(h.phnum):
        raw = read(h.phoff + i * h.phentsize, 56 if h.elf64 else 32)
        if h.elf64:
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(h.endian + "IIQQQQ", raw)
        else:
            p_type, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(h.endian + "IIIII", raw)
        out.append(Segment(p_type, p_offset, p_vaddr, p_filesz))
    return tuple(out)


def dynamic_segment(member: str, segs: tuple[Segment, ...], size: int) -> Segment | None:
    """The first ``PT_DYNAMIC`` (the one ld.so uses), checked to lie inside the file; its size is
    capped at ``MAX_DYNAMIC_ENTRIES`` entries (what is read of it, so what is kept in memory)."""
    dyn = next((s for s in segs if s.type == PT_DYNAMIC), None)
    if dyn is None:
        return None
    if dyn.offset + dyn.filesz > size:
        raise WheelReadError(f"{member}: truncated ELF: PT_DYNAMIC ends past the file")
    return Segment(dyn.type, dyn.offset, dyn.vaddr, min(dyn.filesz, MAX_DYNAMIC_ENTRIES * 16))


def file_offset(segs: tuple[Segment, ...], vaddr: int) -> int:
    """Map a virtual address to a file offset through the ``PT_LOAD`` segments (as ld.so does)."""
    for seg in segs:
        if seg.type == PT_LOAD and seg.vaddr <= vaddr < seg.vaddr + seg.filesz:
            return vaddr - seg.vaddr + seg.offset
    raise Unmappable(f"address {vaddr:#x} lies in no PT_LOAD segment's file bytes")


def dynamic_table(
    member: str, h: ElfHeader, segs: tuple[Segment, ...], dyn: Segment, read: Read
) -> DynamicTable:
    entry = 16 if h.elf64 else 8
    fmt = h.endian + ("qQ" if h.elf64 else "iI")
    count = min(dyn.filesz // entry, MAX_DYNAMIC_ENTRIES)
    raw = read(dyn.offset, count * entry)
    needed: list[int] = []
    rpath: list[int] = []
    runpath: list[int] = []
    values: dict[int, int] = {}
    soname: int | None = None
    for tag, value in struct.iter_unpack(fmt, raw):
        if tag == DT_NULL:
            break
        if tag == DT_NEEDED:
            needed.append(value)
        elif tag == DT_SONAME:
            soname = value
        elif tag == DT_RPATH:
            rpath.append(value)
        elif tag == DT_RUNPATH:
            runpath.append(value)
        elif tag in (DT_STRTAB, DT_STRSZ, DT_VERNEED, DT_VERNEEDNUM):
            values.setdefault(tag, value)
    strtab = values.get(DT_STRTAB)
    verneed = values.get(DT_VERNEED)
    uses_strings = bool(needed or rpath or runpath or soname is not None or verneed is not None)
    if strtab is None and uses_strings:
        raise WheelReadError(f"{member}: malformed ELF: dynamic section names strings but has no DT_STRTAB")
    return DynamicTable(
        needed=tuple(needed),
        soname=soname,
        rpath=tuple(rpath),
        runpath=tuple(runpath),
        strtab=None if strtab is None else file_offset(segs, strtab),
        strsz=values.get(DT_STRSZ, 0),
        verneed=None if verneed is None else file_offset(segs, verneed),
        verneednum=values.get(DT_VERNEEDNUM),
    )


class _Strings:
    def __init__(self, member: str, data: bytes) -> None:
        self.member = member
        self.data = data

    def get(self, offset: int) -> str:
        end = self.data.find(b"\0", offset)
        if offset >= len(self.data) or end == -1:
            raise WheelReadError(
                f"{self.member}: malformed ELF: string at {offset} lies outside the dynamic string table "
                f"({len(self.data)} bytes)"
            )
        return self.data[offset:end].decode("latin-1")  # as pyelftools decodes


def _split_paths(strings: _Strings, offsets: tuple[int, ...]) -> tuple[str, ...]:
    return tuple(part for at in offsets for part in strings.get(at).split(":") if part)


def resolve(member: str, h: ElfHeader, table: DynamicTable, read: Read, size: int) -> LoaderView:
    """The loader's view, from the tables ``table`` points at (MissingRange while bytes are absent)."""
    if table.strtab is not None and table.strtab + table.strsz > size:
        raise WheelReadError(f"{member}: truncated ELF: DT_STRTAB ends past the file")
    strings = _Strings(member, read(table.strtab, table.strsz) if table.strtab is not None else b"")
    version_needs: dict[str, set[str]] = {}
    if table.verneed is not None:
        version_needs = _version_needs(member, h, table, strings, read, size)
    return LoaderView(
        needed=tuple(strings.get(at) for at in table.needed),
        soname=None if table.soname is None else strings.get(table.soname),
        rpath=_split_paths(strings, table.rpath),
        runpath=_split_paths(strings, table.runpath),
        version_needs={lib: tuple(sorted(names)) for lib, names in sorted(version_needs.items())},
        mentions_hip_register=HIP_REGISTER in strings.data,
    )


def _version_needs(
    member: str, h: ElfHeader, table: DynamicTable, strings: _Strings, read: Read, size: int
) -> dict[str, set[str]]:
    """Walk ``Elf_Verneed``/``Elf_Vernaux`` as glibc's ``_dl_check_map_versions`` does: follow
    ``vn_next`` until it is 0 (at most DT_VERNEEDNUM entries), ``vna_next`` likewise."""
    assert table.verneed is not None
    fmt_need = h.endian + "HHIII"
    fmt_aux = h.endian + "IHHII"
    out: dict[str, set[str]] = {}
    at = table.verneed
    limit = table.verneednum if table.verneednum is not None else MAX_VERNEED_ENTRIES
    seen = 0
    for _ in range(min(limit, MAX_VERNEED_ENTRIES)):
        if at + 16 > size:
            raise WheelReadError(f"{member}: malformed ELF: version-needs entry at {at} lies past the file")
        _version, cnt, vn_file, vn_aux, vn_next = struct.unpack(fmt_need, read(at, 16))
        names = out.setdefault(strings.get(vn_file), set())
        aux = at + vn_aux
        for _ in range(cnt):
            seen += 1
            if seen > MAX_VERNEED_ENTRIES or aux + 16 > size:
                raise WheelReadError(f"{member}: malformed ELF: version-needs table runs past the file")
            _hash, _flags, _other, vna_name, vna_next = struct.unpack(fmt_aux, read(aux, 16))
            names.add(strings.get(vna_name))
            if vna_next == 0:
                break
            aux += vna_next
        if vn_next == 0:
            break
        at += vn_next
    return out


def require(read: Read) -> Read:
    """Wrap a reader that may return short data into one that raises MissingRange instead."""

    def exact(offset: int, size: int) -> bytes:
        data = read(offset, size)
        if len(data) < size:
            raise MissingRange(offset + len(data), size - len(data))
        return data

    return exact
