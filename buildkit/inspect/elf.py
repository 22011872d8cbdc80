"""One ELF member, streamed once from the zip: machine, SONAME, DT_NEEDED, RPATH/RUNPATH, the symbol
versions it needs (``.gnu.version_r``), its clang offload bundles, or, for an AMDGPU code object, the
target id in its header.

How memory stays bounded: the member is decompressed front to back in ``limits.chunk_size`` pieces and
only chosen ranges are kept (:class:`~buildkit.inspect.sparse.SparseBuffer`): the first
``limits.head_bytes`` (ELF and program headers, and in practice ``.dynsym``/``.dynstr``/``.gnu.version_r``,
which linkers put at the start), the section-header table and the ``limits.tail_bytes`` before it (where
``.shstrtab`` sits), ``PT_DYNAMIC``, and the headers of offload bundles (:mod:`~buildkit.inspect.offload`).
pyelftools then parses a seekable view of those ranges. When it asks for a byte that was not kept (a
library whose ``.dynstr`` is larger than the head window), the member is streamed a second time keeping
exactly the sections pyelftools needs, at most ``limits.max_second_pass_bytes``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, cast

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection, DynamicSegment
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection
from elftools.elf.sections import StringTableSection

from buildkit.errors import WheelReadError
from buildkit.inspect.codeobject import EM_AMDGPU, code_object_version, target_id_from_flags
from buildkit.inspect.limits import Limits
from buildkit.inspect.models import CodeObject, ElfInfo, Finding, OffloadEntry
from buildkit.inspect.offload import BundleError, BundleScanner
from buildkit.inspect.sparse import MissingRange, SparseBuffer, SparseStream

ELF_MAGIC = b"\x7fELF"
_SHT_DYNAMIC = 6
_SHT_GNU_VERNEED = 0x6FFFFFFE
_PT_DYNAMIC = 2
_SHT_NOBITS = 8
_SHSTRTAB_NAME = b"\0.shstrtab\0"
_SHSTRTAB_REACH = 64 * 1024
_FATBIN_SECTIONS = (".hip_fatbin",)
_STRING_SLACK = 256  # kept past the end of a string table: pyelftools reads strings in 64-byte steps


@dataclass(frozen=True)
class _Header:
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


@dataclass(frozen=True)
class ElfResult:
    elf: ElfInfo | None
    code_object: CodeObject | None
    findings: tuple[Finding, ...]
    bytes_read: int
    passes: int


def _parse_header(member: str, data: bytes, size: int) -> _Header:
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
        _ehsize,
        phentsize,
        phnum,
        shentsize,
        shnum,
        shstrndx,
    ) = fields
    header = _Header(
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


def _program_headers(h: _Header, buf: SparseBuffer) -> list[tuple[int, int, int, int]]:
    """(p_type, p_offset, p_vaddr, p_filesz) of every program header."""
    out = []
    for i in range(h.phnum):
        raw = buf.read(h.phoff + i * h.phentsize, h.phentsize)
        if h.elf64:
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(h.endian + "IIQQQQ", raw)
        else:
            p_type, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(h.endian + "IIIII", raw)
        out.append((p_type, p_offset, p_vaddr, p_filesz))
    return out


def _section_headers(h: _Header, buf: SparseBuffer) -> list[tuple[int, int, int, int, int]]:
    """(sh_name, sh_type, sh_offset, sh_size, sh_link) of every section header."""
    out = []
    for i in range(h.shnum):
        raw = buf.read(h.shoff + i * h.shentsize, h.shentsize)
        if h.elf64:
            name, typ, _flags, _addr, offset, size, link = struct.unpack_from(h.endian + "IIQQQQI", raw)
        else:
            name, typ, _flags, _addr, offset, size, link = struct.unpack_from(h.endian + "IIIIIII", raw)
        out.append((name, typ, offset, size, link))
    return out


class _Pass:
    """One front-to-back read of the member, keeping the planned ranges."""

    def __init__(self, member: str, size: int, limits: Limits, exact: list[tuple[int, int]] | None) -> None:
        self.member = member
        self.size = size
        self.limits = limits
        self.buf = SparseBuffer(size)
        self.scanner = BundleScanner(size, limits)
        self.header: _Header | None = None
        self._phdrs_done = False
        self._shstrtab_hits = 0
        self.bytes_read = 0
        if exact is None:
            self.buf.want(0, limits.head_bytes)
        else:
            self.buf.want(0, 4096)
            for start, length in exact:
                self.buf.want(start, length)

    def run(self, stream: IO[bytes], *, stop_after_header: bool = False) -> None:
        offset = 0
        previous: tuple[int, bytes] = (0, b"")
        while offset < self.size:
            chunk = stream.read(min(self.limits.chunk_size, self.size - offset))
            if not chunk:
                raise WheelReadError(
                    f"{self.member}: member ends at {offset} bytes, its header says {self.size}"
                )
            self.bytes_read += len(chunk)
            self.buf.feed(offset, chunk)
            self._plan(offset, chunk)
            if stop_after_header and self.header is not None and self.header.machine == EM_AMDGPU:
                return
            self._find_shstrtab(offset, chunk, previous)
            self.scanner.feed(offset, chunk)
            previous = (offset, chunk)
            offset += len(chunk)
        self.scanner.finish()

    def _find_shstrtab(self, offset: int, chunk: bytes, previous: tuple[int, bytes]) -> None:
        """``.shstrtab`` may sit far before the section headers (after a large ``.symtab``/``.strtab``
        or debug info): keep the neighbourhood of the ``.shstrtab`` name, which the table holds."""
        at = chunk.find(_SHSTRTAB_NAME)
        if at == -1 or self._shstrtab_hits >= 8:
            return
        self._shstrtab_hits += 1
        prev_offset, prev_chunk = previous
        if self.buf.want(offset + at - _SHSTRTAB_REACH, 2 * _SHSTRTAB_REACH, available_from=prev_offset):
            self.buf.feed(prev_offset, prev_chunk)
            self.buf.feed(offset, chunk)

    def _plan(self, offset: int, chunk: bytes) -> None:
        if self.header is None and self.buf.has(0, min(64, self.size)):
            self.header = _parse_header(self.member, self.buf.read(0, 64), self.size)
            first = self.header
            if first.machine == EM_AMDGPU:
                return
            if first.phnum:
                self.buf.want(first.phoff, first.phnum * first.phentsize, available_from=offset)
            if first.shoff:
                tail = self.limits.tail_bytes
                self.buf.want(first.shoff, first.shnum * first.shentsize, available_from=offset)
                self.buf.want(first.shoff - tail, tail, available_from=offset)
            self.buf.feed(offset, chunk)
        h = self.header
        if h is None or self._phdrs_done or h.machine == EM_AMDGPU:
            return
        if h.phnum == 0 or self.buf.has(h.phoff, h.phnum * h.phentsize):
            self._phdrs_done = True
            for p_type, p_offset, _vaddr, p_filesz in _program_headers(h, self.buf):
                if p_type == _PT_DYNAMIC:
                    if p_offset + p_filesz > self.size:
                        raise WheelReadError(f"{self.member}: truncated ELF: PT_DYNAMIC ends past the file")
                    self.buf.want(p_offset, p_filesz, available_from=offset)
            self.buf.feed(offset, chunk)


def _exact_ranges(h: _Header, buf: SparseBuffer, limits: Limits, member: str) -> list[tuple[int, int]]:
    """The ranges pyelftools needs, from the section table kept in the first pass."""
    if not h.shoff or not buf.has(h.shoff, h.shnum * h.shentsize):
        raise WheelReadError(f"{member}: ELF section headers unreadable")
    sections = _section_headers(h, buf)
    wanted: set[int] = set()
    if h.shstrndx < len(sections):
        wanted.add(h.shstrndx)
    for index, (_name, typ, _offset, _size, link) in enumerate(sections):
        if typ in (_SHT_DYNAMIC, _SHT_GNU_VERNEED):
            wanted.add(index)
            if link < len(sections):
                wanted.add(link)
    ranges = [(h.shoff, h.shnum * h.shentsize)]
    for index in sorted(wanted):
        _name, typ, offset, size, _link = sections[index]
        if typ == 8:  # SHT_NOBITS
            continue
        ranges.append((offset, size + _STRING_SLACK))
    total = sum(size for _start, size in ranges)
    if total > limits.max_second_pass_bytes:
        raise WheelReadError(
            f"{member}: the ELF's dynamic sections need {total} bytes in memory "
            f"(limit {limits.max_second_pass_bytes})"
        )
    return ranges


def _text(tag: Any, attr: str) -> str:
    """A string attribute pyelftools sets on a dynamic tag (``needed``, ``soname``, ``rpath``...)."""
    return str(getattr(tag, attr))


def _split_paths(values: list[str]) -> tuple[str, ...]:
    return tuple(part for value in values for part in value.split(":") if part)


def _parse(member: str, p: _Pass) -> tuple[ElfInfo, tuple[Finding, ...]]:
    assert p.header is not None
    elf = ELFFile(cast(IO[bytes], SparseStream(p.buf)))
    needed: list[str] = []
    rpath: list[str] = []
    runpath: list[str] = []
    soname: str | None = None
    version_needs: dict[str, set[str]] = {}
    fatbins: list[tuple[int, int]] = []
    dynamic_seen = False
    names = elf.get_section(p.header.shstrndx) if 0 < p.header.shstrndx < p.header.shnum else None
    # Only the sections we need become pyelftools objects: creating some others (.gnu.hash...) reads
    # their data, which was not kept.
    for index, (name_at, typ, offset, size, _link) in enumerate(_section_headers(p.header, p.buf)):
        if typ == _SHT_DYNAMIC and not dynamic_seen:
            section = elf.get_section(index)
            if not isinstance(section, DynamicSection):
                continue
            dynamic_seen = True
            for tag in section.iter_tags():
                if tag.entry.d_tag == "DT_NEEDED":
                    needed.append(_text(tag, "needed"))
                elif tag.entry.d_tag == "DT_SONAME":
                    soname = _text(tag, "soname")
                elif tag.entry.d_tag == "DT_RPATH":
                    rpath.append(_text(tag, "rpath"))
                elif tag.entry.d_tag == "DT_RUNPATH":
                    runpath.append(_text(tag, "runpath"))
        elif typ == _SHT_GNU_VERNEED:
            section = elf.get_section(index)
            if not isinstance(section, GNUVerNeedSection):
                continue
            for verneed, vernaux_iter in section.iter_versions():
                wanted = version_needs.setdefault(str(verneed.name), set())
                for vernaux in vernaux_iter:
                    wanted.add(str(vernaux.name))
        elif (
            typ != _SHT_NOBITS
            and isinstance(names, StringTableSection)
            and names.get_string(name_at) in _FATBIN_SECTIONS
        ):
            fatbins.append((offset, size))
    if not dynamic_seen:
        for segment in elf.iter_segments():
            if isinstance(segment, DynamicSegment):
                for tag in segment.iter_tags():
                    if tag.entry.d_tag == "DT_NEEDED":
                        needed.append(_text(tag, "needed"))
                    elif tag.entry.d_tag == "DT_SONAME":
                        soname = _text(tag, "soname")
                break
    entries: list[OffloadEntry] = []
    bundles = 0
    findings: list[Finding] = []
    for offset, size in fatbins:
        if offset + size > p.size:
            raise WheelReadError(f"{member}: .hip_fatbin section ends past the end of the file")
        try:
            found, count, notes = p.scanner.walk(member, offset, size)
        except BundleError as err:
            raise WheelReadError(f"{member}: .hip_fatbin: {err}") from None
        entries.extend(found)
        bundles += count
        findings.extend(notes)
    machine = str(elf["e_machine"])
    machine = machine[3:].lower() if machine.startswith("EM_") else machine.lower()
    info = ElfInfo(
        member=member,
        machine=machine,
        elf_class=64 if p.header.elf64 else 32,
        soname=soname,
        needed=tuple(needed),
        rpath=_split_paths(rpath),
        runpath=_split_paths(runpath),
        version_needs={lib: tuple(sorted(names)) for lib, names in sorted(version_needs.items())},
        offload_targets=tuple(entries),
        offload_bundles=bundles,
    )
    return info, tuple(findings)


def _missing_inside(err: BaseException, depth: int = 0) -> MissingRange | None:
    """pyelftools wraps stream errors in its own (ELFParseError(FieldError(MissingRange)))."""
    if isinstance(err, MissingRange):
        return err
    if depth > 5:
        return None
    for inner in (*err.args, err.__cause__, err.__context__):
        if isinstance(inner, BaseException):
            found = _missing_inside(inner, depth + 1)
            if found is not None:
                return found
    return None


def read_elf_member(
    member: str, open_stream: Callable[[], IO[bytes]], size: int, limits: Limits
) -> ElfResult:
    """Inspect one ELF member. ``open_stream`` opens the member's decompressed bytes afresh (it is
    called a second time only when the first pass did not keep what pyelftools needs)."""
    passes = 0
    bytes_read = 0
    exact: list[tuple[int, int]] | None = None
    while True:
        passes += 1
        p = _Pass(member, size, limits, exact)
        try:
            outcome = _attempt(member, p, open_stream, limits, exact)
        finally:
            p.buf.clear()
            p.scanner.clear()
        bytes_read += p.bytes_read
        if isinstance(outcome, list):
            exact = outcome
            continue
        elf_info, code_object, findings = outcome
        return ElfResult(elf_info, code_object, findings, bytes_read, passes)


def _attempt(
    member: str,
    p: _Pass,
    open_stream: Callable[[], IO[bytes]],
    limits: Limits,
    exact: list[tuple[int, int]] | None,
) -> tuple[ElfInfo | None, CodeObject | None, tuple[Finding, ...]] | list[tuple[int, int]]:
    """One pass: the parsed result, or the exact ranges a second pass must keep."""
    with open_stream() as stream:
        p.run(stream, stop_after_header=True)
    h = p.header
    if h is None:
        raise WheelReadError(f"{member}: truncated ELF header ({p.size} bytes)")
    if h.machine == EM_AMDGPU:
        version = code_object_version(h.osabi, h.abiversion)
        return None, CodeObject(member, target_id_from_flags(h.flags, version), version, h.flags), ()
    try:
        info, findings = _parse(member, p)
    except MissingRange as missing:
        if exact is not None:
            raise WheelReadError(
                f"{member}: malformed ELF: needs bytes {missing.offset}..{missing.offset + missing.size} "
                "outside its dynamic sections"
            ) from None
        return _exact_ranges(h, p.buf, limits, member)
    except (ELFError, struct.error, ValueError, KeyError, IndexError, AttributeError) as err:
        if _missing_inside(err) is None or exact is not None:
            raise WheelReadError(f"{member}: malformed ELF: {err}") from None
        return _exact_ranges(h, p.buf, limits, member)
    return info, None, findings
