"""buildkit.inspect on wheels built here with the real toolchain (gcc; LLVM 19 when installed)."""

from __future__ import annotations

import random
import struct
import zipfile
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from buildkit.inspect import Limits, inspect_wheel, split_symbol_version
from buildkit.inspect.codeobject import target_id_from_flags
from buildkit.inspect.offload import split_entry_id
from buildkit.records import to_data
from tests.helpers import amdgpu_toolchain
from tests.helpers.offload_bundle import amdgpu_header, compressed_bundle, plain_bundle
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_zip import write_wheel

pytestmark = pytest.mark.skipif(not have_gcc(), reason="gcc is needed to build test libraries")
WHEEL = "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
needs_llvm = pytest.mark.skipif(
    not amdgpu_toolchain.have_llvm(), reason="LLVM 19 (clang-19, lld-19, clang-tools-19) absent"
)
HIP_DATA = Path(__file__).resolve().parent.parent / "data" / "hip"

GLIBC_234 = """
#include <pthread.h>
#include <sys/random.h>
int f(void *buf) { return (int)getrandom(buf, 4, 0); }
"""
CXX = """
#include <string>
#include <stdexcept>
std::string g(const char *s) { if (!s) throw std::runtime_error("x"); return std::string(s) + "!"; }
"""


def _wheel(tmp_path: Path, members: dict[str, bytes], **kw: object) -> Path:
    return write_wheel(tmp_path / WHEEL, members, **kw)  # type: ignore[arg-type]


def test_host_elf_needs_versions_soname_and_paths(tmp_path: Path) -> None:
    c = build_shared_library(tmp_path / "a.so", GLIBC_234, soname="liba.so.1", rpath="rpath:$ORIGIN/x")
    cxx = build_shared_library(tmp_path / "b.so", CXX, cplusplus=True, rpath="$ORIGIN/../lib")
    report = inspect_wheel(_wheel(tmp_path, {"demo/a.so": c.read_bytes(), "demo/b.so": cxx.read_bytes()}))
    a, b = report.elf("demo/a.so"), report.elf("demo/b.so")
    assert a is not None and b is not None
    assert a.machine == "x86_64" and a.elf_class == 64
    assert a.soname == "liba.so.1" and a.rpath == ("$ORIGIN/x",) and a.runpath == ()
    assert "libc.so.6" in a.needed
    assert "GLIBC_2.25" in a.version_needs["libc.so.6"]  # getrandom
    assert a.max_versions["GLIBC"] >= (2, 25)
    assert b.runpath == ("$ORIGIN/../lib",) and "libstdc++.so.6" in b.needed
    assert any(v.startswith("GLIBCXX_3.4") for v in b.version_needs["libstdc++.so.6"])
    assert {"GLIBCXX", "CXXABI"} <= set(b.max_versions)
    assert a.offload_targets == () and report.code_objects == ()


def test_report_metadata_tags_record_sha(tmp_path: Path) -> None:
    import hashlib

    path = _wheel(tmp_path, {"demo/__init__.py": b"x = 1\n"}, requires=("torch>=2.5,<2.6", "numpy"))
    report = inspect_wheel(path)
    assert report.name == "demo" and report.version == "1.0"
    assert report.tags == ("cp311-cp311-manylinux_2_28_x86_64",)
    assert report.platform_tags == ("manylinux_2_28_x86_64",)
    assert report.wheel_tags == ("cp311-cp311-manylinux_2_28_x86_64",)
    assert report.metadata_requires == ("torch>=2.5,<2.6", "numpy")
    assert report.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert report.size == path.stat().st_size
    assert {r.path for r in report.record} >= {"demo/__init__.py", "demo-1.0.dist-info/RECORD"}
    assert report.root_is_purelib is False
    assert to_data(report)["sha256"] == report.sha256


def test_elf_recognised_by_magic_not_name_and_fake_so_is_a_finding(tmp_path: Path) -> None:
    lib = build_shared_library(tmp_path / "a.so", "int f(void){return 1;}\n")
    report = inspect_wheel(
        _wheel(tmp_path, {"demo/data.bin": lib.read_bytes(), "demo/libfake.so.1": b"/* GNU ld script */"})
    )
    assert [e.member for e in report.elves] == ["demo/data.bin"]
    assert [(f.kind, f.member) for f in report.findings] == [("not-elf-library", "demo/libfake.so.1")]


@pytest.mark.parametrize(
    ("method", "version"), [("zlib", 1), ("zlib", 2), ("zstd", 2), ("zstd", 3), ("zlib", 3)]
)
def test_plain_and_compressed_bundles_in_hip_fatbin(tmp_path: Path, method: str, version: int) -> None:
    co90a = amdgpu_header(0x3F | 0x200, abi_version=2) + b"\0" * 200  # gfx90a:xnack-, code object v4
    co942 = amdgpu_header(0x4C | 0xC00 | 0x200, abi_version=3) + b"\0" * 200  # gfx942:sramecc+:xnack-
    plain = plain_bundle(
        [
            ("host-x86_64-unknown-linux-gnu-", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", co90a),
            ("hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", co942),
        ]
    )
    second = compressed_bundle(
        plain_bundle([("hipv4-amdgcn-amd-amdhsa--gfx1100", b"\x01" * 300)]), method=method, version=version
    )
    fatbin = plain + b"\0" * (-len(plain) % 4096) + second
    lib = build_shared_library(tmp_path / "h.so", "int f(void){return 1;}\n", fatbin=fatbin)
    report = inspect_wheel(_wheel(tmp_path, {"demo/h.so": lib.read_bytes()}))
    (elf,) = report.elves
    assert elf.offload_bundles == 2
    assert elf.gfx_targets == ("gfx1100", "gfx90a:xnack-", "gfx942:sramecc+:xnack-")
    by_id = {e.entry_id: e for e in elf.offload_targets}
    assert by_id["hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"].code_object_target == "gfx90a:xnack-"
    assert (
        by_id["hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"].code_object_target
        == "gfx942:sramecc+:xnack-"
    )
    assert by_id["hipv4-amdgcn-amd-amdhsa--gfx1100"].compression == method
    assert by_id["host-x86_64-unknown-linux-gnu-"].target_id is None
    assert report.findings == ()


def test_cross_check_mismatch_is_a_finding(tmp_path: Path) -> None:
    wrong = amdgpu_header(0x30, abi_version=2) + b"\0" * 100  # a gfx908 code object
    fatbin = plain_bundle([("hipv4-amdgcn-amd-amdhsa--gfx90a", wrong)])
    lib = build_shared_library(tmp_path / "h.so", "int f(void){return 1;}\n", fatbin=fatbin)
    report = inspect_wheel(_wheel(tmp_path, {"demo/h.so": lib.read_bytes()}))
    assert [f.kind for f in report.findings] == ["code-object-mismatch"]
    assert report.elves[0].gfx_targets == ("gfx90a",)


def test_standalone_code_objects_read_from_header_only(tmp_path: Path) -> None:
    big = amdgpu_header(0x4F | 0x400, abi_version=3) + random.Random(0).randbytes(5_000_000)  # gfx950
    path = _wheel(tmp_path, {"demo/k.hsaco": big, "demo/other.co": amdgpu_header(0x3F)})
    report = inspect_wheel(path, verify_record=False)
    assert [(c.member, c.target_id, c.code_object_version) for c in report.code_objects] == [
        ("demo/k.hsaco", "gfx950", 5),
        ("demo/other.co", "gfx90a", 5),
    ]
    stat = next(s for s in report.stats if s.name == "demo/k.hsaco")
    assert stat.kind == "amdgpu" and stat.bytes_read < 2 * 1024 * 1024
    hashed = inspect_wheel(path)  # RECORD verification: read whole, same parse
    assert hashed.code_objects == report.code_objects
    assert next(s for s in hashed.stats if s.name == "demo/k.hsaco").bytes_read == len(big)


@pytest.mark.parametrize(
    ("flags", "version", "expected"),
    [
        (0x3F, 5, "gfx90a"),
        (0x3F | 0x300, 4, "gfx90a:xnack+"),
        (0x4C | 0x800 | 0x200, 5, "gfx942:sramecc-:xnack-"),
        (0x2F | 0x100 | 0x200, 3, "gfx906:sramecc+:xnack+"),
        (0x41, 6, "gfx1100"),
        (0x4D, 5, "unknown-0x04d"),
    ],
)
def test_target_id_from_flags(flags: int, version: int, expected: str) -> None:
    assert target_id_from_flags(flags, version) == expected


def test_entry_ids_and_symbol_versions() -> None:
    assert split_entry_id("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-") == (
        "hipv4",
        "amdgcn-amd-amdhsa",
        "gfx90a:xnack-",
    )
    assert split_entry_id("hip-amdgcn-amd-amdhsa-gfx906") == ("hip", "amdgcn-amd-amdhsa", "gfx906")
    assert split_entry_id("host-x86_64-unknown-linux-gnu-") == ("host", "x86_64-unknown-linux-gnu", None)
    assert split_symbol_version("GLIBCXX_3.4.29") == ("GLIBCXX", (3, 4, 29))
    assert split_symbol_version("GLIBC_PRIVATE") is None


def test_large_member_streams_with_bounded_memory_and_second_pass(tmp_path: Path) -> None:
    """A head window smaller than .dynstr, and no reach before .dynamic, force the second pass (the
    member streamed, not read whole into memory); results must not change."""
    source = "".join(
        f"int exported_function_with_a_long_name_{i}(void){{return {i};}}\n" for i in range(3000)
    )
    lib = build_shared_library(tmp_path / "big.so", source + GLIBC_234)
    path = _wheel(tmp_path, {"demo/big.so": lib.read_bytes()})
    normal = inspect_wheel(path)
    tight_limits = Limits(
        head_bytes=4096,
        tail_bytes=256,
        chunk_size=8192,
        read_whole_bytes=0,
        whole_member_bytes=0,
        dynamic_reach=0,  # nothing before .dynamic kept: its tables are left behind
    )
    tight = inspect_wheel(path, limits=tight_limits)
    assert normal.elves == tight.elves
    assert normal.files == tight.files and tight.record_verified  # the digest is the full pass's
    assert next(s for s in normal.stats if s.name == "demo/big.so").passes == 1
    stat = next(s for s in tight.stats if s.name == "demo/big.so")
    assert stat.passes == 2
    # RECORD verified: the first pass read on to the end (its stream gave the digest), so the second
    # re-read the head only up to the end of the tables it left behind, not the member once more
    with lib.open("rb") as fh:
        elf = ELFFile(fh)
        dynstr, dynamic = elf.get_section_by_name(".dynstr"), elf.get_section_by_name(".dynamic")
        tables_end = dynstr["sh_offset"] + dynstr["sh_size"]
        assert tables_end + tight_limits.chunk_size < dynamic["sh_offset"]  # so the test can tell
    size = lib.stat().st_size
    assert size < stat.bytes_read <= size + tables_end + tight_limits.chunk_size
    unverified = inspect_wheel(path, limits=tight_limits, verify_record=False)
    assert unverified.elves == normal.elves and not unverified.record_verified
    # unverified, no pass reads on to the end: the first stops at .dynamic, the second at the tables
    first_pass = dynamic["sh_offset"] + dynamic["sh_size"]
    read = next(s for s in unverified.stats if s.name == "demo/big.so").bytes_read
    assert read < first_pass + tables_end + 2 * tight_limits.chunk_size


def test_parallel_workers_give_the_same_report(tmp_path: Path) -> None:
    members = {
        f"demo/m{i}.so": build_shared_library(
            tmp_path / f"m{i}.so", f"int f{i}(void){{return {i};}}\n"
        ).read_bytes()
        for i in range(6)
    }
    path = _wheel(tmp_path, members)
    pooled = Limits(threaded_bytes=0)  # this small a wheel is otherwise read on one thread
    assert inspect_wheel(path, workers=1) == inspect_wheel(path, workers=3, limits=pooled)
    assert inspect_wheel(path, workers=3) == inspect_wheel(path, workers=3, limits=pooled)


def test_members_read_whole_or_streamed_give_the_same_facts(tmp_path: Path) -> None:
    """With RECORD verified a small member is read whole and parsed from memory; without, it is
    streamed and parsed as far as needed: the ELF facts and the findings are the same either way."""
    source = "".join(f"int exported_function_{i}(void){{return {i};}}\n" for i in range(400))
    members = {
        "demo/a.so": build_shared_library(tmp_path / "a.so", source + GLIBC_234).read_bytes(),
        "demo/b.cpython-312-x86_64-linux-gnu.so": build_shared_library(
            tmp_path / "b.so", "int g(void){return 2;}\n"
        ).read_bytes(),
        "demo/libfake.so": b"/* GNU ld script */\nINPUT(libreal.so.1)\n",
        "demo/__init__.py": b"from demo import a\n" * 200,
    }
    path = _wheel(tmp_path, members)
    whole = inspect_wheel(path)
    streamed = inspect_wheel(path, verify_record=False)
    assert whole.record_verified and not streamed.record_verified
    assert whole.elves == streamed.elves and len(whole.elves) == 2
    assert whole.findings == streamed.findings
    assert [f.kind for f in whole.findings] == ["not-elf-library"]
    assert "starts with b'/* GNU ld script" in whole.findings[0].message
    read = {s.name: s.bytes_read for s in whole.stats}
    assert all(read[m] == len(data) for m, data in members.items())  # each read whole, once


@pytest.mark.skipif(
    not amdgpu_toolchain.have_llvm(), reason="LLVM 19 (clang-19, lld-19, clang-tools-19) absent"
)
@pytest.mark.parametrize("compress", [False, True])
def test_real_clang_offload_bundler_output(tmp_path: Path, compress: bool) -> None:
    targets = ["gfx90a:xnack-", "gfx942", "gfx1100"]
    blob = amdgpu_toolchain.bundle(tmp_path / "llvm", targets, compress=compress)
    if compress:
        assert blob[:4] == b"CCOB" and struct.unpack_from("<H", blob, 4)[0] >= 2
    lib = build_shared_library(tmp_path / "h.so", "int f(void){return 1;}\n", fatbin=blob)
    report = inspect_wheel(_wheel(tmp_path, {"demo/h.so": lib.read_bytes()}))
    (elf,) = report.elves
    assert elf.gfx_targets == tuple(sorted(targets))
    if not compress:
        assert all(e.code_object_target == e.target_id for e in elf.offload_targets if e.is_device)
    assert report.findings == ()


@pytest.mark.skipif(
    not amdgpu_toolchain.have_llvm(), reason="LLVM 19 (clang-19, lld-19, clang-tools-19) absent"
)
def test_real_code_object_e_flags(tmp_path: Path) -> None:
    co = amdgpu_toolchain.code_object(tmp_path / "llvm", "gfx90a:xnack-")
    report = inspect_wheel(_wheel(tmp_path, {"demo/kernels.hsaco": co}))
    assert [c.target_id for c in report.code_objects] == ["gfx90a:xnack-"]


@pytest.mark.parametrize("so", sorted(HIP_DATA.glob("*.so")), ids=lambda p: p.name)
def test_real_hip_shared_objects_from_hipcc(tmp_path: Path, so: Path) -> None:
    """tests/data/hip/refkernels-<targets>.so were built by hipcc in the Debian builder image; the file
    name lists the offload archs it was built for."""
    report = inspect_wheel(_wheel(tmp_path, {f"demo/{so.name}": so.read_bytes()}))
    (elf,) = report.elves
    expected = {t for t in so.stem.split("-") if t.startswith("gfx")}
    assert {t.split(":")[0] for t in elf.gfx_targets} == expected
    assert any(n.startswith("libamdhip64.so") for n in elf.needed)
    assert all(e.code_object_target == e.target_id for e in elf.offload_targets if e.is_device)


def test_stored_members_work_too(tmp_path: Path) -> None:
    lib = build_shared_library(tmp_path / "a.so", GLIBC_234)
    report = inspect_wheel(_wheel(tmp_path, {"demo/a.so": lib.read_bytes()}, compression=zipfile.ZIP_STORED))
    assert report.elves[0].needed


@pytest.mark.parametrize(
    "data",
    [
        b"Wheel-Version: 1.0\r\nTag: cp311-cp311-manylinux_2_28_x86_64\r\n\r\nbody: no",
        b"Name: x\nSummary: one\n  continued\n\tand tabbed\nTag: a\nTag: b\n",
        b"not a header\nTag: lost\n",
        b"",
        b"Bad Key: x\nTag: y\n",
        b"Key:no-space\nEmpty:\n",
        "Generator: x\u2028y\x0cz\x1cw\nTag: cp312-cp312-linux_x86_64\n".encode(),
        b"Name: a\rTag: b\r\n  folded\r\nTag: c\n\x85d: e\n",
        "Author: \u0141ukasz\nTag: x\n".encode(),
    ],
)
def test_header_fields_are_read_as_email_compat32_reads_them(data: bytes) -> None:
    import email.parser

    from buildkit.inspect.wheel import _headers

    message = email.parser.BytesParser().parsebytes(data)
    assert _headers(data, "x.dist-info/WHEEL") == [(k, str(v)) for k, v in message.items()]


def test_a_metadata_of_millions_of_headers_is_refused(tmp_path: Path) -> None:
    from buildkit.errors import WheelReadError
    from buildkit.inspect.wheel import _headers

    with pytest.raises(WheelReadError, match="more than 50000 header fields"):
        _headers(b"a:b\n" * 60_000, "x.dist-info/METADATA")
