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
from bisect import bisect_left, bisect_right


class MissingRange(Exception):
    """A read asked for bytes that were not kept."""

    def __init__(self, offset: int, size: int) -> None:
        super().__init__(f"bytes {offset}..{offset + size} were not kept")
        self.offset = offset
        self.size = size


class _Window:
    """One kept range of a member: bytes ``start`` to ``end`` (exclusive), as far as received;
    ``seq`` orders windows as they were asked for."""

    __slots__ = ("data", "end", "seq", "start")

    def __init__(self, start: int, end: int, seq: int) -> None:
        self.start = start
        self.end = end
        self.seq = seq
        self.data = bytearray()

    @property
    def filled(self) -> int:
        return self.start + len(self.data)


class SparseBuffer:
    """Byte ranges of a stream of ``size`` bytes, kept as they stream past.

    The windows are kept in order of their start, with the longest window's length (``span``): the
    windows that can hold an offset are found by bisection, not by a scan of all of them. A HIP host
    object keeps one small window per code object (onnxruntime-rocm's provider: 3,700), and every
    chunk streamed and every header parsed would otherwise look at each of them."""

    def __init__(self, size: int, *, rewind: int = 0, merge: bool = True) -> None:
        """``rewind``: how far behind the stream position a new window may start (the caller feeds
        those bytes again); ``merge``: let a range that starts inside a kept window extend it."""
        self.size = size
        self._rewind = rewind
        self._merge = merge
        self._windows: list[_Window] = []  # by start; windows with the same start in order asked
        self._starts: list[int] = []
        self._open: list[_Window] = []  # the windows not yet filled to their end, by start
        self._open_starts: list[int] = []
        self._span = 0  # the longest window: none that starts further before an offset can hold it
        self._seq = 0
        self.position = 0  # end of the furthest byte fed so far

    @property
    def kept_bytes(self) -> int:
        return sum(len(w.data) for w in self._windows)

    def _near(self, lo: int, hi: int) -> list[_Window]:
        """The windows starting in ``[lo, hi]``."""
        return self._windows[bisect_left(self._starts, lo) : bisect_right(self._starts, hi)]

    def _reopen(self, window: _Window) -> None:
        at = bisect_right(self._open_starts, window.start)
        self._open.insert(at, window)
        self._open_starts.insert(at, window.start)

    def want(self, start: int, length: int, *, available_from: int | None = None) -> bool:
        """Keep ``[start, start+length)`` (clipped to the stream). ``available_from`` is the earliest
        offset the caller can still feed (default: the stream position less ``rewind``). Returns False
        when needed bytes have already gone past (the caller needs another pass)."""
        floor = self.position - self._rewind if available_from is None else available_from
        start = max(0, start)
        end = min(self.size, start + max(0, length))
        if end <= start:
            return True
        if self._merge:  # the first window asked for whose kept bytes reach ``start``
            near = [w for w in self._near(start - self._span, start) if start <= w.filled]
        else:
            near = self._near(start, start)
        if near:
            window = min(near, key=lambda w: w.seq)
            if end > window.end:
                if window.filled < floor:
                    return False
                was_open = window.filled < window.end
                window.end = end
                self._span = max(self._span, end - window.start)
                if not was_open:
                    self._reopen(window)
            return True
        if start < floor:
            return False
        window = _Window(start, end, self._seq)
        self._seq += 1
        at = bisect_right(self._starts, start)
        self._windows.insert(at, window)
        self._starts.insert(at, start)
        self._reopen(window)
        self._span = max(self._span, end - start)
        return True

    def feed(self, offset: int, chunk: bytes | memoryview) -> None:
        chunk_end = offset + len(chunk)
        lo = bisect_left(self._open_starts, offset - self._span)
        hi = bisect_left(self._open_starts, chunk_end)
        done = []
        for at in range(lo, hi):
            window = self._open[at]
            filled = window.start + len(window.data)
            if not offset <= filled < chunk_end:
                continue
            window.data += chunk[filled - offset : min(window.end, chunk_end) - offset]
            if window.start + len(window.data) >= window.end:
                done.append(at)
        for at in reversed(done):
            del self._open[at]
            del self._open_starts[at]
        self.position = max(self.position, chunk_end)

    def has(self, offset: int, size: int) -> bool:
        return len(self.read(offset, size)) == size

    def read(self, offset: int, size: int) -> bytes:
        """Up to ``size`` kept bytes from ``offset`` (short when a gap or the end follows); adjacent or
        overlapping windows are stitched together."""
        parts: list[bytes] = []
        got = 0
        while got < size:
            at = offset + got
            best: _Window | None = None
            most = 0
            for window in self._near(at - self._span, at):
                reach = window.start + len(window.data) - at
                if reach > most:
                    best, most = window, reach
            if best is None:
                break
            take = min(most, size - got)
            parts.append(bytes(best.data[at - best.start : at - best.start + take]))
            got += take
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def clear(self) -> None:
        """Release every kept byte now (parsers hold reference cycles that the GC frees late)."""
        self._windows, self._starts, self._open, self._open_starts = [], [], [], []

    def drop(self, start: int) -> None:
        """Forget the window that starts at ``start`` (its bytes were parsed)."""
        for windows, starts in ((self._windows, self._starts), (self._open, self._open_starts)):
            lo, hi = bisect_left(starts, start), bisect_right(starts, start)
            del windows[lo:hi]
            del starts[lo:hi]


class WholeBuffer(SparseBuffer):
    """A member already in memory (read whole): every byte is kept from the start, nothing streams.

    The ELF passes read through it as through a :class:`SparseBuffer` that kept everything, at the
    cost of a slice (a parse reads a few thousand strings and entries of each ELF)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(len(data))
        self._data = data
        self.position = len(data)

    @property
    def kept_bytes(self) -> int:
        return len(self._data)

    def want(self, start: int, length: int, *, available_from: int | None = None) -> bool:
        return True

    def feed(self, offset: int, chunk: bytes | memoryview) -> None:
        return None

    def has(self, offset: int, size: int) -> bool:
        return len(self.read(offset, size)) == size

    def read(self, offset: int, size: int) -> bytes:
        return self._data[offset : offset + max(0, size)] if offset >= 0 else b""

    def clear(self) -> None:
        self._data = b""

    def drop(self, start: int) -> None:
        return None


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
