"""One ELF member, streamed from the zip: machine, SONAME, DT_NEEDED, RPATH/RUNPATH, the symbol
versions it needs, its clang offload bundles, or, for an AMDGPU code object, the target id in its
header.

A deflated member can only be read front to back, so what matters is how far into it one must go.
Two routes:

* **Loader route** (every host ELF with a ``PT_DYNAMIC``): read what ``ld.so`` reads
  (:mod:`~buildkit.inspect.loader`); ``.dynsym`` is scanned as it streams by, keeping only its
  undefined, non-weak names of interest (``ElfInfo.undefined_of_interest``). The first
  ``limits.head_bytes`` are kept while streaming (``.dynstr`` and ``.gnu.version_r`` sit in the first
  ``PT_LOAD`` segment, near the front; a table found elsewhere is kept when it comes by, or read in
  another pass). Once those are parsed the member is not read any further, unless it is a HIP host
  object (it needs ``libamdhip64``, its dynamic strings name ``__hipRegisterFatBinary``, or a
  well-formed offload bundle has streamed past): its bundles lie in ``.hip_fatbin``, found through the
  section headers at the end of the file. The stop saves whatever follows the dynamic data
  (``.symtab``, ``.strtab``, debug info; for ``patchelf``'d or lld-linked files sometimes nothing).
* **Section route** (no ``PT_DYNAMIC``, or dynamic entries that map to no segment): read the whole
  member and parse its ``.dynamic``, ``.gnu.version_r`` and ``.dynsym`` sections with pyelftools, as
  auditwheel does.

A member is also read to its end (so its zip CRC is checked) when it is at most
``limits.whole_member_bytes`` or ``limits.verify_members`` is set. Whenever a member was read to its
end, its section table is consulted for ``.hip_fatbin``. Memory: only chosen ranges are kept
(:class:`~buildkit.inspect.sparse.SparseBuffer`); when a needed range streamed past unkept, the member
is read again keeping exactly that range (at most ``limits.max_second_pass_bytes``). ``.dynsym`` is
never kept: the part that streamed by before its size was known is scanned from the kept head, or,
when it was not kept, in the next pass from its first byte (which, knowing the table's place,
scans it before the hash table has given its size).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import IO, NamedTuple

from elftools.common.exceptions import ELFError

from buildkit.errors import WheelReadError
from buildkit.inspect import loader
from buildkit.inspect.codeobject import EM_AMDGPU, code_object_version, target_id_from_flags
from buildkit.inspect.limits import Limits
from buildkit.inspect.loader import ELF_MAGIC, DynamicTable, ElfHeader, LoaderView, Segment
from buildkit.inspect.models import CodeObject, ElfInfo, Oddity, OffloadEntry
from buildkit.inspect.offload import BundleError, BundleScanner
from buildkit.inspect.sections import (
    exact_ranges,
    fatbin_sections,
    missing_inside,
    parse_sections,
    shstrtab_range,
)
from buildkit.inspect.sparse import MissingRange, SparseBuffer, WholeBuffer
from buildkit.inspect.symbols import default_symbols_of_interest

__all__ = ["ELF_MAGIC", "ElfResult", "read_elf_bytes", "read_elf_member"]

_SHSTRTAB_NAME = b"\0.shstrtab\0"
_SHSTRTAB_REACH = 64 * 1024
_MAX_PASSES = 3
_HIP_MARKERS = (b"libamdhip64", loader.HIP_REGISTER[1:])
_LOADER, _SECTIONS = "loader", "sections"


class ElfResult(NamedTuple):
    """One ELF member read: its loader facts or code object, odd findings, and what reading it cost."""

    elf: ElfInfo | None
    code_object: CodeObject | None
    findings: tuple[Oddity, ...]
    bytes_read: int
    passes: int
    complete: bool = True  # the member was read to its end (its CRC was checked)


class _Carry(NamedTuple):
    """What a pass learnt that the next one need not read again, and the exact ranges it must keep
    (``keep`` is the one mutable part: the last pass extends it)."""

    route: str
    table: DynamicTable | None
    keep: list[tuple[int, int]]
    scan: bool = False  # look for offload bundles from the first byte on
    symbols: int | None = None  # entries of .dynsym, once the hash table gave them


class _Pass:
    """One front-to-back read of the member, keeping the planned ranges and stopping as soon as the
    result is known."""

    def __init__(
        self,
        member: str,
        size: int,
        limits: Limits,
        carry: _Carry | None,
        *,
        whole: bool,
        interest: Collection[str] = (),
        data: bytes | None = None,
    ) -> None:
        """``data``: the member's bytes, already in memory (one pass, every byte kept)."""
        self.member = member
        self.interest = interest
        self.size = size
        self.limits = limits
        self.whole = whole
        self.buf = SparseBuffer(size) if data is None else WholeBuffer(data)
        self.scanner = BundleScanner(size, limits)
        self.read = loader.require(self.buf.read)
        self.header: ElfHeader | None = None
        self.segments: tuple[Segment, ...] | None = None
        self.dynamic: Segment | None = None
        self.route = carry.route if carry is not None else _LOADER
        self.table = carry.table if carry is not None else None
        self.view: LoaderView | None = None
        self.behind: list[tuple[int, int]] = []  # needed ranges that streamed past unkept
        self.notes: tuple[Segment, ...] = ()  # where the GNU property note may lie (x86 only)
        # .dynsym is scanned as it streams by (only undefined names are kept); when part of it went
        # past unkept, the next pass scans it from its first byte
        self.symbols = carry.symbols if carry is not None else None
        self.undefined: loader.UndefinedScan | None = None
        self.rescan = False
        self.from_start = carry is not None and carry.table is not None  # the table is known already
        self._waiting = 0  # the loader parse needs bytes up to here before it is tried again
        self._shstrtab_hits = 0
        self.bytes_read = 0
        self.complete = False
        # Looking for bundle magics costs about a third of inflating: it is done from the start for
        # members read whole, else from the moment a HIP marker streams past in the head (a cost
        # decision only: whether a member IS a HIP object is decided from its dynamic data and, once
        # read to the end, its section table; a pass that did not look early enough is followed by
        # one that does).
        self.scan_from: int | None = 0 if whole or (carry is not None and carry.scan) else None
        self._marker_tail = b""
        if carry is None:
            self.buf.want(0, limits.head_bytes)
        else:
            self.buf.want(0, 4096)
            for start, length in carry.keep:
                self.buf.want(start, length)

    @property
    def hip(self) -> bool:
        return (self.view is not None and self.view.links_hip_runtime) or self.scanner.found_bundle

    def run(self, chunks: Iterable[tuple[int, bytes]]) -> None:
        """Read ``(offset, chunk)`` pieces of the member, front to back (:func:`member_chunks`)."""
        previous: tuple[int, bytes] = (0, b"")
        for offset, chunk in chunks:
            self.bytes_read += len(chunk)
            self.buf.feed(offset, chunk)
            if self.undefined is not None:
                self.undefined.feed(offset, chunk)
            if self.scan_from is None:
                self._look_for_markers(offset, chunk)
            self._plan(offset, chunk)
            if self._can_stop():
                return
            if self.scan_from is not None or self.route != _LOADER:
                self._find_shstrtab(offset, chunk, previous)
            if self.scan_from is not None:
                self.scanner.feed(offset, chunk)
            previous = (offset, chunk)
        self.scanner.finish()
        self.complete = True

    def _can_stop(self) -> bool:
        h = self.header
        if h is None:
            return False
        if h.machine == EM_AMDGPU:
            return True  # a standalone code object: its header says it all
        if self.whole or self.route != _LOADER:
            return False
        if self.behind or self.rescan:
            return True  # another pass is needed anyway
        if self.view is not None and self.hip and self.scan_from is None:
            return True  # a HIP object, and its bundles were not looked for: another pass will
        return self.view is not None and not self.hip

    def _look_for_markers(self, offset: int, chunk: bytes) -> None:
        """Start looking for bundles once the head shows a HIP marker (in ``.dynstr``)."""
        if offset >= self.limits.head_bytes:
            return
        joined = self._marker_tail + chunk[: 2 * len(loader.HIP_REGISTER)]
        if any(m in joined or m in chunk for m in _HIP_MARKERS):
            self.scan_from = offset
        self._marker_tail = chunk[-2 * len(loader.HIP_REGISTER) :]

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

    def _need(self, start: int, length: int, offset: int) -> None:
        """Keep ``[start, start+length)``: from the bytes still to come, else note it for another pass."""
        start, end = max(0, start), min(self.size, start + length)
        if end <= start or self.buf.has(start, end - start):
            return
        if not self.buf.want(start, end - start, available_from=offset):
            self.behind.append((start, end - start))

    def _plan_header(self, offset: int, chunk: bytes) -> ElfHeader | None:
        """The ELF header, once kept; on first reading it, keep the program and section headers."""
        if self.header is not None or not self.buf.has(0, min(64, self.size)):
            return self.header
        self.header = h = loader.parse_header(self.member, self.buf.read(0, 64), self.size)
        if h.machine != EM_AMDGPU:
            self._need(h.phoff, h.phnum * h.phentsize, offset)
            if h.shoff:
                self._need(h.shoff, h.shnum * h.shentsize, offset)
                self._need(h.shoff - self.limits.tail_bytes, self.limits.tail_bytes, offset)
            self.buf.feed(offset, chunk)
        return h

    def _keep_dynamic(self, found: Segment, segments: tuple[Segment, ...], offset: int, chunk: bytes) -> None:
        """Keep PT_DYNAMIC and what precedes it in its segment, and the LOAD segments wholly within
        reach before it: patchelf (auditwheel repair) moves .dynstr, .dynsym and .gnu.version_r into
        new segments next to .dynamic, one segment each in newer releases (numpy 2.x's
        libscipy_openblas64_: .dynsym ~1 MiB before .dynamic, in its own segment, was read a second
        time with the whole library)."""
        reach = found.offset - self.limits.dynamic_reach
        loads = [s for s in segments if s.type == loader.PT_LOAD]
        home = next((s.offset for s in loads if s.offset <= found.offset < s.offset + s.filesz), found.offset)
        start = min(
            [max(home, reach)]
            + [s.offset for s in loads if reach <= s.offset and s.offset + s.filesz <= found.offset]
        )
        self._need(start, found.offset + found.filesz - start, offset)
        self.buf.feed(offset, chunk)

    def _plan(self, offset: int, chunk: bytes) -> None:
        h = self._plan_header(offset, chunk)
        if h is None or h.machine == EM_AMDGPU or self.route != _LOADER:
            return
        self._plan_symbols(offset, chunk)  # a later pass knows the table: scan from the first byte
        if self.segments is None:
            if not self.buf.has(h.phoff, h.phnum * h.phentsize):
                return
            self.segments = loader.segments(h, self.read)
            self.notes = loader.note_segments(h, self.segments, self.size)
            for note in self.notes:
                self._need(note.offset, note.filesz, offset)
            self.dynamic = loader.dynamic_segment(self.member, self.segments, self.size)
            if self.dynamic is None:
                self.route = _SECTIONS  # a static executable or an object file: no loader data
                return
            if self.table is None:
                self._keep_dynamic(self.dynamic, self.segments, offset, chunk)
        if self.table is None:
            dyn = self.dynamic
            assert dyn is not None
            if not self.buf.has(dyn.offset, dyn.filesz):
                return
            try:
                self.table = loader.dynamic_table(self.member, h, self.segments, dyn, self.read)
            except loader.Unmappable:
                self.route = _SECTIONS
                return
            if self.table.strsz > self.limits.max_second_pass_bytes:
                raise WheelReadError(
                    f"{self.member}: DT_STRSZ says {self.table.strsz} bytes "
                    f"(limit {self.limits.max_second_pass_bytes})"
                )
            for start, length in self.table.ranges():
                self._need(start, length, offset)
            self.buf.feed(offset, chunk)
        self._plan_symbols(offset, chunk)
        self._resolve(offset, chunk)

    def _plan_symbols(self, offset: int, chunk: bytes) -> None:
        """Count ``.dynsym``'s entries (from the hash table: kept when it comes by, or in another
        pass) and scan it: the part already streamed from the kept bytes, the rest as it comes. A
        pass that knows the table from the start scans from its first byte, up to ``DT_STRTAB``,
        before the count is known (lld writes ``.gnu.hash`` after ``.dynsym``)."""
        table, h = self.table, self.header_or_fail
        if self.rescan or table is None or table.symtab is None:
            return
        if self.undefined is None and self.symbols is None and self.from_start:
            self.undefined = loader.UndefinedScan(table.symtab, None, h, limit=table.strtab)
        # each round may find the next part of the hash table inside this very chunk (the last
        # chunk of a patchelf'd file holds .gnu.hash, .dynamic and .dynstr together)
        for _ in range(64):
            if self.symbols is not None:
                break
            try:
                self.symbols = loader.symbol_count(self.member, h, table, self.read, self.size)
            except MissingRange as missing:
                self._need(missing.offset, max(missing.size, 4096), offset)
                self.buf.feed(offset, chunk)
                if self.behind or not self.buf.has(missing.offset, missing.size):
                    self._catch_up(offset, chunk)
                    return
                continue
            if self.undefined is not None:
                self.undefined.set_count(self.symbols)
        if self.symbols is None:
            self._catch_up(offset, chunk)
            return
        if self.undefined is None:
            self.undefined = loader.UndefinedScan(table.symtab, self.symbols, h)
        self._catch_up(offset, chunk)

    def _catch_up(self, offset: int, chunk: bytes) -> None:
        """Scan what streamed by before this chunk from the kept bytes (or, when they were not
        kept, leave it to the next pass), then this chunk."""
        scan = self.undefined
        if scan is None:
            return
        while scan.position < min(scan.end, offset):
            kept = self.buf.read(scan.position, min(self.limits.chunk_size, offset - scan.position))
            if not kept:
                self.rescan = True  # streamed past unkept: the next pass scans it from its start
                return
            scan.feed(scan.position, kept)
        scan.feed(offset, chunk)

    @property
    def symbols_ready(self) -> bool:
        table = self.table
        return table is not None and (
            table.symtab is None or (self.undefined is not None and self.undefined.done)
        )

    def _resolve(self, offset: int, chunk: bytes) -> None:
        """Parse the loader's tables; a missing range ahead is kept when it comes by (the parse is
        tried again once the stream has passed it), one behind is left to another pass."""
        if self.view is not None or self.behind or self.rescan or self.table is None:
            return
        if offset + len(chunk) < self._waiting or not self.symbols_ready:
            return
        for _ in range(64):  # each round may find the next verneed entry inside this very chunk
            try:
                self.view = loader.resolve(
                    self.member,
                    self.header_or_fail,
                    self.table,
                    self.read,
                    self.size,
                    self.undefined,
                    self.interest,
                )
                return
            except MissingRange as missing:
                self._need(missing.offset, max(missing.size, 4096), offset)
                self.buf.feed(offset, chunk)
                if self.behind:
                    return
                if not self.buf.has(missing.offset, missing.size):
                    self._waiting = missing.offset + missing.size
                    return

    @property
    def header_or_fail(self) -> ElfHeader:
        if self.header is None:
            raise WheelReadError(f"{self.member}: truncated ELF header ({self.size} bytes)")
        return self.header

    def carry(self) -> _Carry:
        """The exact ranges another loader-route pass must keep."""
        assert self.table is not None
        keep = list(dict.fromkeys([*self.behind, *self.table.ranges(), *self.note_ranges()]))
        total = sum(length for _start, length in keep)
        if total > self.limits.max_second_pass_bytes:
            raise WheelReadError(
                f"{self.member}: the ELF's dynamic tables need {total} bytes in memory "
                f"(limit {self.limits.max_second_pass_bytes})"
            )
        return _Carry(_LOADER, self.table, keep, scan=self.hip, symbols=self.symbols)

    def note_ranges(self) -> list[tuple[int, int]]:
        return [(note.offset, note.filesz) for note in self.notes]


def _walk_fatbins(
    member: str, p: _Pass, fatbins: list[tuple[int, int]]
) -> tuple[tuple[OffloadEntry, ...], int, tuple[Oddity, ...]]:
    entries: list[OffloadEntry] = []
    findings: list[Oddity] = []
    bundles = 0
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
    return tuple(entries), bundles, tuple(findings)


def read_elf_member(
    member: str,
    open_stream: Callable[[], IO[bytes]],
    size: int,
    limits: Limits,
    *,
    read_to_end: bool = False,
    symbols: Collection[str] | None = None,
) -> ElfResult:
    """Inspect one ELF member. ``open_stream`` opens the member's decompressed bytes afresh (it is
    called again only when a pass did not keep what the parse needs). With ``read_to_end`` one
    pass reads on to the member's end (discarding the bytes, nothing more is kept) so that its
    stream's consumer sees every byte: the zip CRC is checked and a digest of the member (RECORD
    verification) can be taken from that stream. It is the last pass, or the first that needs another
    pass only for ranges it left behind (the passes after it then stop once parsed); the parse
    itself is unchanged. ``symbols``: the undefined dynamic symbol names worth reporting (default
    :func:`~buildkit.inspect.symbols.default_symbols_of_interest`)."""
    interest = default_symbols_of_interest() if symbols is None else frozenset(symbols)
    whole = limits.verify_members or size <= limits.whole_member_bytes
    bytes_read = 0
    carry: _Carry | None = None
    read_once = False  # an earlier pass read the member to its end: its stream saw every byte
    for passes in range(1, _MAX_PASSES + 1):
        p = _Pass(member, size, limits, carry, whole=whole, interest=interest)
        try:
            with open_stream() as stream:
                p.run(member_chunks(member, stream, size, limits.chunk_size))
                bytes_read += p.bytes_read
                outcome = _finish(member, p, limits, last=passes == _MAX_PASSES)
                # Read on to the end after the last pass, or already now when the next pass needs
                # only the ranges this one left behind: that pass then stops as soon as it has them
                # instead of reading everything again (a library whose .dynamic lies far past its
                # dynamic tables: triton's 476 MiB libtriton.so was read 1.4 times, now 1.04). Not
                # when the next pass looks for offload bundles: it reads to the end itself.
                scans_next = isinstance(outcome, _Carry) and outcome.scan
                if read_to_end and not read_once and not p.complete and not scans_next:
                    p.buf.clear()
                    p.scanner.clear()
                    bytes_read += _drain(member, stream, size - p.bytes_read, limits.chunk_size)
                    p.complete = True
                read_once = read_once or p.complete
        finally:
            p.buf.clear()
            p.scanner.clear()
        if isinstance(outcome, _Carry):
            carry = outcome
            continue
        elf_info, code_object, findings = outcome
        return ElfResult(elf_info, code_object, findings, bytes_read, passes, read_once)
    raise AssertionError("unreachable: the last pass either parses or raises")


def read_elf_bytes(
    member: str, data: bytes, limits: Limits, *, symbols: Collection[str] | None = None
) -> ElfResult:
    """Inspect one ELF member whose bytes are in memory (a small member read whole): one pass in
    which every byte is kept, so nothing is ever missing that another pass could bring; the result
    and the errors are those of :func:`read_elf_member` on a stream of the same bytes."""
    interest = default_symbols_of_interest() if symbols is None else frozenset(symbols)
    p = _Pass(member, len(data), limits, None, whole=True, interest=interest, data=data)
    try:
        p.run(((0, data),) if data else ())
        outcome = _finish(member, p, limits, last=True)
    finally:
        p.buf.clear()
        p.scanner.clear()
    assert not isinstance(outcome, _Carry), "a pass that kept every byte needs no other"
    elf_info, code_object, findings = outcome
    return ElfResult(elf_info, code_object, findings, len(data), 1, True)


def member_chunks(member: str, stream: IO[bytes], size: int, chunk_size: int) -> Iterator[tuple[int, bytes]]:
    """``(offset, chunk)`` of a member's ``size`` bytes read from ``stream`` in ``chunk_size``
    pieces; a member that ends early is a WheelReadError naming where."""
    offset = 0
    while offset < size:
        chunk = stream.read(min(chunk_size, size - offset))
        if not chunk:
            raise WheelReadError(f"{member}: member ends at {offset} bytes, its header says {size}")
        yield offset, chunk
        offset += len(chunk)


def _drain(member: str, stream: IO[bytes], left: int, chunk_size: int) -> int:
    """Read ``left`` more bytes from ``stream`` and drop them; how many were read."""
    done = 0
    while done < left:
        chunk = stream.read(min(chunk_size, left - done))
        if not chunk:
            raise WheelReadError(f"{member}: member ends {left - done} bytes before the size its header says")
        done += len(chunk)
    return done


def _finish(
    member: str, p: _Pass, limits: Limits, *, last: bool
) -> tuple[ElfInfo | None, CodeObject | None, tuple[Oddity, ...]] | _Carry:
    """The parsed result of a pass, or what the next pass must keep."""
    h = p.header_or_fail
    if h.machine == EM_AMDGPU:
        version = code_object_version(h.osabi, h.abiversion)
        return None, CodeObject(member, target_id_from_flags(h.flags, version), version, h.flags), ()
    try:
        if p.route == _SECTIONS:
            view = parse_sections(member, h, p.buf, p.interest)
        else:
            if p.view is None:
                if (p.behind or p.rescan) and not last:
                    return p.carry()
                raise WheelReadError(
                    f"{member}: malformed ELF: the dynamic tables could not be read "
                    f"(ranges {p.behind or ('.dynsym' if p.rescan else 'past the end of the member')})"
                )
            view = p.view
        if p.route == _LOADER and view.links_hip_runtime and p.scan_from is None:
            return p.carry()  # stopped early: a HIP object whose bundles were not looked for
        entries: tuple[OffloadEntry, ...] = ()
        bundles = 0
        findings: tuple[Oddity, ...] = ()
        if p.complete:
            fatbins = fatbin_sections(h, p.buf)
            if fatbins and (p.scan_from is None or p.scan_from > min(start for start, _ in fatbins)):
                if last:
                    raise WheelReadError(f"{member}: .hip_fatbin could not be read")
                return _Carry(p.route, p.table, _exact_ranges_any(p, limits), scan=True)
            entries, bundles, findings = _walk_fatbins(member, p, fatbins)
        isa = loader.x86_isa_needed(h, p.notes, p.read)
    except MissingRange as missing:
        return _retry(member, p, limits, missing, last=last)
    except (ELFError, struct.error, ValueError, KeyError, IndexError, AttributeError) as err:
        inside = missing_inside(err)
        if inside is None:
            raise WheelReadError(f"{member}: malformed ELF: {err}") from None
        return _retry(member, p, limits, inside, last=last)
    info = ElfInfo(
        member=member,
        machine=h.machine_name,
        elf_class=64 if h.elf64 else 32,
        soname=view.soname,
        needed=view.needed,
        rpath=view.rpath,
        runpath=view.runpath,
        version_needs=view.version_needs,
        offload_targets=entries,
        offload_bundles=bundles,
        endian="little" if h.endian == "<" else "big",
        undefined_of_interest=view.undefined_of_interest,
        x86_isa_needed=isa,
    )
    return info, None, findings


def _exact_ranges_any(p: _Pass, limits: Limits) -> list[tuple[int, int]]:
    """What another pass over the whole member must keep, on either route."""
    h = p.header_or_fail
    if p.route == _SECTIONS:
        return exact_ranges(h, p.buf, limits, p.member) + p.note_ranges()
    return p.carry().keep + shstrtab_range(h, p.buf)


def _retry(member: str, p: _Pass, limits: Limits, missing: MissingRange, *, last: bool) -> _Carry:
    """A byte the parse needed was not kept: the next pass keeps exactly the sections that hold it."""
    if last:
        raise WheelReadError(
            f"{member}: malformed ELF: needs bytes {missing.offset}..{missing.offset + missing.size} "
            "outside its dynamic sections"
        )
    h = p.header_or_fail
    if p.route == _SECTIONS:
        return _Carry(_SECTIONS, None, exact_ranges(h, p.buf, limits, member) + p.note_ranges())
    carry = p.carry()
    carry.keep.extend(shstrtab_range(h, p.buf))
    return carry
