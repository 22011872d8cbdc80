"""The x86-64 levels a host ELF's code uses, read with a disassembler (capstone): the static report
of the ``host-isa`` rule (:mod:`buildkit.gate.rules.host_isa`).

The ``GNU_PROPERTY_X86_ISA_1_NEEDED`` note (the ``x86-isa`` rule) is written only with ``-mneeded``;
code built with ``-march=native`` or ``-mavx512f`` carries none. This reads the instructions
themselves: per ELF, the highest x86-64 psABI level (v1 .. v4) whose instructions appear in its
executable sections, the count of instructions of each level above v1, and a few examples (address,
symbol, text). Presence is not need: runtime-dispatched code (numpy, OpenBLAS) holds AVX-512 behind
cpuid checks; the rule informs and refuses only when told (``strict``).

How, and what it costs (bench/isa_scan.py): a linear sweep of numpy 2.2.6's host code with capstone,
one Python object per instruction, took 14.5 s. Here:

a byte prefilter (:data:`_PREFILTER` and :func:`_candidate`) finds where an instruction above v1 may
be, one search per :data:`BLOCK`; only runs of blocks holding a candidate are decoded, from
:data:`LEAD_IN` bytes before (or a function's first byte); capstone decodes without detail, read by
column: VEX/EVEX instructions counted by their first byte (v3/v4), the others by their instruction id,
each id classified once by capstone's groups (``AVX512``: v4; ``AVX``/``AVX2``/``FMA``/``F16C``/
``BMI``/``BMI2``, LZCNT, MOVBE: v3; ``SSE3``/``SSSE3``/``SSE41``/``SSE42``, POPCNT, CMPXCHG16B: v2).

Not counted: LAHF/SAHF and FISTTP (v2, by one-byte opcodes no prefilter can single out), TZCNT (gcc's
``rep bsf``, which runs as BSF below BMI1) and XSAVE/XGETBV (what cpuid dispatch itself runs). Groups
outside the levels (AES, PCLMUL, FMA4, ...) are counted as extensions. The report is opt-in
(``--isa-report``): on wheels with much vector code it costs several times the rest of the gate.
"""

from __future__ import annotations

import bisect
import re
import struct
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import NamedTuple, Protocol

from buildkit.inspect.models import WheelReport
from buildkit.records import json_shape


class Members(Protocol):
    """What a scan reads members from: an open wheel's zip (``zipfile.ZipFile``; not imported here, the
    gate's rule imports this module's levels and no zip reader with them)."""

    def read(self, name: str) -> bytes: ...


#: the levels, index = level number - 1 (the names the recipe's ``host_isa.level`` and ``-march`` use)
LEVELS = ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4")
EXAMPLES = 3  # examples kept per level above v1

_V4_GROUPS = {"avx512", "bwi", "cdi", "dqi", "vlx", "eri", "pfi"}
_V3_GROUPS = {"avx", "avx2", "fma", "f16c", "bmi", "bmi2"}
_V2_GROUPS = {"sse3", "ssse3", "sse41", "sse42"}
_V3_MNEMONICS = {"lzcnt", "movbe"}
_V2_MNEMONICS = {"popcnt", "cmpxchg16b"}
#: capstone groups that say nothing about the instruction set
_NEUTRAL_GROUPS = {
    *("mode64", "mode32", "not64bitmode", "16bitmode", "branch_relative", "jump", "call", "ret", "int"),
    *("iret", "privilege", "fpu", "cmov", "sse1", "sse2", "mmx", "novlx", "invalid", "ending"),
}


def _cls(predicate: object) -> bytes:
    """A regex character class of the bytes ``predicate`` accepts."""
    accepted = [b for b in range(256) if predicate(b)]  # type: ignore[operator]
    return b"[" + b"".join(re.escape(bytes([b])) for b in accepted) + b"]"


# VEX/EVEX are the only meanings of C4, C5 and 62 in 64-bit mode (LES, LDS, BOUND are invalid there)
_VEX2_OPCODES = {
    *range(0x10, 0x18), *range(0x28, 0x30), *range(0x50, 0x80), 0xAE, 0xC2, *range(0xC4, 0xC7),
    *range(0xD0, 0x100),
}  # fmt: skip
_REX = frozenset(range(0x40, 0x50))
#: where an instruction above v1 may be: each branch begins with 62, C4, C5 or 0F, so that the regular
#: expression engine skips the bytes no branch begins with in C; the legacy prefixes the 0F forms need
#: (F3 0F B8 is POPCNT, 0F B8 alone is not) are checked after (:func:`_candidate`)
_PREFILTER = re.compile(
    b"|".join(
        [
            b"\x62" + _cls(lambda b: (b & 0x0C) == 0 and (b & 0x03) != 0) + _cls(lambda b: b & 0x04),  # EVEX
            b"\xc4" + _cls(lambda b: (b & 0x1F) in (1, 2, 3)),  # VEX, 3 bytes
            b"\xc5." + _cls(lambda b: b in _VEX2_OPCODES),  # VEX, 2 bytes
            b"\x0f[\x38\x3a]",  # SSSE3, SSE4.1, SSE4.2, MOVBE, CRC32
            b"\x0f\x01[\xc8\xc9]",  # MONITOR, MWAIT
            b"\x0f[\xb8\xbd\x7c\x7d\xd0\x12\x16\xf0]",  # POPCNT, LZCNT, SSE3: prefix checked
            b"\x0f\xc7" + _cls(lambda b: (b >> 3) & 7 == 1 and b < 0xC0),  # CMPXCHG16B: REX.W checked
        ]
    ),
    re.DOTALL,
)
#: the second byte of a 0F form -> the legacy prefixes (before an optional REX) that make it v2/v3
_NEEDS_PREFIX: dict[int, bytes] = {
    0xB8: b"\xf3", 0xBD: b"\xf3", 0x7C: b"\x66\xf2", 0x7D: b"\x66\xf2", 0xD0: b"\x66\xf2",
    0x12: b"\xf2\xf3", 0x16: b"\xf3", 0xF0: b"\xf2",
}  # fmt: skip
#: bytes decoded before a candidate block, so that the decoding has found the instruction
#: boundaries by then (unless its function starts nearer: a true boundary)
LEAD_IN = 64
#: the code is looked at in blocks: a block holding a candidate is decoded whole, runs of such blocks
#: in one window (dense vector code is decoded whole, scalar code only around its few candidates)
BLOCK = 256


def _candidate(code: bytes, at: int) -> bool:
    """A prefilter match at ``at`` is a candidate: a 0F form has the legacy prefix it needs."""
    if code[at] != 0x0F:
        return True
    second = code[at + 1]
    before = code[at - 1] if at else 0
    rex = before in _REX
    if rex:
        before = code[at - 2] if at > 1 else 0
    if second == 0xC7:
        return rex and bool(code[at - 1] & 8)
    return second not in _NEEDS_PREFIX or before in _NEEDS_PREFIX[second]


def _windows(code: bytes, starts: list[int]) -> Iterator[tuple[int, int]]:
    """(start, end) of the byte ranges of ``code`` to decode: each run of blocks holding a candidate,
    from ``LEAD_IN`` bytes before it (not before the start of the function holding the first
    candidate, ``starts`` sorted) to 16 bytes past it (an instruction begun there ends by then). One
    search per block, not per candidate."""
    size = len(code)
    lo = hi = -1
    pos = 0
    search = _PREFILTER.search
    while pos < size:
        m = search(code, pos)
        if m is None:
            break
        at = m.start()
        if not _candidate(code, at):
            pos = at + 1
            continue
        block = at - at % BLOCK
        if block > hi:  # a new run
            if hi > lo:
                yield lo, hi
            i = bisect.bisect_right(starts, at) - 1
            lo = max(starts[i] if i >= 0 else 0, block - LEAD_IN, 0)
        hi = min(size, block + BLOCK + 16)
        pos = block + BLOCK
    if hi > lo:
        yield lo, hi


_LEGACY, _VEX, _EVEX = 0, 1, 2
_LEGACY_PREFIXES = frozenset(b"\x66\x67\xf2\xf3\x2e\x36\x3e\x26\x64\x65\xf0") | frozenset(range(0x40, 0x50))


class IsaExample(NamedTuple):
    """One instruction above v1: its level (2..4), address, the symbol holding it (``name+0x1c``) and
    its text (``vpaddd zmm0, zmm1, zmm2``)."""

    level: int
    address: int
    symbol: str
    text: str

    def describe(self) -> str:
        return f"{self.text} at {self.address:#x} ({self.symbol})"


@json_shape("member", "level", "counts", "extensions", "examples", "windows", "scanned_bytes", "code_bytes")
class ElfIsa(NamedTuple):
    """The ISA report of one x86_64 host ELF: ``level`` the highest present (1..4); ``counts`` the
    instructions of v2, v3, v4; ``extensions`` ((capstone group, count)...) outside the levels;
    ``examples`` a few per level, highest first; ``windows`` the byte ranges disassembled,
    ``scanned_bytes`` their bytes (of ``code_bytes`` in executable sections)."""

    member: str
    level: int
    counts: tuple[int, int, int]
    extensions: tuple[tuple[str, int], ...]
    examples: tuple[IsaExample, ...]
    windows: int
    scanned_bytes: int
    code_bytes: int

    @property
    def level_name(self) -> str:
        return LEVELS[self.level - 1]

    def above(self, level: int) -> tuple[IsaExample, ...]:
        """The examples above ``level``, highest first."""
        return tuple(e for e in self.examples if e.level > level)

    def summary(self) -> str:
        counts = ", ".join(f"v{i + 2}: {n}" for i, n in enumerate(self.counts) if n)
        return f"{self.member}: {self.level_name}" + (f" ({counts})" if counts else "")


def level_number(name: str) -> int:
    """``"x86-64-v3"`` -> 3, ``"x86-64"`` -> 1 (a ValueError for another name)."""
    if name not in LEVELS:
        raise ValueError(f"unknown x86-64 level {name!r}; known: {', '.join(LEVELS)}")
    return LEVELS.index(name) + 1


# --------------------------------------------------------------------------- ELF layout
class _Section(NamedTuple):
    name: str
    addr: int
    offset: int
    size: int


class _Layout(NamedTuple):
    code: tuple[_Section, ...]  # executable PROGBITS sections
    functions: tuple[tuple[int, int, int], ...]  # (start, end, where its name is in the file), sorted


_SHF_EXECINSTR, _SHT_PROGBITS, _SHT_SYMTAB, _SHT_DYNSYM, _STT_FUNC = 4, 1, 2, 11, 2


def _layout(data: bytes) -> _Layout | None:
    """Executable sections and function symbols of a little-endian ELF64 x86_64 image; None for any
    other ELF (or one without section headers)."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    (machine,) = struct.unpack_from("<H", data, 18)
    if machine != 62:  # EM_X86_64
        return None
    shoff, = struct.unpack_from("<Q", data, 40)  # fmt: skip
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    if not shoff or shentsize != 64 or shoff + shnum * 64 > len(data):
        return None
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * 64) for i in range(shnum)]
    names_off = headers[shstrndx][4] if shstrndx < shnum else 0

    def name_of(at: int, base: int) -> str:
        end = data.find(b"\0", base + at)
        return data[base + at : end].decode("utf-8", "replace")

    code = tuple(
        _Section(name_of(h[0], names_off), h[3], h[4], min(h[5], max(0, len(data) - h[4])))
        for h in headers
        if h[1] == _SHT_PROGBITS and h[2] & _SHF_EXECINSTR
    )
    tables = [h for h in headers if h[1] == _SHT_SYMTAB] or [h for h in headers if h[1] == _SHT_DYNSYM]
    found: dict[int, tuple[int, int]] = {}
    for h in tables:
        strtab = headers[h[6]][4] if h[6] < shnum else 0
        table = data[h[4] : h[4] + h[5] - h[5] % 24]
        for st_name, st_info, _, _, value, size in struct.iter_unpack("<IBBHQQ", table):
            if st_info & 0xF == _STT_FUNC and value and size and value not in found:
                found[value] = (value + size, strtab + st_name)  # the name read when shown
    functions = sorted((start, end, name) for start, (end, name) in found.items())
    return _Layout(code, tuple(functions))


# --------------------------------------------------------------------------- classification
class _Decoded(NamedTuple):
    """Instructions capstone decoded, as its ``cs_insn`` records side by side in one bytes object."""

    blob: bytes
    records: int


class _Disassembler:
    """capstone without detail, read in bulk: ``cs_disasm`` fills an array of ``cs_insn`` in C; the
    array is copied out whole and read by column (instruction id, first byte) with C-speed slicing
    and counting, never one Python object per instruction. Each distinct instruction id is
    classified once, by capstone's groups (a second handle with detail on, one instruction)."""

    BATCH = 32768  # instructions per cs_disasm call (8 MiB of records)

    def __init__(self) -> None:
        # ctypes and the disassembler only where a scan runs (start-up time)
        import ctypes

        import capstone  # (start-up time, as above)

        self._ctypes, self._capstone = ctypes, capstone
        self.handle = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self.handle.skipdata = True  # padding or data in .text: go on past it
        self.detail = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self.detail.detail = True
        record = capstone._cs_insn
        self.stride = ctypes.sizeof(record)
        self.at_id, self.at_address = record.id.offset, record.address.offset
        self.at_size, self.at_bytes = record.size.offset, record.bytes.offset
        self.at_mnemonic, self.at_op = record.mnemonic.offset, record.op_str.offset
        if self.stride % 4 or self.at_id % 4:
            raise RuntimeError(f"capstone's cs_insn layout is not the one read here ({self.stride} bytes)")
        self.levels: dict[int, tuple[int, str, int]] = {0: (1, "", _LEGACY)}  # id -> (level, extension, kind)

    def decode(self, code: bytes, address: int) -> Iterator[_Decoded]:
        """The instructions of ``code`` (at ``address``) in batches."""
        ctypes, cs = self._ctypes, self._capstone
        done = 0
        while done < len(code):
            records = ctypes.POINTER(cs._cs_insn)()
            part = code[done:]
            n = cs._cs.cs_disasm(
                self.handle.csh, part, len(part), address + done, self.BATCH, ctypes.byref(records)
            )
            if n <= 0:
                return
            try:
                blob = ctypes.string_at(records, n * self.stride)
            finally:
                cs._cs.cs_free(records, n)
            yield _Decoded(blob, n)
            last = (n - 1) * self.stride
            (end,) = struct.unpack_from("<Q", blob, last + self.at_address)
            (size,) = struct.unpack_from("<H", blob, last + self.at_size)
            done = end + size - address

    def ids(self, d: _Decoded) -> memoryview:
        return memoryview(d.blob).cast("I")[self.at_id // 4 :: self.stride // 4]

    def first_bytes(self, d: _Decoded) -> bytes:
        return d.blob[self.at_bytes :: self.stride]

    def record(self, d: _Decoded, i: int) -> tuple[int, bytes, str]:
        """Address, bytes and text of instruction ``i``."""
        at = i * self.stride
        (address,) = struct.unpack_from("<Q", d.blob, at + self.at_address)
        (size,) = struct.unpack_from("<H", d.blob, at + self.at_size)
        raw = d.blob[at + self.at_bytes : at + self.at_bytes + size]
        mnemonic = _cstr(d.blob, at + self.at_mnemonic)
        op = _cstr(d.blob, at + self.at_op)
        return address, raw, f"{mnemonic} {op}".strip()

    def level_of(self, insn_id: int, raw: bytes) -> tuple[int, str, int]:
        """(level, extension groups, encoding kind) of an instruction id, from one example (an id is
        legacy-, VEX- or EVEX-encoded; a ``v`` mnemonic of both VEX and EVEX is counted by its first
        byte, not here)."""
        found = self.levels.get(insn_id)
        if found is None:
            found = self.levels[insn_id] = self._classify(raw)
        return found

    def _classify(self, raw: bytes) -> tuple[int, str, int]:
        groups: set[str] = set()
        mnemonic = ""
        for insn in self.detail.disasm(raw, 0, 1):
            groups = {insn.group_name(g) or "" for g in insn.groups}
            mnemonic = insn.mnemonic
        level = 1
        if mnemonic == "tzcnt":
            pass  # REP BSF: gcc's generic ctz, which runs as BSF below BMI1
        elif groups & _V4_GROUPS:
            level = 4
        elif groups & _V3_GROUPS or mnemonic in _V3_MNEMONICS:
            level = 3
        elif groups & _V2_GROUPS or mnemonic in _V2_MNEMONICS:
            level = 2
        extension = ",".join(sorted(groups - _NEUTRAL_GROUPS - _V4_GROUPS - _V3_GROUPS - _V2_GROUPS))
        encoding = _encoding(raw)
        kind = _EVEX if encoding == 0x62 else _VEX if encoding in (0xC4, 0xC5) else _LEGACY
        return level, extension.upper(), kind


def _joined(batches: list[_Decoded]) -> _Decoded:
    if len(batches) == 1:
        return batches[0]
    return _Decoded(b"".join(b.blob for b in batches), sum(b.records for b in batches))


def _cstr(blob: bytes, at: int) -> str:
    end = blob.find(b"\0", at)
    return blob[at:end].decode("ascii", "replace")


def _encoding(raw: bytes) -> int:
    """The first byte after the legacy and REX prefixes (62: EVEX, C4/C5: VEX)."""
    i = 0
    while i < len(raw) - 1 and raw[i] in _LEGACY_PREFIXES:
        i += 1
    return raw[i] if raw else 0


_DISASSEMBLER: _Disassembler | None = None


def _disassembler() -> _Disassembler:
    global _DISASSEMBLER
    if _DISASSEMBLER is None:
        _DISASSEMBLER = _Disassembler()
    return _DISASSEMBLER


class _Tally:
    """Counts, extensions and examples of one ELF, batch by batch."""

    def __init__(self, data: bytes, functions: tuple[tuple[int, int, int], ...], examples: int) -> None:
        self.data = data
        self.counts = [0, 0, 0, 0, 0]  # by level, index = level
        self.extensions: dict[str, int] = {}
        self.kept: dict[int, list[IsaExample]] = {2: [], 3: [], 4: []}
        self.functions = functions
        self.starts = [f[0] for f in functions]
        self.examples = examples

    def add(self, dis: _Disassembler, d: _Decoded, where: _Section) -> None:
        """One batch: VEX and EVEX instructions counted by their first byte (C4/C5: v3, 62: v4), the
        others by their id's level; opmask instructions (VEX-encoded AVX-512) moved to v4."""
        ids = dis.ids(d).tolist()
        first = dis.first_bytes(d)
        first_at = dict(zip(reversed(ids), range(len(ids) - 1, -1, -1), strict=True))
        # data skipped over (id 0): a byte 62/C4/C5 there is no instruction
        skipped = set(_positions(ids, 0)) if 0 in first_at else set()
        wrong = [first[i] for i in skipped]
        evex = first.count(0x62) - wrong.count(0x62)
        vex = first.count(0xC4) + first.count(0xC5) - wrong.count(0xC4) - wrong.count(0xC5)
        self.counts[4] += evex
        self.counts[3] += vex
        found: dict[int, list[int]] = {2: [], 3: [], 4: []}
        levels = dis.levels
        for insn_id, n in Counter(ids).items():
            known = levels.get(insn_id)
            if known is None:
                if insn_id == 0:
                    continue
                known = dis.level_of(insn_id, dis.record(d, first_at[insn_id])[1])
            level, extension, kind = known
            if extension:
                self.extensions[extension] = self.extensions.get(extension, 0) + n
            if level == 1 or kind == _EVEX:
                continue
            if kind == _VEX:
                if level == 4:  # opmask instructions (KMOVW...): AVX-512, VEX-encoded
                    self.counts[4] += n
                    self.counts[3] -= n
                    found[4].append(first_at[insn_id])
                continue
            self.counts[level] += n
            found[level].append(first_at[insn_id])
        if evex and len(self.kept[4]) < self.examples:
            found[4] += _first_matching(first, b"\x62", self.examples, skipped)
        if vex and len(self.kept[3]) < self.examples:
            found[3] += _first_matching(first, b"[\xc4\xc5]", self.examples, skipped)
        for level in (4, 3, 2):
            for i in sorted(found[level])[: self.examples - len(self.kept[level])]:
                address, _, text = dis.record(d, i)
                self.kept[level].append(IsaExample(level, address, self.symbol(address, where), text))

    def symbol(self, address: int, where: _Section) -> str:
        """``function+0x1c``, else ``.text+0x1234`` (no function symbol holds the address)."""
        i = bisect.bisect_right(self.starts, address) - 1
        if i >= 0 and address < self.functions[i][1]:
            start, _, name = self.functions[i]
            return f"{_cstr(self.data, name)}+{address - start:#x}"
        return f"{where.name}+{address - where.addr:#x}"


def _positions(values: list[int], value: int) -> Iterator[int]:
    i = -1
    while True:
        try:
            i = values.index(value, i + 1)
        except ValueError:
            return
        yield i


def _first_matching(first: bytes, pattern: bytes, count: int, skipped: set[int]) -> list[int]:
    out = []
    for m in re.finditer(pattern, first, re.DOTALL):
        if m.start() not in skipped:
            out.append(m.start())
            if len(out) == count:
                break
    return out


def scan_elf(member: str, data: bytes, *, examples: int = EXAMPLES) -> ElfIsa | None:
    """The ISA report of one ELF image (``member``: its name in the wheel); None when it is not an
    x86_64 ELF with section headers. Only the windows around candidates are decoded
    (:func:`_windows`)."""
    layout = _layout(data)
    if layout is None:
        return None
    dis = _disassembler()
    tally = _Tally(data, layout.functions, examples)
    scanned = windows = 0
    for section in layout.code:
        code = data[section.offset : section.offset + section.size]
        starts = [f[0] - section.addr for f in layout.functions]
        pending: list[_Decoded] = []  # small windows' records, tallied together (cs_insn records
        held = 0  # of one stride: the concatenation is an array of them too)
        for lo, hi in _windows(code, starts):
            windows += 1
            scanned += hi - lo
            for batch in dis.decode(code[lo:hi], section.addr + lo):
                pending.append(batch)
                held += batch.records
                if held >= dis.BATCH:
                    tally.add(dis, _joined(pending), section)
                    pending, held = [], 0
        if pending:
            tally.add(dis, _joined(pending), section)
    counts = tally.counts
    level = max((lv for lv in (4, 3, 2) if counts[lv]), default=1)
    return ElfIsa(
        member=member,
        level=level,
        counts=(counts[2], counts[3], counts[4]),
        extensions=tuple(sorted(tally.extensions.items())),
        examples=tuple(e for lv in (4, 3, 2) for e in tally.kept[lv]),
        windows=windows,
        scanned_bytes=scanned,
        code_bytes=sum(s.size for s in layout.code),
    )


def scan_wheel(wheel: Members, members: Iterable[str]) -> tuple[ElfIsa, ...]:
    """The report of each x86_64 ELF among ``members`` of the open ``wheel`` (the host ELFs the
    inspection found, :attr:`WheelReport.elves`), each member read whole, one at a time."""
    out = []
    for name in members:
        found = scan_elf(name, wheel.read(name))
        if found is not None:
            out.append(found)
    return tuple(out)


def host_isa_of(wheel: Members, report: WheelReport, wanted: bool) -> tuple[ElfIsa, ...] | None:
    """What a judgement passes the gate (``evaluate(host_isa=...)``) when its configuration
    ``wanted`` the report (:attr:`buildkit.gate.config.GateConfig.isa_scan`): the scan of the
    wheel's x86_64 host ELFs; None when not wanted."""
    if not wanted:
        return None
    return scan_wheel(wheel, [e.member for e in report.elves if e.machine == "x86_64"])
