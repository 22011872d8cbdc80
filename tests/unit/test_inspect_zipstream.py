"""buildkit.inspect.zipstream: members read with pread + ISA-L or zlib give zipfile's bytes, and fail
as zipfile does on a bad CRC, a lying size, truncated data or a bad local header; the one-shot reader
of small members (``read_whole``) passes and fails exactly as the stream read to its end does."""

from __future__ import annotations

import os
import random
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from buildkit.errors import WheelReadError
from buildkit.inspect.limits import Limits
from buildkit.inspect.zipstream import inflater_name, open_member, read_whole, whole_readable

WHOLE = Limits().read_whole_bytes  # the reader's bound: 1 MiB compressed, 4 MiB inflated

INFLATERS = [
    "zlib",
    pytest.param("isal", marks=pytest.mark.skipif(inflater_name() != "isal", reason="isal absent")),
]


def _zip(tmp_path: Path, data: bytes, method: int) -> tuple[Path, zipfile.ZipInfo]:
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        zf.writestr("m.bin", data)
    with zipfile.ZipFile(path) as zf:
        return path, zf.getinfo("m.bin")


def _read_all(path: Path, info: zipfile.ZipInfo, inflater: str, step: int) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        stream = open_member(fd, info, inflater=inflater)
        out = bytearray()
        while piece := stream.read(step):
            assert len(piece) <= step
            out += piece
        return bytes(out)
    finally:
        os.close(fd)


def _whole(path: Path, info: zipfile.ZipInfo, inflater: str, step: int) -> bytes:
    assert whole_readable(info, WHOLE)
    fd = os.open(path, os.O_RDONLY)
    try:
        return read_whole(fd, info, inflater=inflater)
    finally:
        os.close(fd)


# a member read to its end, streamed or at once: the same bytes, the same refusals
READERS = [_read_all, _whole]


def _payload() -> bytes:
    rng = random.Random(7)
    return b"".join(
        rng.randbytes(rng.randrange(1, 3000)) + b"\0" * rng.randrange(0, 5000) for _ in range(200)
    )


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("inflater", INFLATERS)
@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
@pytest.mark.parametrize("step", [4, 4096, 1 << 20])
def test_same_bytes_as_zipfile(
    tmp_path: Path, reader: Callable[..., bytes], inflater: str, method: int, step: int
) -> None:
    data = _payload()
    path, info = _zip(tmp_path, data, method)
    assert reader(path, info, inflater, step) == data


@pytest.mark.parametrize("inflater", INFLATERS)
def test_bad_crc_fails_at_the_end_only(tmp_path: Path, inflater: str) -> None:
    data = _payload()
    path, info = _zip(tmp_path, data, zipfile.ZIP_DEFLATED)
    info.CRC ^= 1
    fd = os.open(path, os.O_RDONLY)
    try:
        assert open_member(fd, info, inflater=inflater).read(1000) == data[:1000]  # early stop: no check
        with pytest.raises(WheelReadError, match="bad CRC"):
            _read_all(path, info, inflater, 1 << 16)
    finally:
        os.close(fd)


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("inflater", INFLATERS)
def test_lying_sizes(tmp_path: Path, reader: Callable[..., bytes], inflater: str) -> None:
    data = _payload()
    path, info = _zip(tmp_path, data, zipfile.ZIP_DEFLATED)
    info.file_size = len(data) - 10  # claims less: stops there, CRC of the prefix is wrong
    with pytest.raises(WheelReadError, match="bad CRC"):
        reader(path, info, inflater, 1 << 16)
    info.file_size = len(data) + 10  # claims more: the stream ends first
    with pytest.raises(WheelReadError, match="data ends after"):
        reader(path, info, inflater, 1 << 16)


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("inflater", INFLATERS)
def test_corrupt_deflate_and_truncated_file(
    tmp_path: Path, reader: Callable[..., bytes], inflater: str
) -> None:
    data = _payload()
    path, info = _zip(tmp_path, data, zipfile.ZIP_DEFLATED)
    raw = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename)
    raw[start : start + 64] = b"\xff" * 64
    path.write_bytes(bytes(raw))
    with pytest.raises(WheelReadError):
        reader(path, info, inflater, 1 << 16)
    path.write_bytes(bytes(raw[: start + 100]))
    with pytest.raises(WheelReadError):
        reader(path, info, inflater, 1 << 16)


@pytest.mark.parametrize("reader", READERS)
def test_bad_local_header(tmp_path: Path, reader: Callable[..., bytes]) -> None:
    path, info = _zip(tmp_path, b"x" * 100, zipfile.ZIP_STORED)
    raw = bytearray(path.read_bytes())
    struct.pack_into("<4s", raw, info.header_offset, b"XXXX")
    path.write_bytes(bytes(raw))
    with pytest.raises(WheelReadError, match="local header signature"):
        reader(path, info, "zlib", 10)


@pytest.mark.parametrize("reader", READERS)
def test_local_header_naming_another_member(tmp_path: Path, reader: Callable[..., bytes]) -> None:
    path, info = _zip(tmp_path, b"x" * 100, zipfile.ZIP_STORED)
    raw = bytearray(path.read_bytes())
    name_at = info.header_offset + 30
    raw[name_at : name_at + 5] = b"n.bin"
    path.write_bytes(bytes(raw))
    with pytest.raises(WheelReadError, match=r"the local header names b'n\.bin'"):
        reader(path, info, "zlib", 10)


@pytest.mark.parametrize("reader", READERS)
def test_stored_sizes_that_differ(tmp_path: Path, reader: Callable[..., bytes]) -> None:
    path, info = _zip(tmp_path, b"x" * 100, zipfile.ZIP_STORED)
    info.file_size = 120
    with pytest.raises(WheelReadError, match="stored member sizes differ"):
        reader(path, info, "zlib", 10)


@pytest.mark.parametrize("reader", READERS)
def test_a_local_extra_field_longer_than_the_central_one(
    tmp_path: Path, reader: Callable[..., bytes]
) -> None:
    """The local header may carry more extra bytes than the central directory: the data starts later."""
    data = _payload()
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        local = zipfile.ZipInfo("m.bin")
        local.compress_type = zipfile.ZIP_DEFLATED
        local.extra = struct.pack("<HH", 0xCAFE, 2000) + b"\0" * 2000
        zf.writestr(local, data)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("m.bin")
    info.extra = b""  # what a central directory that omits the local extra field says
    assert reader(path, info, "zlib", 1 << 16) == data


def test_only_small_stored_or_deflated_members_are_read_whole(tmp_path: Path) -> None:
    _, small = _zip(tmp_path, b"x" * 100, zipfile.ZIP_DEFLATED)
    assert whole_readable(small, WHOLE)
    big = zipfile.ZipInfo("big.bin")
    big.compress_type, big.compress_size, big.file_size = zipfile.ZIP_DEFLATED, 2 << 20, 3 << 20
    assert not whole_readable(big, WHOLE)
    bomb = zipfile.ZipInfo("bomb.bin")  # inflates past what a worker may hold at once
    bomb.compress_type, bomb.compress_size, bomb.file_size = zipfile.ZIP_DEFLATED, 100_000, 100 << 20
    assert not whole_readable(bomb, WHOLE)
    lzma = zipfile.ZipInfo("x.bin")
    lzma.compress_type, lzma.compress_size, lzma.file_size = zipfile.ZIP_LZMA, 10, 10
    assert not whole_readable(lzma, WHOLE)
