"""The whole dynamic symbol table of an ELF member, streamed: every name it exports and every name
it imports, with the symbol version (and the library of that version) each import needs.

:mod:`~buildkit.inspect.elf` reads what the gate needs of every member and keeps only a few
undefined names; the ``torch-abi`` rule needs all of them (the symbols an extension needs from
torch) and every export of torch's own libraries. Both come from the same tables ``ld.so`` binds
symbols with: ``.dynsym`` (``DT_SYMTAB``, its length from ``DT_HASH``/``DT_GNU_HASH``), ``.dynstr``
(``DT_STRTAB``), ``.gnu.version`` (``DT_VERSYM``) and ``.gnu.version_r`` (``DT_VERNEED``), located
through ``PT_DYNAMIC`` as :mod:`~buildkit.inspect.loader` locates them. No section header is read.

Streaming keeps the ranges :mod:`~buildkit.inspect.elf` keeps (:class:`~buildkit.inspect.limits.Limits`:
``head_bytes``, ``dynamic_reach``) and stops as soon as every table is kept, a second pass keeping
exactly the ranges a first one let past. The bytes after the tables (code, data, debug info: 95 % of
``libtorch_cpu.so``) are inflated up to ``PT_DYNAMIC`` at most and never kept. Memory: the kept ranges
(about 12 MiB for ``libtorch_cpu.so``: 1.8 MiB of ``.dynsym``, 5 MiB of ``.dynstr``) plus the names kept.

An export is a defined symbol (``st_shndx != SHN_UNDEF``) of global, weak or unique binding and
default or protected visibility that is not local by its version index (``0``) nor hidden (a
non-default version, ``@`` rather than ``@@``: an unversioned reference cannot bind to it). An import
is an undefined symbol with a name; weak ones are marked (``ld.so`` loads the object without them).
"""

from __future__ import annotations

import contextlib
import functools
import os
import struct
import sys
import zipfile
from array import array
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from buildkit.errors import WheelReadError
from buildkit.inspect import loader
from buildkit.inspect.elf import member_chunks
from buildkit.inspect.limits import Limits
from buildkit.inspect.loader import ELF_MAGIC, ElfHeader, Read
from buildkit.inspect.sparse import MissingRange, SparseBuffer
from buildkit.manifest import sha256_fd

if TYPE_CHECKING:
    from buildkit.inspect.wheel import WheelHandle

__all__ = ["Imported", "SymbolTable", "WheelSymbols", "read_symbol_table", "wheel_symbol_tables"]

_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE = 1, 2, 10
_STT_SECTION, _STT_FILE = 3, 4
_STV_DEFAULT, _STV_PROTECTED = 0, 3
_VERSYM_HIDDEN = 0x8000
_MAX_PASSES = 2
_ATTEMPTS = 64  # locate rounds per chunk: each may find the next table inside this very chunk


@dataclass(frozen=True)
class Imported:
    """One undefined dynamic symbol: its name, whether it is weak, and the symbol version it needs
    (``GLIBCXX_3.4.21``) with the DT_NEEDED file that version belongs to (``libstdc++.so.6``);
    ``version``/``library`` None: an unversioned reference, bound to whichever loaded object
    exports the name first."""

    name: str
    weak: bool = False
    version: str | None = None
    library: str | None = None


@dataclass(frozen=True)
class SymbolTable:
    """The dynamic symbols of one ELF member (see the module docstring for what counts)."""

    member: str
    soname: str | None
    needed: tuple[str, ...]
    exported: frozenset[str]
    imported: tuple[Imported, ...]
    bytes_read: int = 0
    passes: int = 1


@dataclass(frozen=True)
class _Located:
    header: ElfHeader
    soname: str | None
    needed: tuple[str, ...]
    symtab: int
    count: int
    strtab: int
    strsz: int
    versym: int | None
    versions: dict[int, tuple[str, str]]  # version index -> (library, version name)

    def ranges(self) -> list[tuple[int, int]]:
        out = [(self.symtab, self.count * self.header.sym_size), (self.strtab, self.strsz)]
        if self.versym is not None:
            out.append((self.versym, self.count * 2))
        return [(start, length) for start, length in out if length > 0]


def _locate(member: str, read: Read, size: int) -> _Located | None:
    """Where the tables are (MissingRange while bytes are absent); None for an ELF without
    ``PT_DYNAMIC`` (an object file or a static executable: ld.so binds nothing of it)."""
    if size < 52:
        raise WheelReadError(f"{member}: truncated ELF header ({size} bytes)")
    h = loader.parse_header(member, read(0, min(64, size)), size)
    segs = loader.segments(h, read)
    dyn = loader.dynamic_segment(member, segs, size)
    if dyn is None:
        return None
    try:
        table = loader.dynamic_table(member, h, segs, dyn, read)
        versym = None if table.versym_addr is None else loader.file_offset(segs, table.versym_addr)
    except loader.Unmappable as err:
        raise WheelReadError(f"{member}: malformed ELF: a dynamic entry maps to no segment: {err}") from None
    if table.strtab is not None and table.strtab + table.strsz > size:
        raise WheelReadError(f"{member}: truncated ELF: DT_STRTAB ends past the file")
    count = loader.symbol_count(member, h, table, read, size)
    if table.symtab is None or table.strtab is None or count == 0:
        names = loader._Strings(member, read(table.strtab, table.strsz) if table.strtab is not None else b"")
        return _Located(h, _soname(names, table), _needed(names, table), 0, 0, 0, 0, None, {})
    if versym is not None and versym + count * 2 > size:
        raise WheelReadError(f"{member}: malformed ELF: DT_VERSYM's table runs past the file")
    strings = loader._Strings(member, read(table.strtab, table.strsz))
    versions = _version_indices(member, h, table, strings, read, size)
    return _Located(
        h,
        _soname(strings, table),
        _needed(strings, table),
        table.symtab,
        count,
        table.strtab,
        table.strsz,
        versym,
        versions,
    )


def _soname(strings: loader._Strings, table: loader.DynamicTable) -> str | None:
    return None if table.soname is None else strings.get(table.soname)


def _needed(strings: loader._Strings, table: loader.DynamicTable) -> tuple[str, ...]:
    return tuple(strings.get(at) for at in table.needed)


def _version_indices(
    member: str, h: ElfHeader, table: loader.DynamicTable, strings: loader._Strings, read: Read, size: int
) -> dict[int, tuple[str, str]]:
    """``vna_other`` (the index ``.gnu.version`` entries use) -> (``vn_file``, ``vna_name``), walked
    by :func:`buildkit.inspect.loader.version_need_entries` (the loader's bounds)."""
    if table.verneed is None:
        return {}
    return {
        other: (library, name)
        for library, auxes in loader.version_need_entries(member, h, table, strings, read, size)
        for other, name in auxes
    }


def _decode(
    member: str,
    found: _Located,
    read: Read,
    keep_exported: Callable[[str], bool] | None,
    imports: bool,
) -> tuple[frozenset[str], tuple[Imported, ...]]:
    h = found.header
    entry = h.sym_size
    raw = read(found.symtab, found.count * entry)
    strings = read(found.strtab, found.strsz)
    versyms: array[int] | None = None
    if found.versym is not None:
        versyms = array("H", read(found.versym, found.count * 2))
        if h.byte_order != sys.byteorder:
            versyms.byteswap()
    fmt = h.endian + ("IBBH16x" if h.elf64 else "I8xBBH")
    exported: set[str] = set()
    imported: list[Imported] = []
    length = len(strings)
    for index, (name_at, info, other, shndx) in enumerate(struct.iter_unpack(fmt, raw)):
        if name_at == 0:
            continue
        end = strings.find(b"\0", name_at)
        if name_at >= length or end == -1:
            raise WheelReadError(
                f"{member}: malformed ELF: symbol name at {name_at} lies outside the dynamic string table "
                f"({length} bytes)"
            )
        bind = info >> 4
        ver = versyms[index] if versyms is not None else 1
        if shndx == loader.SHN_UNDEF:
            if not imports:
                continue
            library, version = found.versions.get(ver & 0x7FFF, (None, None))
            name = strings[name_at:end].decode("latin-1")
            imported.append(Imported(name, bind == _STB_WEAK, version, library))
            continue
        if bind not in (_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE) or other & 3 not in (
            _STV_DEFAULT,
            _STV_PROTECTED,
        ):
            continue
        if info & 0xF in (_STT_SECTION, _STT_FILE) or ver & _VERSYM_HIDDEN or ver & 0x7FFF == 0:
            continue
        name = strings[name_at:end].decode("latin-1")
        if keep_exported is None or keep_exported(name):
            exported.add(name)
    return frozenset(exported), tuple(imported)


class _Pass:
    """One front-to-back read keeping the planned ranges; :meth:`run` is True once every table was
    kept (``located`` then says where), False when one streamed past unkept (``behind``)."""

    def __init__(self, member: str, size: int, limits: Limits, keep: list[tuple[int, int]]) -> None:
        self.member = member
        self.size = size
        self.limits = limits
        self.buf = SparseBuffer(size)
        self.buf.want(0, 4096 if keep else limits.head_bytes)
        for start, length in keep:
            self.buf.want(start, length)
        self.read = loader.require(self.buf.read)
        self.behind: list[tuple[int, int]] = []
        self.located: _Located | None = None
        self.empty = False  # an ELF without PT_DYNAMIC
        self.bytes_read = 0
        self._waiting = 0
        self._reach_planned = False

    def run(self, stream: IO[bytes]) -> bool:
        for offset, chunk in member_chunks(self.member, stream, self.size, self.limits.chunk_size):
            self.bytes_read += len(chunk)
            self.buf.feed(offset, chunk)
            if offset + len(chunk) >= self._waiting:
                if self._attempt(offset, chunk):
                    return True
                if self.behind:
                    return False
        if not self._attempt(self.size, b"") and not self.behind:
            raise WheelReadError(
                f"{self.member}: malformed ELF: its dynamic tables lie past the end of the file"
            )
        return not self.behind

    def _attempt(self, offset: int, chunk: bytes) -> bool:
        """Locate the tables and check they are all kept; a range still to come is kept when it comes
        by, one already past is left to the next pass."""
        for _ in range(_ATTEMPTS):
            try:
                self._keep_before_dynamic(offset, chunk)
                located = _locate(self.member, self.read, self.size)
                if located is None:
                    self.empty = True
                    return True
                for start, length in located.ranges():
                    if not self.buf.has(start, length):
                        raise MissingRange(start, length)
                self.located = located
                return True
            except MissingRange as missing:
                start, length = missing.offset, max(missing.size, 4096)
                if not self.buf.want(start, length, available_from=offset):
                    self.behind.append((missing.offset, missing.size))
                    return False
                self.buf.feed(offset, chunk)
                if not self.buf.has(missing.offset, missing.size):
                    self._waiting = missing.offset + missing.size
                    return False
        raise WheelReadError(f"{self.member}: malformed ELF: its dynamic tables could not be located")

    def _keep_before_dynamic(self, offset: int, chunk: bytes) -> None:
        """Once the program headers are kept: keep ``PT_DYNAMIC`` and up to ``dynamic_reach`` of its
        ``PT_LOAD`` segment before it (patchelf, as auditwheel repair runs it, moves ``.dynstr``,
        ``.dynsym`` and ``.gnu.version*`` into a new segment next to ``.dynamic``)."""
        if self._reach_planned:
            return
        h = loader.parse_header(self.member, self.read(0, min(64, self.size)), self.size)
        segs = loader.segments(h, self.read)
        self._reach_planned = True
        dyn = loader.dynamic_segment(self.member, segs, self.size)
        if dyn is None:
            return
        home = next(
            (
                s.offset
                for s in segs
                if s.type == loader.PT_LOAD and s.offset <= dyn.offset < s.offset + s.filesz
            ),
            dyn.offset,
        )
        start = max(home, dyn.offset - self.limits.dynamic_reach)
        if self.buf.want(start, dyn.offset + dyn.filesz - start, available_from=offset):
            self.buf.feed(offset, chunk)

    def carry(self) -> list[tuple[int, int]]:
        """What the next pass keeps: the ranges that streamed past, and every one known."""
        keep = list(self.behind)
        with contextlib.suppress(MissingRange, WheelReadError):
            located = _locate(self.member, self.read, self.size)
            if located is not None:
                keep += located.ranges()
        total = sum(length for _start, length in keep)
        if total > self.limits.max_second_pass_bytes:
            raise WheelReadError(
                f"{self.member}: the dynamic symbol tables need {total} bytes in memory "
                f"(limit {self.limits.max_second_pass_bytes})"
            )
        return keep


def read_symbol_table(
    member: str,
    open_stream: Callable[[], IO[bytes]],
    size: int,
    limits: Limits | None = None,
    *,
    keep_exported: Callable[[str], bool] | None = None,
    imports: bool = True,
) -> SymbolTable:
    """The dynamic symbols of one ELF member whose decompressed bytes ``open_stream`` opens (called
    again for a second pass). ``keep_exported``: which exported names to keep (None: all);
    ``imports`` False: no imported name is decoded (a library read only for its exports)."""
    limits = limits or Limits()
    keep: list[tuple[int, int]] = []
    bytes_read = 0
    for passes in range(1, _MAX_PASSES + 1):
        p = _Pass(member, size, limits, keep)
        try:
            with open_stream() as stream:
                done = p.run(stream)
            bytes_read += p.bytes_read
            if p.empty:
                return SymbolTable(member, None, (), frozenset(), (), bytes_read, passes)
            if done and p.located is not None:
                exported, imported = _decode(member, p.located, p.read, keep_exported, imports)
                found = p.located
                return SymbolTable(member, found.soname, found.needed, exported, imported, bytes_read, passes)
            keep = p.carry()
        finally:
            p.buf.clear()
    raise WheelReadError(
        f"{member}: malformed ELF: its dynamic symbol tables could not be read in two passes"
    )


@dataclass(frozen=True)
class WheelSymbols:
    """The symbol tables of the chosen ELF members of one wheel, with the wheel's name, version and
    (when asked for) sha256."""

    filename: str
    name: str
    version: str
    tables: dict[str, SymbolTable]
    sha256: str | None = None
    texts: dict[str, bytes] = field(default_factory=dict)  # the small members asked for, whole


def wheel_symbol_tables(
    path: str | os.PathLike[str] | WheelHandle,
    select: Callable[[str], bool],
    *,
    keep_exported: Callable[[str], bool] | None = None,
    imports: bool = True,
    limits: Limits | None = None,
    workers: int | None = None,
    sha256: bool = False,
    texts: Collection[str] = (),
) -> WheelSymbols:
    """The symbol tables of the members ``select`` chooses that are ELF (their first four bytes),
    read in ``workers`` threads, nothing extracted; the zip is held to the same hostile-input rules
    as :func:`~buildkit.inspect.inspect_wheel` (names, sizes, bombs, overlapping members: each a
    WheelReadError naming the wheel). ``path``: the wheel's file, or the
    :class:`~buildkit.inspect.wheel.WheelHandle` of a judgement (not opened again). ``sha256``: also
    hash the whole file, on its own thread; ``texts``: small members (at most 1 MiB each) to return
    whole, when present."""
    from buildkit.inspect import wheel as reader  # its zip checks (a module of this package)

    limits = limits or Limits()
    with reader.checked_wheel(path, limits) as (
        (wheel, (name, version, _build, _tags), fd, zf),
        infos,
        _total,
    ):
        small = {
            i.filename: reader._read_small(zf, i)
            for i in infos
            if i.filename in texts and not i.is_dir() and i.file_size <= 1024 * 1024
        }
        chosen = [i for i in infos if not i.is_dir() and i.file_size >= 52 and select(i.filename)]
        chosen.sort(key=lambda i: i.file_size, reverse=True)  # the largest first: better balance

        count = workers or reader.default_workers()
        with ThreadPoolExecutor(max_workers=count + (1 if sha256 else 0)) as pool:
            digest = pool.submit(sha256_fd, fd) if sha256 else None
            read = functools.partial(
                _member_table, fd, zf, limits, keep_exported=keep_exported, imports=imports
            )
            tables = [t for t in pool.map(read, chosen) if t is not None]
            hexdigest = digest.result() if digest is not None else None
    return WheelSymbols(
        filename=wheel.name,
        name=str(name),
        version=str(version),
        tables={t.member: t for t in sorted(tables, key=lambda t: t.member)},
        sha256=hexdigest,
        texts=small,
    )


def _member_table(
    fd: int,
    zf: zipfile.ZipFile,
    limits: Limits,
    info: zipfile.ZipInfo,
    *,
    keep_exported: Callable[[str], bool] | None,
    imports: bool,
) -> SymbolTable | None:
    """The symbol table of one member of an open wheel, None when it is not ELF."""
    from buildkit.inspect.wheel import _READ_ERRORS  # its errors of a member read (a module of this package)
    from buildkit.inspect.zipstream import open_member, sniff

    try:
        if sniff(fd, info, zf, size=4) != ELF_MAGIC:
            return None
        return read_symbol_table(
            info.filename,
            lambda: open_member(fd, info, zf),
            info.file_size,
            limits,
            keep_exported=keep_exported,
            imports=imports,
        )
    except WheelReadError:
        raise
    except _READ_ERRORS as err:
        raise WheelReadError(f"{info.filename}: cannot read member: {err}") from None


def file_symbol_tables(
    files: Iterator[Path] | list[Path],
    *,
    keep_exported: Callable[[str], bool] | None = None,
    imports: bool = True,
    limits: Limits | None = None,
) -> dict[str, SymbolTable]:
    """The symbol tables of plain files (an installed torch's ``torch/lib``), keyed by file name;
    a file that is not ELF is left out."""
    out: dict[str, SymbolTable] = {}
    for path in files:
        try:
            with path.open("rb") as handle:
                if handle.read(4) != ELF_MAGIC:
                    continue
            size = path.stat().st_size
            out[path.name] = read_symbol_table(
                path.name,
                lambda path=path: path.open("rb"),  # type: ignore[misc]
                size,
                limits,
                keep_exported=keep_exported,
                imports=imports,
            )
        except OSError as err:
            raise WheelReadError(f"{path}: cannot read: {err}") from None
    return out
