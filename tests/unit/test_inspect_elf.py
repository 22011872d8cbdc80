"""buildkit.inspect.elf: the early stop. A host ELF that is not a HIP object is read only up to the end
of its dynamic data; a HIP object is read to the end (its bundles are found through the section
table); the results never depend on where reading stopped."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from buildkit.errors import WheelReadError
from buildkit.inspect import Limits, WheelReport, inspect_wheel
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_zip import write_wheel

pytestmark = pytest.mark.skipif(not have_gcc(), reason="gcc is needed to build test libraries")
WHEEL = "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
HIP_DATA = Path(__file__).resolve().parent.parent / "data" / "hip"
EARLY = Limits(whole_member_bytes=0, chunk_size=4096)
FULL = Limits(verify_members=True, chunk_size=4096)
# Local (static) functions land in .symtab/.strtab, which follow the dynamic data, not in .dynsym.
BIG_TAIL = (
    "".join(
        f"__attribute__((used)) static int local_helper_with_a_rather_long_name_{i}(void){{return {i};}}\n"
        for i in range(4000)
    )
    + "#include <sys/random.h>\nint f(void *b){return (int)getrandom(b, 4, 0);}\n"
)


def _stat(report: WheelReport, member: str) -> tuple[int, int, int]:
    stat = next(s for s in report.stats if s.name == member)
    return stat.bytes_read, stat.file_size, stat.passes


def test_non_hip_member_stops_after_its_dynamic_data(tmp_path: Path) -> None:
    lib = build_shared_library(tmp_path / "big.so", BIG_TAIL).read_bytes()
    path = write_wheel(tmp_path / WHEEL, {"demo/big.so": lib})
    early, full = inspect_wheel(path, limits=EARLY, verify_record=False), inspect_wheel(path, limits=FULL)
    assert early.elves == full.elves
    assert "GLIBC_2.25" in early.elves[0].version_needs["libc.so.6"]
    read, size, passes = _stat(early, "demo/big.so")
    assert passes == 1 and read < size * 0.7  # .symtab/.strtab were not inflated
    assert _stat(full, "demo/big.so")[0] == size


def test_default_limits_read_small_members_whole(tmp_path: Path) -> None:
    lib = build_shared_library(tmp_path / "big.so", BIG_TAIL).read_bytes()
    assert len(lib) < Limits().whole_member_bytes
    report = inspect_wheel(write_wheel(tmp_path / WHEEL, {"demo/big.so": lib}))
    read, size, _ = _stat(report, "demo/big.so")
    assert read == size


def test_corruption_past_the_stop_is_caught_only_when_verifying(tmp_path: Path) -> None:
    """The price of the early stop, stated: bytes never read are not CRC-checked."""
    lib = bytearray(build_shared_library(tmp_path / "big.so", BIG_TAIL).read_bytes())
    lib[-2000:-1990] = b"\xaa" * 10  # inside the section table / .shstrtab / .strtab at the end
    path = write_wheel(tmp_path / WHEEL, {"demo/big.so": bytes(lib)}, compression=zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    at = data.find(bytes(lib[:4096]))
    data[at + len(lib) - 1500] ^= 0xFF  # corrupt the stored bytes after the CRC was computed
    path.write_bytes(bytes(data))
    assert inspect_wheel(path, limits=EARLY, verify_record=False).elves  # the gate's data was intact
    with pytest.raises(WheelReadError, match="CRC"):
        inspect_wheel(path, limits=FULL)
    with pytest.raises(WheelReadError, match="CRC"):  # RECORD verification reads on past the stop
        inspect_wheel(path, limits=EARLY)


def test_record_verification_reads_on_past_the_stop_without_changing_the_parse(tmp_path: Path) -> None:
    lib = build_shared_library(tmp_path / "big.so", BIG_TAIL).read_bytes()
    path = write_wheel(tmp_path / WHEEL, {"demo/big.so": lib})
    fast, hashed = inspect_wheel(path, limits=EARLY, verify_record=False), inspect_wheel(path, limits=EARLY)
    assert fast.elves == hashed.elves
    assert _stat(fast, "demo/big.so")[0] < len(lib) * 0.7
    assert _stat(hashed, "demo/big.so")[:3] == (len(lib), len(lib), 1)  # one pass, read on to the end
    digest = {f.name: f.hash for f in hashed.files}
    record = {r.path: r.hash for r in hashed.record}
    assert digest["demo/big.so"] == record["demo/big.so"] and digest["demo/big.so"].startswith("sha256=")
    assert {f.name: f.hash for f in fast.files}["demo/big.so"] is None
    assert hashed.record_verified and not fast.record_verified


@pytest.mark.parametrize("so", sorted(HIP_DATA.glob("*.so")), ids=lambda p: p.name)
def test_hip_objects_are_read_to_the_end(tmp_path: Path, so: Path) -> None:
    data = so.read_bytes()
    path = write_wheel(tmp_path / WHEEL, {"demo/k.so": data})
    early, full = inspect_wheel(path, limits=EARLY, verify_record=False), inspect_wheel(path, limits=FULL)
    assert early.elves == full.elves and early.elves[0].gfx_targets
    assert _stat(early, "demo/k.so")[:3] == (len(data), len(data), 1)


@pytest.mark.parametrize("so", sorted(HIP_DATA.glob("*.so")), ids=lambda p: p.name)
def test_hip_object_whose_markers_were_not_seen_gets_another_pass(tmp_path: Path, so: Path) -> None:
    """A head window too small to show the HIP markers (``libamdhip64`` in .dynstr): the first pass
    does not look for bundles, stops at the dynamic data, learns it is a HIP object, and a second
    pass reads it whole looking for them."""
    path = write_wheel(tmp_path / WHEEL, {"demo/k.so": so.read_bytes()})
    tight = inspect_wheel(
        path, limits=Limits(whole_member_bytes=0, head_bytes=1024, chunk_size=1024), verify_record=False
    )
    assert tight.elves == inspect_wheel(path, limits=FULL).elves
    assert _stat(tight, "demo/k.so")[2] >= 2


def test_bundles_are_looked_for_at_4096_aligned_offsets_only(tmp_path: Path) -> None:
    """clang aligns every translation unit's fat binary to 4096 bytes in .hip_fatbin; a bundle that is
    not aligned is not found, so the targets it carries are missing (a gate asking for them fails)."""
    from tests.helpers.offload_bundle import plain_bundle

    first = plain_bundle([("hipv4-amdgcn-amd-amdhsa--gfx90a", b"\1" * 100)])
    second = plain_bundle([("hipv4-amdgcn-amd-amdhsa--gfx942", b"\2" * 100)])
    aligned = first + b"\0" * (-len(first) % 4096) + second
    unaligned = first + b"\0" * 8 + second
    for fatbin, expected in ((aligned, ("gfx90a", "gfx942")), (unaligned, ("gfx90a",))):
        lib = build_shared_library(tmp_path / "h.so", "int f(void){return 1;}\n", fatbin=fatbin).read_bytes()
        report = inspect_wheel(write_wheel(tmp_path / WHEEL, {"demo/h.so": lib}))
        assert report.elves[0].gfx_targets == expected
