"""Stream one member of a zip straight from the file, for as long as the caller wants it.

:mod:`zipfile` parses the central directory (once, in :mod:`~buildkit.inspect.wheel`); this module
only reads a member's data: the local header at ``ZipInfo.header_offset``, then the compressed bytes
with ``os.pread`` on one shared descriptor (thread-safe, no seek state, no per-thread ``ZipFile``),
inflated by ISA-L (``isal.isal_zlib``, about twice zlib's speed) when installed, else by zlib (the
same API). A reader that stops early has read and inflated only the prefix it consumed.

Integrity, as :mod:`zipfile` checks it: the local header's signature and name; the inflated data
never exceeds the declared size; a member read to its end must have exactly the declared size and
CRC-32 (so a lying size or corrupt data fails). Data after the point where a reader stops is not
read, so not checked: that is the price of the early stop (see ``Limits.verify_members``).
Methods other than stored and deflate (bzip2, lzma: legal in zips, unusual in wheels) are read
through :mod:`zipfile`.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import queue
import struct
import threading
import zipfile
import zlib
from types import ModuleType
from typing import IO, Any

from buildkit.errors import WheelReadError

_isal: ModuleType | None
try:
    from isal import isal_zlib as _isal
except ImportError:  # pragma: no cover - depends on the environment
    _isal = None

_crc32 = _isal.crc32 if _isal is not None else zlib.crc32  # ISA-L's is ~20x faster here

_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"
_MIN_INPUT = 4096
_MAX_INPUT = 256 * 1024
BACKGROUND_HASH_BYTES = 16 * 1024 * 1024


def inflater_name() -> str:
    """``"isal"`` or ``"zlib"``: what :func:`open_member` inflates with by default."""
    return "isal" if _isal is not None else "zlib"


def _inflate_module(name: str | None) -> Any:
    name = name or inflater_name()
    if name == "isal":
        if _isal is None:
            raise RuntimeError("isal is not installed")
        return _isal
    return zlib


def _name_length(info: zipfile.ZipInfo) -> int:
    """How many bytes the member's name takes in its local header (as the central directory says)."""
    return len(info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437", "replace"))


def _data_start(info: zipfile.ZipInfo, head: bytes) -> int:
    """Check the local header at the start of ``head`` (its fixed part and the name, at least): the
    signature, and that it names ``info``'s member. Returns where the member's data starts, from the
    header's offset."""
    if len(head) < _LOCAL_HEADER.size:
        raise WheelReadError(f"{info.filename}: local header lies past the end of the file")
    fields = _LOCAL_HEADER.unpack_from(head)
    if fields[0] != _LOCAL_SIGNATURE:
        raise WheelReadError(f"{info.filename}: bad local header signature {fields[0]!r}")
    name_len: int = fields[-2]
    extra_len: int = fields[-1]
    raw_name = head[_LOCAL_HEADER.size : _LOCAL_HEADER.size + name_len]
    encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
    if len(raw_name) != name_len or raw_name.decode(encoding, "replace") != info.orig_filename:
        raise WheelReadError(f"{info.filename}: the local header names {raw_name!r}")
    return _LOCAL_HEADER.size + name_len + extra_len


class MemberStream(io.RawIOBase):
    """Readable stream of one stored or deflated member's uncompressed bytes (``read(n)`` returns at
    most ``n``)."""

    def __init__(self, fd: int, info: zipfile.ZipInfo, *, inflater: str | None = None) -> None:
        super().__init__()
        self._fd = fd
        self._info = info
        self.name = info.filename
        head = os.pread(fd, _LOCAL_HEADER.size + _name_length(info), info.header_offset)
        self._pos = info.header_offset + _data_start(info, head)
        self._left = info.compress_size  # compressed bytes not read yet
        self._remaining = info.file_size  # uncompressed bytes not returned yet
        self._crc = 0
        self._pending = b""
        self._module: Any = None
        self._inflate: Any = None
        if info.compress_type == zipfile.ZIP_DEFLATED:
            self._module = _inflate_module(inflater)
            self._inflate = self._module.decompressobj(-15)
        elif info.compress_size != info.file_size:
            raise WheelReadError(
                f"{self.name}: stored member sizes differ ({info.compress_size} vs {info.file_size})"
            )

    def readable(self) -> bool:
        return True

    def _input(self, want: int, *, exact: bool = False) -> bytes:
        if self._pending:
            data, self._pending = self._pending, b""
            return data
        size = min(self._left, want if exact else max(_MIN_INPUT, min(want, _MAX_INPUT)))
        if size == 0:
            return b""
        data = os.pread(self._fd, size, self._pos)
        if not data:
            raise WheelReadError(f"{self.name}: compressed data ends early (the file is truncated)")
        self._pos += len(data)
        self._left -= len(data)
        return data

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = self._remaining
        size = min(size, self._remaining)
        if size == 0:
            return b""
        if self._inflate is None:
            out = self._input(size, exact=True)
        else:
            out = b""
            while not out and not self._inflate.eof:
                data = self._input(size // 2)
                try:  # called with no new input too: the inflater may hold output back (max_length)
                    out = self._inflate.decompress(data, size)
                except self._module.error as err:
                    raise WheelReadError(f"{self.name}: corrupt deflate data: {err}") from None
                self._pending = self._inflate.unconsumed_tail
                if not out and not data:
                    break  # no input left and nothing held back
        if not out:
            raise WheelReadError(
                f"{self.name}: data ends after {self._info.file_size - self._remaining} bytes, "
                f"the zip says {self._info.file_size}"
            )
        self._crc = _crc32(out, self._crc)
        self._remaining -= len(out)
        if self._remaining == 0 and self._crc != self._info.CRC:
            raise WheelReadError(
                f"{self.name}: bad CRC-32 ({self._crc:08x}, the zip says {self._info.CRC:08x})"
            )
        return out


def record_hash(algorithm: str, digest: bytes) -> str:
    """A digest written the way a wheel's RECORD writes it: ``"sha256=<urlsafe base64, unpadded>"``."""
    return f"{algorithm}=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class DigestStream(io.RawIOBase):
    """Passes ``inner``'s bytes through, hashing them with ``algorithm`` (a :mod:`hashlib` name);
    :meth:`record_hash` is the digest once ``size`` bytes have gone by, else ``None``. hashlib releases
    the GIL on large blocks, so the workers hash in parallel."""

    def __init__(self, inner: IO[bytes], algorithm: str, size: int) -> None:
        super().__init__()
        self._inner = inner
        self.algorithm = algorithm
        self._hash = hashlib.new(algorithm)
        self._size = size
        self.position = 0
        self.name = getattr(inner, "name", "")
        # A large member is hashed on a helper thread while the caller inflates the next chunk (both
        # release the GIL): on a wheel made of one big library, that is the difference between
        # inflate + hash and max(inflate, hash). At most 4 chunks wait in the queue.
        self._queue: queue.Queue[bytes | None] | None = None
        self._thread: threading.Thread | None = None
        if size >= BACKGROUND_HASH_BYTES:
            self._queue = queue.Queue(maxsize=4)
            self._thread = threading.Thread(target=self._hash_queued, name="member-hash", daemon=True)
            self._thread.start()

    def _hash_queued(self) -> None:
        assert self._queue is not None
        while (data := self._queue.get()) is not None:
            self._hash.update(data)

    def _join(self) -> None:
        if self._thread is not None and self._queue is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        data = self._inner.read(-1 if size is None else size)
        if self._queue is not None:
            self._queue.put(data)
        else:
            self._hash.update(data)
        self.position += len(data)
        return data

    def close(self) -> None:
        try:
            self._join()
            self._inner.close()
        finally:
            super().close()

    @property
    def complete(self) -> bool:
        """Every byte has gone by (:meth:`record_hash` will be the member's digest)."""
        return self.position == self._size

    def record_hash(self) -> str | None:
        self._join()
        return record_hash(self.algorithm, self._hash.digest()) if self.position == self._size else None


def read_whole(fd: int, info: zipfile.ZipInfo, *, inflater: str | None = None) -> bytes:
    """All of a small stored or deflated member (see :func:`whole_readable`) with one ``pread`` and
    one inflate: what a wheel with thousands of small files costs when every member is hashed.
    Checked as :class:`MemberStream` checks a member read to its end: the local header's signature
    and name, the declared size as a hard bound on what is inflated, the size and CRC-32."""
    name = info.filename
    # the local extra field usually repeats the central one: one read covers header, name and data
    want = _LOCAL_HEADER.size + _name_length(info) + len(info.extra) + info.compress_size
    raw = os.pread(fd, want, info.header_offset)
    begin = _data_start(info, raw)
    data = raw[begin : begin + info.compress_size]
    if len(data) < info.compress_size:  # a longer local extra than the central one: read the rest
        data += os.pread(fd, info.compress_size - len(data), info.header_offset + begin + len(data))
    if len(data) < info.compress_size:
        raise WheelReadError(f"{name}: compressed data ends early (the file is truncated)")
    if info.compress_type == zipfile.ZIP_DEFLATED:
        module = _inflate_module(inflater)
        try:  # max_length: never more than the declared size, whatever the data would expand to
            out: bytes = module.decompressobj(-15).decompress(data, info.file_size)
        except module.error as err:
            raise WheelReadError(f"{name}: corrupt deflate data: {err}") from None
    elif info.compress_size != info.file_size:
        raise WheelReadError(f"{name}: stored member sizes differ ({info.compress_size} vs {info.file_size})")
    else:
        out = data
    if len(out) != info.file_size:
        raise WheelReadError(f"{name}: data ends after {len(out)} bytes, the zip says {info.file_size}")
    crc = _crc32(out)
    if crc != info.CRC:
        raise WheelReadError(f"{name}: bad CRC-32 ({crc:08x}, the zip says {info.CRC:08x})")
    return out


def whole_readable(info: zipfile.ZipInfo, limit: int) -> bool:
    """Whether :func:`read_whole` serves ``info``: stored or deflated, at most ``limit`` bytes
    compressed and ``4 * limit`` inflated."""
    return (
        info.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
        and info.compress_size <= limit
        and info.file_size <= 4 * limit
    )


def sniff(fd: int, info: zipfile.ZipInfo, fallback: zipfile.ZipFile | None = None, size: int = 4) -> bytes:
    """The first ``size`` bytes of a member, usually with a single ``pread`` (local header, name and
    the first compressed bytes at once): how every member is told ELF or not."""
    name_len = _name_length(info)
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        with open_member(fd, info, fallback) as stream:
            return stream.read(size)
    raw = os.pread(fd, _LOCAL_HEADER.size + name_len + 512, info.header_offset)
    if len(raw) >= _LOCAL_HEADER.size:
        fields = _LOCAL_HEADER.unpack_from(raw)
        start = _LOCAL_HEADER.size + fields[-2] + fields[-1]
        data = raw[start : start + min(info.compress_size, 512)]
        if fields[0] == _LOCAL_SIGNATURE and fields[-2] == name_len and len(data) >= 64:
            if info.compress_type == zipfile.ZIP_STORED:
                return data[:size]
            try:
                out: bytes = zlib.decompressobj(-15).decompress(data, size)
            except zlib.error as err:
                raise WheelReadError(f"{info.filename}: corrupt deflate data: {err}") from None
            if len(out) == min(size, info.file_size):
                return out
    with open_member(fd, info, fallback) as stream:  # an odd header, or a tiny member: the full checks
        return stream.read(size)


def open_member(
    fd: int, info: zipfile.ZipInfo, fallback: zipfile.ZipFile | None = None, *, inflater: str | None = None
) -> IO[bytes]:
    """A stream of ``info``'s bytes; ``fallback`` (a ZipFile on the same file) serves methods other
    than stored and deflate."""
    if info.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        return MemberStream(fd, info, inflater=inflater)  # type: ignore[return-value]
    if fallback is None:
        raise WheelReadError(f"{info.filename}: compression method {info.compress_type} is not supported")
    return fallback.open(info)
