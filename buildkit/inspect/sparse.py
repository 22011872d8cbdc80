"""Keep only chosen byte ranges of a stream that is read once, front to back.

A :class:`SparseBuffer` is told which ranges to keep (:meth:`SparseBuffer.want`) and fed the stream
chunk by chunk (:meth:`SparseBuffer.feed`); feeding the same bytes twice is harmless, so a parser that
discovers a new range inside the chunk it is looking at can ask for it and feed the chunk again.
:class:`SparseStream` is a read-only, seekable file over the kept ranges for pyelftools: reading a
byte that was not kept raises :class:`MissingRange` (the caller then streams the member again); reads are
never short inside the stream, so a missing byte is never mistaken for a corrupt file.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field


class MissingRange(Exception):
    """A read asked for bytes that were not kept."""

    def __init__(self, offset: int, size: int) -> None:
        super().__init__(f"bytes {offset}..{offset + size} were not kept")
        self.offset = offset
        self.size = size


@dataclass
class _Window:
    """One kept range of a member: bytes ``start`` to ``end`` (exclusive), as far as received."""

    start: int
    end: int
    data: bytearray = field(default_factory=bytearray)

    @property
    def filled(self) -> int:
        return self.start + len(self.data)


class SparseBuffer:
    """Byte ranges of a stream of ``size`` bytes, kept as they stream past."""

    def __init__(self, size: int, *, rewind: int = 0, merge: bool = True) -> None:
        """``rewind``: how far behind the stream position a new window may start (the caller feeds
        those bytes again); ``merge``: let a range that starts inside a kept window extend it."""
        self.size = size
        self._rewind = rewind
        self._merge = merge
        self._windows: list[_Window] = []
        self.position = 0  # end of the furthest byte fed so far

    @property
    def kept_bytes(self) -> int:
        return sum(len(w.data) for w in self._windows)

    def want(self, start: int, length: int, *, available_from: int | None = None) -> bool:
        """Keep ``[start, start+length)`` (clipped to the stream). ``available_from`` is the earliest
        offset the caller can still feed (default: the stream position less ``rewind``). Returns False
        when needed bytes have already gone past (the caller needs another pass)."""
        floor = self.position - self._rewind if available_from is None else available_from
        start = max(0, start)
        end = min(self.size, start + max(0, length))
        if end <= start:
            return True
        for window in self._windows:
            inside = window.start <= start <= window.filled if self._merge else window.start == start
            if inside:
                if end > window.end:
                    if window.filled < floor:
                        return False
                    window.end = end
                return True
        if start < floor:
            return False
        self._windows.append(_Window(start, end))
        return True

    def feed(self, offset: int, chunk: bytes | memoryview) -> None:
        chunk_end = offset + len(chunk)
        for window in self._windows:
            filled = window.filled
            if filled >= window.end or not (offset <= filled < chunk_end):
                continue
            stop = min(window.end, chunk_end)
            window.data += chunk[filled - offset : stop - offset]
        self.position = max(self.position, chunk_end)

    def has(self, offset: int, size: int) -> bool:
        return len(self.read(offset, size)) == size

    def read(self, offset: int, size: int) -> bytes:
        """Up to ``size`` kept bytes from ``offset`` (short when a gap or the end follows); adjacent or
        overlapping windows are stitched together."""
        out = b""
        while len(out) < size:
            at = offset + len(out)
            best = b""
            for window in self._windows:
                if window.start <= at < window.filled:
                    got = bytes(window.data[at - window.start : at - window.start + size - len(out)])
                    if len(got) > len(best):
                        best = got
            if not best:
                break
            out += best
        return out

    def clear(self) -> None:
        """Release every kept byte now (parsers hold reference cycles that the GC frees late)."""
        self._windows = []

    def drop(self, start: int) -> None:
        """Forget the window that starts at ``start`` (its bytes were parsed)."""
        self._windows = [w for w in self._windows if w.start != start]


class SparseStream(io.RawIOBase):
    """A seekable, read-only file over a :class:`SparseBuffer` (for pyelftools)."""

    def __init__(self, buffer: SparseBuffer) -> None:
        super().__init__()
        self._buffer = buffer
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            self._pos = offset
        elif whence == io.SEEK_CUR:
            self._pos += offset
        else:
            self._pos = self._buffer.size + offset
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = self._buffer.size - self._pos
        size = min(size, max(0, self._buffer.size - self._pos))
        if size == 0:
            return b""
        got = self._buffer.read(self._pos, size)
        if len(got) < size:
            raise MissingRange(self._pos + len(got), size - len(got))
        self._pos += len(got)
        return got
