"""Clang offload bundles (``__CLANG_OFFLOAD_BUNDLE__`` and compressed ``CCOB``), found while a member
streams past and checked against the ``.hip_fatbin`` section afterwards.

Formats, from LLVM ``clang/lib/Driver/OffloadBundler.cpp``:

* plain: magic (24 bytes) + u64 entry count + per entry u64 offset, u64 size, u64 id length, id bytes;
  offsets are relative to the bundle start.
* compressed: ``"CCOB"`` + u16 version + u16 method (``llvm::compression::Format``: 0 zlib, 1 zstd),
  then v1: u32 uncompressed size, u64 hash; v2: u32 total size, u32 uncompressed size, u64 hash;
  v3: u64 total size, u64 uncompressed size, u64 hash; then the compressed plain bundle. The total size
  (v2/v3) counts the header.

Only the bundle headers are decoded (for a CCOB, only as much of the payload as the inner header needs:
at most 1 MiB of output), never the code objects themselves.
"""

from __future__ import annotations

import io
import struct
import zlib
from typing import NamedTuple

from buildkit.inspect.codeobject import target_id_from_header
from buildkit.inspect.limits import Limits
from buildkit.inspect.models import Oddity, OffloadEntry
from buildkit.inspect.sparse import SparseBuffer

PLAIN_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
_CCOB_HEADER = {1: 20, 2: 24, 3: 32}
_METHODS = {0: "zlib", 1: "zstd"}
_MAX_ID_LEN = 4096
_FIRST_WINDOW = 4096
_MAX_INNER_HEADER = 1024 * 1024
# clang places each translation unit's fat binary in .hip_fatbin aligned to 4096 bytes
# (HIPCodeObjectAlign in clang/lib/CodeGen/CGCUDANV.cpp), and the section sits in a PT_LOAD segment
# whose file offsets are congruent to its addresses modulo the page size: every bundle therefore
# starts at a file offset that is a multiple of 4096, and only those offsets are looked at (a search
# of every byte for the 4-byte "CCOB" costs a third of inflating the member). A bundle placed
# elsewhere is not found: its targets are then missing, which fails a gate that asked for them.
BUNDLE_ALIGN = 4096
#: bytes kept of each code object of a plain bundle, in SAMPLE_WINDOWS windows spread over it, to
#: estimate what compressing saves (each window compressed on its own: no match across windows)
SAMPLE_BYTES = 64 * 1024
SAMPLE_WINDOWS = 8
#: the zstd level of clang-offload-bundler -compress (clang 19 -verbose: "Compression level: 3")
ESTIMATE_LEVEL = 3


class BundleError(Exception):
    """A bundle header that cannot be true (the caller turns it into WheelReadError)."""


class NeedMore(Exception):
    """The header continues past the bytes given: ``size`` bytes from the bundle start are needed."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class RawEntry(NamedTuple):
    """One entry of a clang offload bundle: where its code object sits and its entry id."""

    offset: int
    size: int
    entry_id: str


class ParsedBundle(NamedTuple):
    """One bundle as read from its header. ``extent`` is how many bytes of the section it occupies
    (``None`` for a CCOB v1, which does not say)."""

    start: int
    entries: tuple[RawEntry, ...]
    extent: int | None
    payload_size: int
    compression: str | None


def split_entry_id(entry_id: str) -> tuple[str, str, str | None]:
    """``"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"`` -> ``("hipv4", "amdgcn-amd-amdhsa", "gfx90a:xnack-")``;
    ``"host-x86_64-unknown-linux-gnu-"`` -> ``("host", "x86_64-unknown-linux-gnu", None)``; the older
    ``"hip-amdgcn-amd-amdhsa-gfx906"`` (three-part triple) -> ``("hip", "amdgcn-amd-amdhsa", "gfx906")``."""
    kind, _, rest = entry_id.partition("-")
    parts = rest.split("-", 4)
    if kind == "host":  # clang 19 writes "host-x86_64-unknown-linux-gnu-host-x86_64-unknown-linux-gnu-"
        return kind, "-".join(parts[:4]).rstrip("-"), None
    if len(parts) == 4 and parts[3].startswith("gfx"):
        return kind, "-".join(parts[:3]), parts[3]
    triple = "-".join(parts[:4]).rstrip("-")
    target = parts[4] if len(parts) == 5 and parts[4] else None
    return kind, triple, target


def parse_plain(data: bytes, *, max_entries: int) -> tuple[tuple[RawEntry, ...], int]:
    """Entries of a plain bundle whose bytes start ``data``, and the header length.
    Raises :class:`NeedMore` when ``data`` is too short, :class:`BundleError` when it lies."""
    if len(data) < 32:
        raise NeedMore(32)
    if data[:24] != PLAIN_MAGIC:
        raise BundleError("no __CLANG_OFFLOAD_BUNDLE__ magic")
    (count,) = struct.unpack_from("<Q", data, 24)
    if count == 0 or count > max_entries:
        raise BundleError(f"offload bundle claims {count} entries (allowed 1..{max_entries})")
    pos = 32
    entries: list[RawEntry] = []
    for _ in range(count):
        if len(data) < pos + 24:
            raise NeedMore(pos + 24 + 64 * (count - len(entries)))
        offset, size, id_len = struct.unpack_from("<QQQ", data, pos)
        pos += 24
        if id_len == 0 or id_len > _MAX_ID_LEN:
            raise BundleError(f"offload bundle entry id length {id_len} is not plausible")
        if len(data) < pos + id_len:
            raise NeedMore(pos + id_len + 64 * (count - len(entries)))
        raw_id = data[pos : pos + id_len]
        pos += id_len
        try:
            entry_id = raw_id.decode("ascii")
        except UnicodeDecodeError:
            raise BundleError(f"offload bundle entry id {raw_id[:40]!r} is not ASCII") from None
        if not entry_id.isprintable():
            raise BundleError(f"offload bundle entry id {entry_id[:40]!r} is not printable")
        entries.append(RawEntry(offset, size, entry_id))
    return tuple(entries), pos


def _extent(start: int, outcome: ParsedBundle, available: int) -> int:
    """How many bytes the bundle at ``start`` spans, checked against the ``available`` bytes left in
    its section."""
    if outcome.compression is None:
        header_len = 32 + sum(24 + len(e.entry_id) for e in outcome.entries)
        return _check_entries(outcome.entries, header_len, available, f"{start:#x}")
    extent = outcome.extent if outcome.extent is not None else available
    if extent > available:
        raise BundleError(
            f"compressed offload bundle at {start:#x} claims {extent} bytes, "
            f"past the end of its section ({available} bytes left)"
        )
    return extent


def _check_entries(entries: tuple[RawEntry, ...], header_len: int, available: int, where: str) -> int:
    extent = header_len
    for entry in entries:
        end = entry.offset + entry.size
        if entry.size and (entry.offset < header_len or end > available):
            raise BundleError(
                f"offload bundle entry {entry.entry_id!r} at {where} claims bytes "
                f"{entry.offset}..{end}, outside the {available} bytes available"
            )
        extent = max(extent, end)
    return extent


def _decompress_prefix(method: int, payload: bytes, limit: int) -> bytes:
    if method == 0:
        try:
            return zlib.decompressobj().decompress(payload, limit)
        except zlib.error as err:
            raise BundleError(f"compressed offload bundle: zlib: {err}") from None
    import zstandard  # only CCOB bundles compressed with zstd need it

    try:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(payload), read_across_frames=False)
        out = bytearray()
        while len(out) < limit:
            piece = reader.read(limit - len(out))
            if not piece:
                break
            out += piece
        return bytes(out)
    except zstandard.ZstdError as err:
        if "truncated" in str(err) or "incomplete" in str(err):
            raise NeedMore(len(payload) * 2) from None
        raise BundleError(f"compressed offload bundle: zstd: {err}") from None


def parse_ccob(data: bytes, *, max_entries: int, max_uncompressed: int) -> ParsedBundle:
    """A compressed bundle starting ``data`` (``start`` left 0). NeedMore/BundleError as above."""
    if len(data) < 8:
        raise NeedMore(32)
    magic, version, method = struct.unpack_from("<4sHH", data)
    if magic != CCOB_MAGIC:
        raise BundleError("no CCOB magic")
    if version not in _CCOB_HEADER:
        raise BundleError(f"compressed offload bundle version {version} is unknown (known: 1, 2, 3)")
    if method not in _METHODS:
        raise BundleError(f"compressed offload bundle method {method} is unknown (0 zlib, 1 zstd)")
    header_len = _CCOB_HEADER[version]
    if len(data) < header_len:
        raise NeedMore(header_len)
    total: int | None
    if version == 1:
        usize, _hash = struct.unpack_from("<IQ", data, 8)
        total = None
    elif version == 2:
        total, usize, _hash = struct.unpack_from("<IIQ", data, 8)
    else:
        total, usize, _hash = struct.unpack_from("<QQQ", data, 8)
    if total is not None and total <= header_len:
        raise BundleError(f"compressed offload bundle total size {total} is smaller than its header")
    if usize < 32 or usize > max_uncompressed:
        raise BundleError(f"compressed offload bundle claims {usize} uncompressed bytes")
    payload = data[header_len:total]
    complete = total is not None and len(data) >= total
    limit = min(usize, _MAX_INNER_HEADER)
    inner = _decompress_prefix(method, payload, limit)
    try:
        entries, inner_header = parse_plain(inner, max_entries=max_entries)
    except NeedMore:
        if complete or len(inner) >= limit:
            raise BundleError("compressed offload bundle: inner bundle header incomplete") from None
        raise NeedMore(max(len(data) * 2, header_len + 64)) from None
    except BundleError as err:
        raise BundleError(f"compressed offload bundle: {err}") from None
    _check_entries(entries, inner_header, usize, "a compressed bundle")
    return ParsedBundle(0, entries, total, usize, _METHODS[method])


class BundleScanner:
    """Finds bundle headers in a member as it streams past; keeps only the headers' bytes.

    Every occurrence of either magic at a ``BUNDLE_ALIGN``-aligned offset starts a candidate;
    candidates are parsed as soon as their bytes
    have arrived (a window that starts at 4 KiB and grows to ``limits.bundle_window``), then their
    bytes are released. Occurrences that are not real bundles (the magic inside the HIP runtime's own
    strings) simply fail to parse; only candidates inside ``.hip_fatbin`` count, checked in :meth:`walk`.
    """

    _MAX_CANDIDATES = 100_000

    def __init__(self, size: int, limits: Limits) -> None:
        self._limits = limits
        self._buf = SparseBuffer(size, rewind=len(PLAIN_MAGIC), merge=False)
        self._pending: dict[int, int] = {}
        self._parsed: dict[int, ParsedBundle | str] = {}
        self._entry_heads: dict[int, int] = {}
        self._sampled = 0  # code-object bytes kept as samples (offload_sample_bytes at most)
        self._samples: dict[int, list[tuple[int, int]]] = {}  # code object start -> sampled windows
        self._tail = b""
        self._found = False
        self.overflow = False

    @property
    def kept_bytes(self) -> int:
        return self._buf.kept_bytes

    @property
    def found_bundle(self) -> bool:
        """A well-formed bundle header has streamed past (the member is probably a HIP object)."""
        return self._found

    def clear(self) -> None:
        self._buf.clear()

    def _add_candidate(self, at: int) -> None:
        if at in self._parsed or at in self._pending:
            return
        if len(self._parsed) + len(self._pending) >= self._MAX_CANDIDATES:
            self.overflow = True
            return
        self._pending[at] = _FIRST_WINDOW
        self._buf.want(at, _FIRST_WINDOW)

    def feed(self, offset: int, chunk: bytes) -> None:
        base = offset - len(self._tail)
        joined = self._tail + chunk if self._tail else chunk
        for at in range((-base) % BUNDLE_ALIGN, len(joined), BUNDLE_ALIGN):
            if joined.startswith(PLAIN_MAGIC, at) or joined.startswith(CCOB_MAGIC, at):
                self._add_candidate(base + at)
        self._buf.feed(base, joined)
        self._settle(base, joined)
        self._tail = bytes(joined[-(len(PLAIN_MAGIC) - 1) :])

    def finish(self) -> None:
        self._settle(self._buf.size, b"", final=True)

    def _settle(self, base: int, joined: bytes, *, final: bool = False) -> None:
        changed = True
        while changed:
            changed = False
            for start, want in list(self._pending.items()):
                data = self._buf.read(start, want)
                at_end = start + len(data) >= self._buf.size
                if len(data) < want and not (final or at_end):
                    continue
                outcome = self._try_parse(start, data)
                if isinstance(outcome, int):
                    if outcome > self._limits.bundle_window or (final or at_end):
                        self._parsed[start] = f"bundle header needs {outcome} bytes"
                        del self._pending[start]
                        self._buf.drop(start)
                        continue
                    if not self._buf.want(start, outcome, available_from=base):
                        self._parsed[start] = "bundle header streamed past before it was understood"
                        del self._pending[start]
                        continue
                    self._pending[start] = outcome
                    self._buf.feed(base, joined)
                    changed = True
                    continue
                del self._pending[start]
                self._parsed[start] = outcome
                self._buf.drop(start)
                self._found = self._found or isinstance(outcome, ParsedBundle)
                if isinstance(outcome, ParsedBundle) and outcome.compression is None:
                    for entry in outcome.entries:
                        if entry.size >= 64:
                            head = start + entry.offset
                            self._entry_heads[head] = 64  # the ELF header: the target-id cross-check
                            self._buf.want(head, 64, available_from=base)
                            for at, length in self._sample_windows(head, entry.size):
                                self._buf.want(at, length, available_from=base)
                    self._buf.feed(base, joined)

    def _try_parse(self, start: int, data: bytes) -> ParsedBundle | str | int:
        try:
            if data.startswith(CCOB_MAGIC):
                parsed = parse_ccob(
                    data,
                    max_entries=self._limits.max_bundle_entries,
                    max_uncompressed=self._limits.max_member_size,
                )
                return ParsedBundle(
                    start, parsed.entries, parsed.extent, parsed.payload_size, parsed.compression
                )
            entries, header_len = parse_plain(data, max_entries=self._limits.max_bundle_entries)
            extent = max([header_len] + [e.offset + e.size for e in entries])
            return ParsedBundle(start, entries, extent, extent, None)
        except NeedMore as more:
            return more.size
        except BundleError as err:
            return str(err)

    def _sample_windows(self, head: int, size: int) -> list[tuple[int, int]]:
        """Where a code object of ``size`` bytes at ``head`` is sampled: :data:`SAMPLE_WINDOWS` windows
        spread evenly over it (its start is headers, metadata and symbol names, which compress far
        better than its code), :data:`SAMPLE_BYTES` in all; none once the member's sample budget
        (``offload_sample_bytes``) is spent. Remembered for :meth:`_ratio`."""
        if head in self._samples:
            return self._samples[head]
        total = min(size, SAMPLE_BYTES)
        if self._sampled + total > self._limits.offload_sample_bytes:
            self._samples[head] = []
            return []
        self._sampled += total
        if size <= SAMPLE_BYTES:
            windows = [(head, size)]
        else:
            width = SAMPLE_BYTES // SAMPLE_WINDOWS
            step = (size - width) // (SAMPLE_WINDOWS - 1)
            windows = [(head + i * step, width) for i in range(SAMPLE_WINDOWS)]
        self._samples[head] = windows
        return windows

    def _ratio(self, start: int, bundle: ParsedBundle) -> tuple[int, int] | None:
        """(compressed, sampled) bytes of the windows sampled over the device code objects of the
        plain ``bundle`` at ``start``, compressed together in one zstd frame as clang compresses a
        whole bundle (the code objects of different targets share much); None without a whole
        sample of every one."""
        parts: list[bytes] = []
        for raw in bundle.entries:
            if raw.size < 64 or split_entry_id(raw.entry_id)[2] is None:
                continue
            windows = self._samples.get(start + raw.offset) or []
            if not windows:
                return None
            for at, length in windows:
                part = self._buf.read(at, length)
                if len(part) != length:
                    return None
                parts.append(part)
        if not parts:
            return None
        # by window position first: the same stretch of each target's code object side by side
        count = len(parts) // max(1, len([r for r in bundle.entries if r.size >= 64]))
        ordered = [parts[i] for k in range(max(1, count)) for i in range(k, len(parts), max(1, count))]
        import zstandard  # only for plain bundles with device code

        sample = b"".join(ordered if len(ordered) == len(parts) else parts)
        packed = len(zstandard.ZstdCompressor(level=ESTIMATE_LEVEL).compress(sample))
        return packed, len(sample)

    def walk(
        self, member: str, section_offset: int, section_size: int
    ) -> tuple[tuple[OffloadEntry, ...], int, tuple[Oddity, ...]]:
        """The bundles that tile the fat-binary section ``[offset, offset+size)``: each starts where the
        previous one ends (after padding). Raises BundleError when the section's bundles lie."""
        if self.overflow:
            raise BundleError("too many offload-bundle magics in one file")
        end = section_offset + section_size
        starts = sorted(s for s in self._parsed if section_offset <= s < end)
        if not starts or starts[0] != section_offset:
            raise BundleError(
                f"section at {section_offset:#x} (size {section_size}) does not start with an offload bundle"
            )
        entries: list[OffloadEntry] = []
        findings: list[Oddity] = []
        bundles = 0
        pos = section_offset
        for start in starts:
            if start < pos:
                continue  # a magic inside the previous bundle's payload
            outcome = self._parsed[start]
            if isinstance(outcome, str):
                raise BundleError(f"offload bundle at {start:#x}: {outcome}")
            extent = _extent(start, outcome, end - start)
            entries += self._entries(member, start, outcome, extent, bundles, findings)
            bundles += 1
            pos = start + extent
        return tuple(entries), bundles, tuple(findings)

    def _entries(
        self, member: str, start: int, outcome: ParsedBundle, extent: int, bundle: int, findings: list[Oddity]
    ) -> list[OffloadEntry]:
        """The entries of the bundle at ``start`` (``extent`` bytes long), the ``bundle``-th of its
        section; an entry whose code object names another target adds a finding."""
        entries = []
        weights = sum(raw.size for raw in outcome.entries) or 1
        ratio = self._ratio(start, outcome) if outcome.compression is None else None
        for raw in outcome.entries:
            kind, triple, target = split_entry_id(raw.entry_id)
            co_target = None
            if outcome.compression is None and target is not None and raw.size >= 64:
                co_target = target_id_from_header(self._buf.read(start + raw.offset, 64))
                if co_target is not None and co_target != target:
                    findings.append(
                        Oddity(
                            "code-object-mismatch",
                            member,
                            f"bundle entry {raw.entry_id!r} holds a code object for {co_target}",
                        )
                    )
            if outcome.compression is None:
                stored = raw.size
                estimate = None if ratio is None or target is None else -(-raw.size * ratio[0] // ratio[1])
            else:
                stored, estimate = extent * raw.size // weights, None
            entries.append(
                OffloadEntry(
                    raw.entry_id,
                    kind,
                    triple,
                    target,
                    raw.size,
                    outcome.compression,
                    co_target,
                    stored=stored,
                    bundle=bundle,
                    compressed_estimate=estimate,
                )
            )
        return entries
