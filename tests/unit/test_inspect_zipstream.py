"""buildkit.inspect.zipstream: members read with pread + ISA-L or zlib give zipfile's bytes, and fail
as zipfile does on a bad CRC, a lying size, truncated data or a bad local header."""

from __future__ import annotations

import os
import random
import struct
import zipfile
from pathlib import Path

import pytest

from buildkit.errors import WheelReadError
from buildkit.inspect.zipstream import inflater_name, open_member

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


def _payload() -> bytes:
    rng = random.Random(7)
    return b"".join(
        rng.randbytes(rng.randrange(1, 3000)) + b"\0" * rng.randrange(0, 5000) for _ in range(400)
    )


@pytest.mark.parametrize("inflater", INFLATERS)
@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
@pytest.mark.parametrize("step", [4, 4096, 1 << 20])
def test_same_bytes_as_zipfile(tmp_path: Path, inflater: str, method: int, step: int) -> None:
    data = _payload()
    path, info = _zip(tmp_path, data, method)
    assert _read_all(path, info, inflater, step) == data


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


@pytest.mark.parametrize("inflater", INFLATERS)
def test_lying_sizes(tmp_path: Path, inflater: str) -> None:
    data = _payload()
    path, info = _zip(tmp_path, data, zipfile.ZIP_DEFLATED)
    info.file_size = len(data) - 10  # claims less: stops there, CRC of the prefix is wrong
    with pytest.raises(WheelReadError, match="bad CRC"):
        _read_all(path, info, inflater, 1 << 16)
    info.file_size = len(data) + 10  # claims more: the stream ends first
    with pytest.raises(WheelReadError, match="data ends after"):
        _read_all(path, info, inflater, 1 << 16)


@pytest.mark.parametrize("inflater", INFLATERS)
def test_corrupt_deflate_and_truncated_file(tmp_path: Path, inflater: str) -> None:
    data = _payload()
    path, info = _zip(tmp_path, data, zipfile.ZIP_DEFLATED)
    raw = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename)
    raw[start : start + 64] = b"\xff" * 64
    path.write_bytes(bytes(raw))
    with pytest.raises(WheelReadError):
        _read_all(path, info, inflater, 1 << 16)
    path.write_bytes(bytes(raw[: start + 100]))
    with pytest.raises(WheelReadError):
        _read_all(path, info, inflater, 1 << 16)


def test_bad_local_header(tmp_path: Path) -> None:
    path, info = _zip(tmp_path, b"x" * 100, zipfile.ZIP_STORED)
    raw = bytearray(path.read_bytes())
    struct.pack_into("<4s", raw, info.header_offset, b"XXXX")
    path.write_bytes(bytes(raw))
    with pytest.raises(WheelReadError, match="local header signature"):
        _read_all(path, info, "zlib", 10)
