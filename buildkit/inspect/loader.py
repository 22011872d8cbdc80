"""What the dynamic loader reads of an ELF, located the way ``ld.so`` locates it.

The ELF header gives the program headers; ``PT_DYNAMIC`` gives the dynamic section; its entries
(``DT_NEEDED``, ``DT_SONAME``, ``DT_RPATH``, ``DT_RUNPATH``, ``DT_STRTAB``/``DT_STRSZ``,
``DT_VERNEED``/``DT_VERNEEDNUM``) are string offsets and virtual addresses, mapped to file offsets
through the ``PT_LOAD`` segments. The dynamic symbol table (``DT_SYMTAB``, its length from
``DT_HASH``/``DT_GNU_HASH``) is scanned for undefined, non-weak symbols (:class:`UndefinedScan`),
and the ``PT_GNU_PROPERTY`` (else ``PT_NOTE``) segment of an x86 object gives its
``GNU_PROPERTY_X86_ISA_1_NEEDED`` bitmask. No section header is read: those sit at the end of the file, while
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

import bisect
import functools
import struct
import sys
from array import array
from collections.abc import Callable, Collection, Iterator
from typing import NamedTuple

from buildkit.errors import WheelReadError
from buildkit.inspect.sparse import MissingRange

ELF_MAGIC = b"\x7fELF"
PT_LOAD = 1
PT_DYNAMIC = 2
PT_NOTE = 4
PT_GNU_PROPERTY = 0x6474E553
DT_NULL = 0
DT_NEEDED = 1
DT_HASH = 4
DT_STRTAB = 5
DT_SYMTAB = 6
DT_STRSZ = 10
DT_GNU_HASH = 0x6FFFFEF5
DT_SONAME = 14
DT_RPATH = 15
DT_RUNPATH = 29
DT_VERNEED = 0x6FFFFFFE
DT_VERNEEDNUM = 0x6FFFFFFF
DT_VERSYM = 0x6FFFFFF0
MAX_DYNAMIC_ENTRIES = 1 << 16
MAX_VERNEED_ENTRIES = 1 << 16
MAX_SYMBOLS = 1 << 24  # dynamic symbols one ELF may declare (libtorch_cpu.so has ~10^5)
MAX_NOTE_BYTES = 64 * 1024  # read of one note segment (a GNU property note is 32 bytes)
MAX_NOTE_SEGMENTS = 16
EM_386 = 3
EM_X86_64 = 62
SHN_UNDEF = 0
STB_WEAK = 2
NT_GNU_PROPERTY_TYPE_0 = 5
GNU_PROPERTY_X86_ISA_1_NEEDED = 0xC0008002
_HASH_BLOCK = 4096
_MAX_CHAIN_BYTES = 1 << 20  # one hash chain (real ones hold a handful of symbols)
HIP_REGISTER = b"\0__hipRegisterFatBinary\0"

Read = Callable[[int, int], bytes]


# the machines of real wheels, named as pyelftools names them (a test keeps the two equal)
_COMMON_MACHINES = {
    3: "EM_386",
    20: "EM_PPC",
    21: "EM_PPC64",
    22: "EM_S390",
    40: "EM_ARM",
    62: "EM_X86_64",
    183: "EM_AARCH64",
    224: "EM_AMDGPU",
    243: "EM_RISCV",
    258: "EM_LOONGARCH",
}


@functools.cache
def _machine_names() -> dict[int, str]:
    """pyelftools' ``EM_*`` names by value (its enums module takes ~15 ms to import: only when asked)."""
    from elftools.elf.enums import ENUM_E_MACHINE  # about 15 ms: only when a name is asked for

    return {value: name for name, value in ENUM_E_MACHINE.items() if name != "_default_"}


class Unmappable(Exception):
    """The dynamic entries point outside every ``PT_LOAD`` segment (the caller falls back to the
    section headers, as pyelftools and auditwheel would read them)."""


class ElfHeader(NamedTuple):
    """The ELF file header fields the loader route needs (class, byte order, machine, tables)."""

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
    def byte_order(self) -> str:
        """``"little"`` or ``"big"`` (``e_ident[EI_DATA]``)."""
        return "little" if self.endian == "<" else "big"

    @property
    def sym_size(self) -> int:
        """``sizeof(ElfW(Sym))``: what ld.so steps by (``DT_SYMENT`` is not consulted, as by ld.so)."""
        return 24 if self.elf64 else 16

    @property
    def machine_name(self) -> str:
        """pyelftools' name without ``EM_``, lower case (``"x86_64"``, ``"aarch64"``)."""
        name = _COMMON_MACHINES.get(self.machine) or _machine_names().get(self.machine)
        return str(self.machine) if name is None else name.removeprefix("EM_").lower()


class Segment(NamedTuple):
    """One program header: its type, where its bytes are in the file and where they load."""

    type: int
    offset: int
    vaddr: int
    filesz: int
    align: int = 0


class DynamicTable(NamedTuple):
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
    symtab: int | None = None
    hash: int | None = None  # DT_HASH
    gnu_hash: int | None = None  # DT_GNU_HASH
    #: DT_VERSYM's virtual address, not mapped (only :mod:`~buildkit.inspect.symtab` reads the table,
    #: and maps it itself: an odd value must not change how the rest of the loader data is read)
    versym_addr: int | None = None

    def ranges(self) -> list[tuple[int, int]]:
        """The byte ranges the rest of the parse needs (the version-needs table's size is unknown
        until it is walked: a first window is asked for, the walk asks for more if it must)."""
        out = []
        if self.strtab is not None:
            out.append((self.strtab, self.strsz))
        if self.verneed is not None:
            out.append((self.verneed, 4096))
        return out


class LoaderView(NamedTuple):
    """What the dynamic loader reads of an ELF: needed libraries, SONAME, search paths, version needs."""

    needed: tuple[str, ...]
    soname: str | None
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    version_needs: dict[str, tuple[str, ...]]
    mentions_hip_register: bool
    undefined_of_interest: tuple[str, ...] = ()

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
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz, _memsz, p_align = struct.unpack_from(
                h.endian + "IIQQQQQQ", raw
            )
        else:
            p_type, p_offset, p_vaddr, _paddr, p_filesz, _memsz, _flags, p_align = struct.unpack_from(
                h.endian + "IIIIIIII", raw
            )
        out.append(Segment(p_type, p_offset, p_vaddr, p_filesz, p_align))
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
        elif tag in (
            DT_STRTAB, DT_STRSZ, DT_VERNEED, DT_VERNEEDNUM, DT_SYMTAB, DT_HASH, DT_GNU_HASH, DT_VERSYM
        ):  # fmt: skip
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
        symtab=_mapped(segs, values.get(DT_SYMTAB)),
        hash=_mapped(segs, values.get(DT_HASH)),
        gnu_hash=_mapped(segs, values.get(DT_GNU_HASH)),
        versym_addr=values.get(DT_VERSYM),
    )


def _mapped(segs: tuple[Segment, ...], vaddr: int | None) -> int | None:
    return None if vaddr is None else file_offset(segs, vaddr)


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


def resolve(
    member: str,
    h: ElfHeader,
    table: DynamicTable,
    read: Read,
    size: int,
    undefined: UndefinedScan | None = None,
    interest: Collection[str] = (),
) -> LoaderView:
    """The loader's view, from the tables ``table`` points at (MissingRange while bytes are absent);
    ``undefined`` (a finished scan of ``.dynsym``) gives the undefined names, kept when in ``interest``."""
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
        undefined_of_interest=() if undefined is None else undefined.names(strings, interest),
    )


def _version_needs(
    member: str, h: ElfHeader, table: DynamicTable, strings: _Strings, read: Read, size: int
) -> dict[str, set[str]]:
    """Library -> the version names the object needs of it (:func:`version_need_entries`)."""
    out: dict[str, set[str]] = {}
    for library, auxes in version_need_entries(member, h, table, strings, read, size):
        out.setdefault(library, set()).update(name for _other, name in auxes)
    return out


def version_need_entries(
    member: str, h: ElfHeader, table: DynamicTable, strings: _Strings, read: Read, size: int
) -> Iterator[tuple[str, list[tuple[int, str]]]]:
    """Each ``Elf_Verneed`` as (``vn_file``, [(``vna_other``, ``vna_name``), ...]), walked as glibc's
    ``_dl_check_map_versions`` does: follow ``vn_next`` until it is 0 (at most DT_VERNEEDNUM
    entries), ``vna_next`` likewise, every entry bounds-checked against ``size``."""
    assert table.verneed is not None
    fmt_need = h.endian + "HHIII"
    fmt_aux = h.endian + "IHHII"
    at = table.verneed
    limit = table.verneednum if table.verneednum is not None else MAX_VERNEED_ENTRIES
    seen = 0
    for _ in range(min(limit, MAX_VERNEED_ENTRIES)):
        if at + 16 > size:
            raise WheelReadError(f"{member}: malformed ELF: version-needs entry at {at} lies past the file")
        _version, cnt, vn_file, vn_aux, vn_next = struct.unpack(fmt_need, read(at, 16))
        auxes: list[tuple[int, str]] = []
        aux = at + vn_aux
        for _ in range(cnt):
            seen += 1
            if seen > MAX_VERNEED_ENTRIES or aux + 16 > size:
                raise WheelReadError(f"{member}: malformed ELF: version-needs table runs past the file")
            _hash, _flags, other, vna_name, vna_next = struct.unpack(fmt_aux, read(aux, 16))
            auxes.append((other, strings.get(vna_name)))
            if vna_next == 0:
                break
            aux += vna_next
        yield strings.get(vn_file), auxes
        if vn_next == 0:
            break
        at += vn_next


def symbol_count(member: str, h: ElfHeader, table: DynamicTable, read: Read, size: int) -> int:
    """How many entries ``.dynsym`` has, as the hash tables say (the loader's only measure of it:
    ``DT_HASH``'s ``nchain``, else the end of ``DT_GNU_HASH``'s last chain). Without either (a file
    the loader could not look symbols up in), the entries up to ``DT_STRTAB`` when it follows.
    WheelReadError when the table would run past the file or beyond ``MAX_SYMBOLS``."""
    if table.symtab is None:
        return 0
    count: int
    if table.hash is not None:
        _fits(member, "DT_HASH", table.hash, 8, size)
        count = struct.unpack(h.endian + "I", read(table.hash + 4, 4))[0]
    elif table.gnu_hash is not None:
        count = _gnu_hash_count(member, h, table.gnu_hash, read, size)
    elif table.strtab is not None and table.strtab > table.symtab:
        count = min((table.strtab - table.symtab) // h.sym_size, MAX_SYMBOLS)
    else:
        count = 0
    if count > MAX_SYMBOLS:
        raise WheelReadError(f"{member}: malformed ELF: {count} dynamic symbols (limit {MAX_SYMBOLS})")
    _fits(member, "the dynamic symbol table", table.symtab, count * h.sym_size, size)
    return count


def _fits(member: str, what: str, start: int, length: int, size: int) -> None:
    if start + length > size:
        raise WheelReadError(
            f"{member}: malformed ELF: {what} ({length} bytes at {start}) runs past the file"
        )


def _gnu_hash_count(member: str, h: ElfHeader, at: int, read: Read, size: int) -> int:
    """Symbols up to the end of the chain of the highest bucket (undefined symbols come before
    ``symoffset``, hashed ones after it, in bucket order)."""
    _fits(member, "DT_GNU_HASH", at, 16, size)
    nbuckets: int
    symoffset: int
    nbuckets, symoffset, bloom_size, _shift = struct.unpack(h.endian + "IIII", read(at, 16))
    if nbuckets > MAX_SYMBOLS or symoffset > MAX_SYMBOLS:
        raise WheelReadError(f"{member}: malformed ELF: DT_GNU_HASH declares {nbuckets} buckets")
    buckets = at + 16 + bloom_size * (8 if h.elf64 else 4)
    _fits(member, "DT_GNU_HASH's buckets", buckets, nbuckets * 4, size)
    values = array("I", read(buckets, nbuckets * 4))
    if h.byte_order != sys.byteorder:
        values.byteswap()
    top = max(values, default=0)
    del values
    if top == 0 or top < symoffset:  # no hashed symbol (bucket 0 is empty): only the unhashed ones
        return int(symoffset)
    chain = buckets + nbuckets * 4 + (top - symoffset) * 4
    end = min(chain + _MAX_CHAIN_BYTES, size // 4 * 4)
    index, start = top, chain
    while chain + 4 <= end:
        # a chain is a few words: a first block; one that does not end there is asked for whole
        block = _kept_prefix(read, chain, min(_HASH_BLOCK, end - chain), chain if chain == start else end)
        for (value,) in struct.iter_unpack(h.endian + "I", block):
            index += 1
            if value & 1:
                return index
        chain += len(block)
    raise WheelReadError(
        f"{member}: malformed ELF: DT_GNU_HASH's chain from symbol {top} does not end within "
        f"{_MAX_CHAIN_BYTES // 4} entries or before the end of the file"
    )


def _kept_prefix(read: Read, offset: int, length: int, ask_to: int) -> bytes:
    """The bytes at ``offset`` up to ``length`` (whole words), or as many as are kept; when none
    are, MissingRange for ``length`` bytes, or up to ``ask_to`` when that is further."""
    try:
        return read(offset, length)
    except MissingRange as missing:
        kept = (missing.offset - offset) // 4 * 4
        if kept > 0:
            return read(offset, kept)
        raise MissingRange(offset, max(length, ask_to - offset)) from None


class UndefinedScan:
    """The undefined (``st_shndx == SHN_UNDEF``), non-weak entries of ``.dynsym`` (``count`` entries
    at file offset ``start``), scanned as its bytes stream by: only their ``st_name`` offsets and
    indices are kept (8 bytes each), never the table itself.

    ``count`` may be unknown (None) when the scan starts (lld puts ``.gnu.hash`` after ``.dynsym``):
    the scan then goes on, up to ``limit`` (a file offset the table cannot pass, e.g. ``DT_STRTAB``),
    until :meth:`set_count` says where the table ends, and forgets what it read past that."""

    def __init__(self, start: int, count: int | None, h: ElfHeader, limit: int | None = None) -> None:
        self.start = start
        self.count = count
        self.limit = start if limit is None else max(start, limit)
        self.position = start  # the next byte of the table to scan
        self._entry = h.sym_size
        self._format = h.endian + ("IBBH16x" if h.elf64 else "I8xBBH")
        self._partial = b""
        self._offsets: array[int] = array("I")
        self._indices: array[int] = array("I")
        self._scanned = 0  # entries scanned

    @property
    def end(self) -> int:
        if self.count is None:
            return self.limit
        return self.start + self.count * self._entry

    def set_count(self, count: int) -> None:
        """The table has ``count`` entries: entries scanned past it were other data."""
        self.count = count
        cut = bisect.bisect_left(self._indices, count)
        del self._offsets[cut:], self._indices[cut:]
        if self.position > self.end:
            self.position, self._partial, self._scanned = self.end, b"", count

    @property
    def done(self) -> bool:
        return self.count is not None and self.position >= self.end

    def feed(self, offset: int, data: bytes | memoryview) -> None:
        """Scan ``data`` (the bytes at ``offset``) from where the scan stands; bytes before that are
        ignored (feeding twice is harmless), data that starts past it leaves the scan where it is."""
        if self.done or not offset <= self.position < min(offset + len(data), self.end):
            return
        take = memoryview(data)[self.position - offset : self.end - offset]
        self.position += len(take)
        if self._partial:
            need = self._entry - len(self._partial)
            head = self._partial + bytes(take[:need])
            take = take[need:]
            if len(head) < self._entry:
                self._partial = head
                return
            self._partial = b""
            self._scan(head)
        usable = len(take) // self._entry * self._entry
        self._scan(take[:usable])
        self._partial = bytes(take[usable:])

    def _scan(self, table: bytes | memoryview) -> None:
        first = self._scanned
        self._scanned += len(table) // self._entry
        for index, (name, info, _other, shndx) in enumerate(struct.iter_unpack(self._format, table), first):
            if shndx == SHN_UNDEF and name and info >> 4 != STB_WEAK:
                self._offsets.append(name)
                self._indices.append(index)

    def names(self, strings: _Strings, interest: Collection[str]) -> tuple[str, ...]:
        """The undefined names that are in ``interest``, sorted (a name outside the string table is
        an error, as for every other dynamic string: the first such offset is named)."""
        data = strings.data
        last = data.rfind(b"\0")  # an offset at or before the last NUL has a terminated string
        if self._offsets and max(self._offsets) > last:
            strings.get(next(at for at in self._offsets if at > last))  # raises, naming that offset
        wanted = _latin1(interest)  # get() decodes latin-1
        find = data.find
        found: set[bytes] = set()
        for at in self._offsets:  # one name at a time, compared as bytes: never all the names at once
            name = data[at : find(b"\0", at)]
            if name in wanted:
                found.add(name)
        return tuple(sorted(name.decode("latin-1") for name in found))


def _latin1(names: Collection[str]) -> set[bytes]:
    """``names`` as the bytes a latin-1 string table holds them in (a name latin-1 cannot encode is in
    no such table)."""
    out = set()
    for name in names:
        try:
            out.add(name.encode("latin-1"))
        except UnicodeEncodeError:
            continue
    return out


def note_segments(h: ElfHeader, segs: tuple[Segment, ...], size: int) -> tuple[Segment, ...]:
    """Where an x86 object's GNU property note lies: ``PT_GNU_PROPERTY`` (as ld.so reads it), else
    the ``PT_NOTE`` segments; each clipped to the file and to ``MAX_NOTE_BYTES`` (a note past the
    file is ignored, as the loader ignores it)."""
    if h.machine not in (EM_X86_64, EM_386):
        return ()
    chosen = [s for s in segs if s.type == PT_GNU_PROPERTY][:1] or [s for s in segs if s.type == PT_NOTE]
    out = []
    for seg in chosen[:MAX_NOTE_SEGMENTS]:
        length = min(seg.filesz, MAX_NOTE_BYTES, max(0, size - seg.offset))
        if length >= 12:
            out.append(Segment(seg.type, seg.offset, seg.vaddr, length, seg.align))
    return tuple(out)


def x86_isa_needed(h: ElfHeader, notes: tuple[Segment, ...], read: Read) -> int | None:
    """``GNU_PROPERTY_X86_ISA_1_NEEDED`` of the first GNU ``NT_GNU_PROPERTY_TYPE_0`` note (the one
    glibc and auditwheel use), ``None`` without one. A note or property whose size runs past its
    segment ends the walk (ignored, not an error)."""
    for seg in notes:
        data = read(seg.offset, seg.filesz)
        align = 8 if seg.align == 8 else 4
        at = 0
        while at + 12 <= len(data):
            namesz, descsz, kind = struct.unpack_from(h.endian + "III", data, at)
            desc = at + 12 + _round(namesz, 4)
            if desc + descsz > len(data):
                break
            if kind == NT_GNU_PROPERTY_TYPE_0 and data[at + 12 : at + 12 + namesz] == b"GNU\0":
                return _isa_property(h, data[desc : desc + descsz])
            at = desc + _round(descsz, align)
    return None


def _isa_property(h: ElfHeader, desc: bytes) -> int | None:
    at = 0
    while at + 8 <= len(desc):
        kind, datasz = struct.unpack_from(h.endian + "II", desc, at)
        if at + 8 + datasz > len(desc):
            return None
        if kind == GNU_PROPERTY_X86_ISA_1_NEEDED and datasz == 4:
            value: int = struct.unpack_from(h.endian + "I", desc, at + 8)[0]
            return value
        at += 8 + _round(datasz, 8 if h.elf64 else 4)
    return None


def _round(value: int, align: int) -> int:
    return (value + align - 1) // align * align


def require(read: Read) -> Read:
    """Wrap a reader that may return short data into one that raises MissingRange instead."""

    def exact(offset: int, size: int) -> bytes:
        data = read(offset, size)
        if len(data) < size:
            raise MissingRange(offset + len(data), size - len(data))
        return data

    return exact
