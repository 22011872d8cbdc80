"""Hostile and corrupt wheels: each gives WheelReadError (exit 6) with a clear message, never a hang,
a crash or unbounded memory."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest

from buildkit.errors import WheelReadError
from buildkit.inspect import Limits, inspect_wheel
from tests.helpers.offload_bundle import compressed_bundle, plain_bundle
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_zip import write_wheel

WHEEL = "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"


def _lib(tmp_path: Path, fatbin: bytes | None = None) -> bytes:
    if not have_gcc():
        pytest.skip("gcc is needed to build test libraries")
    return build_shared_library(tmp_path / "h.so", "int f(void){return 1;}\n", fatbin=fatbin).read_bytes()


def _raises(path: Path, match: str, **kw: object) -> WheelReadError:
    with pytest.raises(WheelReadError, match=match) as info:
        inspect_wheel(path, **kw)  # type: ignore[arg-type]
    assert info.value.exit_code == 6
    return info.value


def test_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / WHEEL
    path.write_bytes(b"this is not a zip file at all" * 10)
    err = _raises(path, "not a readable zip")
    assert "truncated" not in err.message  # not a zip at all: no guess about a cut download
    path.write_bytes(b"")
    _raises(path, r"not a readable zip: .*\(the file is empty\)")


def test_truncated_zip(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {"demo/a.so": _lib(tmp_path)})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    _raises(path, rf"not a readable zip: .*truncated at {len(data) // 2} bytes\? an interrupted download")


def test_corrupt_member_data_fails_crc_or_inflate(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {"demo/a.so": _lib(tmp_path)}, compression=zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    at = data.find(b"\x7fELF")
    data[at + 2000 : at + 2100] = b"\xff" * 100
    path.write_bytes(bytes(data))
    _raises(path, "demo/a.so")


def test_bad_wheel_name(tmp_path: Path) -> None:
    path = tmp_path / "notawheel.zip"
    path.write_bytes(b"")
    _raises(path, "not a wheel file name")


@pytest.mark.parametrize("name", ["../evil.so", "/etc/passwd", "demo/../../x", "demo\\x.py", "C:/x"])
def test_member_names_that_escape(tmp_path: Path, name: str) -> None:
    path = write_wheel(tmp_path / WHEEL, {name: b"x"})
    _raises(path, "member name")


def test_duplicate_members(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {"demo/a.py": b"1"})
    with zipfile.ZipFile(path, "a") as zf, pytest.warns(UserWarning):
        zf.writestr("demo/a.py", b"2")
    _raises(path, "appears twice")


def test_zip_bomb_by_ratio(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {"demo/zeros.bin": b"\0" * (80 * 1024 * 1024)})
    _raises(path, "zip bomb")


def test_page_padding_is_not_a_zip_bomb(tmp_path: Path) -> None:
    """patchelf pads appended segments to the page: a 2 MiB library deflating 200x+ is real (pillow
    13.0.0's libXau: 224x); only members past ``ratio_floor`` (64 MiB) are held to ``max_ratio``."""
    path = write_wheel(tmp_path / WHEEL, {"demo/padded.bin": b"\0" * (2 * 1024 * 1024)})
    report = inspect_wheel(path)
    assert report.filename == WHEEL


def test_zip_bomb_by_declared_size(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {"demo/big.bin": bytes(range(256)) * 8192})
    _raises(path, "declares", limits=Limits(max_member_size=1024 * 1024))


def test_lying_declared_size_is_caught_while_streaming(tmp_path: Path) -> None:
    """The central directory says 100 bytes; the data inflates to more: zipfile stops at 100 and the
    CRC (of the real data) does not match."""
    lib = _lib(tmp_path)
    path = write_wheel(tmp_path / WHEEL, {"demo/a.so": lib})
    data = bytearray(path.read_bytes())
    cd = 0
    while True:  # patch the a.so entries (local header and central directory) to claim 100 bytes
        cd = data.find(b"demo/a.so", cd + 1)
        if cd == -1:
            break
        if data[cd - 46 : cd - 42] == b"PK\x01\x02":
            struct.pack_into("<I", data, cd - 46 + 24, 100)
        elif data[cd - 30 : cd - 26] == b"PK\x03\x04":
            struct.pack_into("<I", data, cd - 30 + 22, 100)
    path.write_bytes(bytes(data))
    _raises(path, "demo/a.so")


def test_overlapping_members(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {"demo/a.bin": b"A" * 5000, "demo/b.bin": b"B" * 10})
    data = bytearray(path.read_bytes())
    # point b.bin's central-directory header offset at a.bin's local header
    at = data.find(b"demo/b.bin", data.find(b"PK\x01\x02"))
    struct.pack_into("<I", data, at - 46 + 42, 0)
    path.write_bytes(bytes(data))
    _raises(path, "overlap|cannot read|not a readable")


def test_too_many_members(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {f"demo/{i}.py": b"" for i in range(20)})
    _raises(path, "members", limits=Limits(max_members=10))


def test_no_dist_info(tmp_path: Path) -> None:
    path = tmp_path / WHEEL
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("demo/a.py", b"")
    _raises(path, "not a wheel")


def test_truncated_elf(tmp_path: Path) -> None:
    lib = _lib(tmp_path)
    path = write_wheel(tmp_path / WHEEL, {"demo/a.so": lib[: len(lib) // 2]})
    _raises(path, "truncated ELF")


def test_tiny_elf(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {"demo/a.so": b"\x7fELF\x02\x01"})
    _raises(path, "truncated ELF header")


def test_non_elf_so_is_a_finding_not_an_error(tmp_path: Path) -> None:
    report = inspect_wheel(write_wheel(tmp_path / WHEEL, {"demo/x.so": b"GROUP ( libc.so.6 )"}))
    assert [f.kind for f in report.findings] == ["not-elf-library"]


def test_bundle_offsets_pointing_past_the_section(tmp_path: Path) -> None:
    bundle = bytearray(plain_bundle([("hipv4-amdgcn-amd-amdhsa--gfx90a", b"\1" * 100)]))
    struct.pack_into("<Q", bundle, 32, 1 << 40)  # entry offset far past the section
    path = write_wheel(tmp_path / WHEEL, {"demo/h.so": _lib(tmp_path, bytes(bundle))})
    _raises(path, "hip_fatbin")


def test_bundle_with_absurd_entry_count(tmp_path: Path) -> None:
    bundle = bytearray(plain_bundle([("hipv4-amdgcn-amd-amdhsa--gfx90a", b"\1" * 100)]))
    struct.pack_into("<Q", bundle, 24, 1 << 60)
    path = write_wheel(tmp_path / WHEEL, {"demo/h.so": _lib(tmp_path, bytes(bundle))})
    _raises(path, "entries")


def test_compressed_bundle_total_size_lies(tmp_path: Path) -> None:
    blob = bytearray(compressed_bundle(plain_bundle([("hipv4-amdgcn-amd-amdhsa--gfx90a", b"\1" * 64)])))
    struct.pack_into("<I", blob, 8, 1 << 30)  # v2 total size
    path = write_wheel(tmp_path / WHEEL, {"demo/h.so": _lib(tmp_path, bytes(blob))})
    _raises(path, "hip_fatbin")


def test_compressed_bundle_with_garbage_payload(tmp_path: Path) -> None:
    blob = bytearray(compressed_bundle(plain_bundle([("hipv4-amdgcn-amd-amdhsa--gfx90a", b"\1" * 64)])))
    blob[24:40] = b"\x55" * 16
    path = write_wheel(tmp_path / WHEEL, {"demo/h.so": _lib(tmp_path, bytes(blob))})
    _raises(path, "hip_fatbin")


def test_fatbin_that_is_not_a_bundle(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {"demo/h.so": _lib(tmp_path, b"garbage" * 100)})
    _raises(path, "does not start with an offload bundle")


def test_member_name_flagged_utf8_but_not_utf8(tmp_path: Path) -> None:
    # zipfile decodes names while opening the archive: a name whose UTF-8 flag (bit 11) lies raised
    # UnicodeDecodeError out of inspect_wheel (found by the fuzz test); it must be an unreadable wheel
    path = write_wheel(tmp_path / WHEEL, {"demo/\u00e9t\u00e9.py": b"x = 1\n"})
    data = bytearray(path.read_bytes())
    name = "demo/\u00e9t\u00e9.py".encode()
    central = data.rfind(b"PK\x01\x02", 0, data.find(name, data.find(b"PK\x01\x02")) + 1)
    assert central != -1 and struct.unpack_from("<H", data, central + 8)[0] & 0x800
    at = data.find(name, central)
    data[at + 5 : at + 7] = b"\xe2\x28"  # an invalid UTF-8 sequence, same length
    path.write_bytes(bytes(data))
    _raises(path, "not a readable zip: 'utf-8' codec can't decode")


def test_member_with_an_empty_name(tmp_path: Path) -> None:
    # zipfile's ZipInfo.is_dir() indexes name[-1]: an empty name was an IndexError (found by the fuzz test)
    path = write_wheel(tmp_path / WHEEL, {"demo/x.py": b"x = 1\n"})
    data = bytearray(path.read_bytes())
    central = data.find(b"PK\x01\x02")
    name_len = struct.unpack_from("<H", data, central + 28)[0]
    start = central + 46
    assert data[start : start + name_len] == b"demo/x.py"
    # the central directory's copy of the name becomes empty (length 0, bytes removed); the end record's
    # central-directory size and offset shrink accordingly
    del data[start : start + name_len]
    struct.pack_into("<H", data, central + 28, 0)
    end = data.rfind(b"PK\x05\x06")
    size, offset = struct.unpack_from("<II", data, end + 12)
    struct.pack_into("<II", data, end + 12, size - name_len, offset)
    path.write_bytes(bytes(data))
    _raises(path, "has an empty name")


def test_a_compressible_metadata_file_is_a_zip_bomb(tmp_path: Path) -> None:
    """.dist-info files are read whole: they keep the 1 MiB ratio floor (a 2 MiB METADATA of tiny
    headers deflating 500x would cost hundreds of MB once split into fields)."""
    meta = b"Metadata-Version: 2.1\nName: demo\n" + b"a:b\n" * (600 * 1024)
    path = write_wheel(tmp_path / WHEEL, {"demo-1.0.dist-info/licenses/LICENSE": meta})
    _raises(path, "zip bomb")
