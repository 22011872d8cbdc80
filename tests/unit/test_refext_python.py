"""Host-side tests of the pure-Python parts of the reference extension (csrc/refkernels).

No GPU and no ROCm here: bundle parsing runs on REAL hipcc-built extension objects kept in
tests/data/hip/ (built by Debian trixie's hipcc 5.7.1 / clang 17, see csrc/README.md), and the
ROCm tools (rocminfo, rocm_agent_enumerator) are replaced by small scripts on a private PATH,
because the real ones cannot report a GPU on this machine.
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from setuptools.errors import SetupError

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "csrc"
DATA = ROOT / "tests" / "data" / "hip"
SO_3 = DATA / "refkernels-gfx908-gfx90a-gfx942.so"
SO_XNACK = DATA / "refkernels-gfx90a-xnack-gfx1100.so"

sys.path.insert(0, str(CSRC))
import hipbuild  # noqa: E402
import refkernels  # noqa: E402
from refkernels import dispatch, fatbin, runtime  # noqa: E402
from refkernels.errors import BundleFormatError, ExtensionUnavailable, TunedTableError  # noqa: E402

# --- build targets read from real binaries -------------------------------------------------


def test_build_targets_of_real_hipcc_objects() -> None:
    assert refkernels.get_build_targets(SO_3) == ("gfx908", "gfx90a", "gfx942")
    assert refkernels.get_build_targets(SO_XNACK) == ("gfx1100", "gfx90a:xnack-")


def test_entries_of_real_object_one_bundle_per_kernel_source() -> None:
    entries = refkernels.read_offload_entries(SO_3)
    # gemm.hip and rowsum.hip each contribute a bundle: one host entry and three device entries
    assert [e.target for e in entries] == [None, "gfx908", "gfx90a", "gfx942"] * 2
    assert all(e.size > 0 for e in entries if e.target) and not any(e.compressed for e in entries)
    assert entries[1].triple == "hipv4-amdgcn-amd-amdhsa--gfx908"


def test_binary_without_fatbin_has_no_targets() -> None:
    assert refkernels.get_build_targets(sys.executable) == ()


def test_not_elf_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "x.so"
    bogus.write_bytes(b"MZ" + b"\0" * 100)
    with pytest.raises(BundleFormatError, match="not an ELF"):
        refkernels.get_build_targets(bogus)


@pytest.mark.parametrize(
    ("triple", "target"),
    [
        ("hipv4-amdgcn-amd-amdhsa--gfx90a", "gfx90a"),
        ("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", "gfx90a:sramecc+:xnack-"),
        ("hip-amdgcn-amd-amdhsa-gfx906", "gfx906"),
        ("hipv4-amdgcn-amd-amdhsa--gfx10-3-generic", "gfx10-3-generic"),
        ("hipv4-amdgcn-amd-amdhsa--gfx1100", "gfx1100"),
        ("host-x86_64-unknown-linux--", None),
        ("openmp-nvptx64-nvidia-cuda-sm_80", None),
    ],
)
def test_target_id_from_triple(triple: str, target: str | None) -> None:
    assert fatbin.target_id(triple) == target


def _real_bundle() -> bytes:
    section = fatbin.read_section(SO_3)
    assert section is not None
    start = section.index(fatbin.BUNDLE_MAGIC)
    _, end = fatbin._parse_bundle(section, start, compressed=False)
    return bytes(section[start:end])


def _ccob(bundle: bytes, version: int, method: int, payload: bytes) -> bytes:
    digest = int.from_bytes(hashlib.md5(bundle).digest()[:8], "little")
    if version == 1:
        header = struct.pack("<4sHHIQ", b"CCOB", 1, method, len(bundle), digest)
    elif version == 2:
        header = struct.pack("<4sHHIIQ", b"CCOB", 2, method, 24 + len(payload), len(bundle), digest)
    else:
        header = struct.pack("<4sHHQQQ", b"CCOB", 3, method, 32 + len(payload), len(bundle), digest)
    return header + payload


@pytest.mark.parametrize("version", [1, 2, 3])
def test_compressed_zlib_bundles(version: int) -> None:
    bundle = _real_bundle()
    packed = _ccob(bundle, version, 0, zlib.compress(bundle))
    padding = b"\0" * (4096 - len(packed) % 4096)
    section = packed + padding if version != 1 else packed
    if version != 1:  # v2/v3 know their size: a plain bundle may follow the padding
        section += bundle
    entries = fatbin.entries_in_fatbin(section)
    targets = [e.target for e in entries]
    assert targets[:4] == [None, "gfx908", "gfx90a", "gfx942"]
    assert all(e.compressed for e in entries[:4])
    if version != 1:
        assert targets[4:] == [None, "gfx908", "gfx90a", "gfx942"] and not entries[4].compressed


def test_compressed_zstd_bundle() -> None:
    zstandard = pytest.importorskip("zstandard")  # a rocm-buildkit dependency, so present in CI
    bundle = _real_bundle()
    packed = _ccob(bundle, 3, 1, zstandard.ZstdCompressor().compress(bundle))
    assert {e.target for e in fatbin.entries_in_fatbin(packed)} == {None, "gfx908", "gfx90a", "gfx942"}


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda b: b[:40], "truncated|past"),
        (lambda b: b[:24] + struct.pack("<Q", 10**9) + b[32:], "claims"),
        (lambda b: b[:48] + struct.pack("<Q", 10**6) + b[56:], "triple length"),
        (lambda b: b[:32] + struct.pack("<Q", 10**9) + b[40:], "past"),
    ],
)
def test_hostile_plain_bundles(mangle: object, message: str) -> None:
    bundle = _real_bundle()
    with pytest.raises(BundleFormatError, match=message):
        fatbin.entries_in_fatbin(mangle(bundle))  # type: ignore[operator]


def test_hostile_compressed_bundles() -> None:
    bundle = _real_bundle()
    good = _ccob(bundle, 2, 0, zlib.compress(bundle))
    with pytest.raises(BundleFormatError, match="version"):
        fatbin.entries_in_fatbin(good[:4] + struct.pack("<H", 9) + good[6:])
    with pytest.raises(BundleFormatError, match="compression method"):
        fatbin.entries_in_fatbin(good[:6] + struct.pack("<H", 7) + good[8:])
    with pytest.raises(BundleFormatError, match="zlib"):
        fatbin.entries_in_fatbin(good[:24] + b"garbage" + good[31:])
    lying = good[:12] + struct.pack("<I", len(bundle) + 5) + good[16:]
    with pytest.raises(BundleFormatError, match="header says"):
        fatbin.entries_in_fatbin(lying)
    bomb = _ccob(b"\0" * 10, 3, 0, zlib.compress(b"\0" * 10))
    bomb = bomb[:16] + struct.pack("<Q", 1 << 40) + bomb[24:]
    with pytest.raises(BundleFormatError, match="uncompressed"):
        fatbin.entries_in_fatbin(bomb)


def test_extension_missing_is_a_clean_import_error() -> None:
    # csrc/ is a source checkout: refkernels._C was never built there
    with pytest.raises(ExtensionUnavailable, match="not installed"):
        refkernels.get_build_targets()
    with pytest.raises(ExtensionUnavailable, match="cannot be loaded"):
        refkernels.rowsum([1.0, 2.0], 1, 2)


# --- tuned dispatch ------------------------------------------------------------------------


def table(text: str) -> dispatch.TunedTable:
    return dispatch.parse_table(text.splitlines(keepends=True), "t.csv")


def test_shipped_table_has_gfx_and_is_loaded_at_import() -> None:
    shipped = CSRC / "refkernels" / "tuned" / "gemm.csv"
    assert shipped.read_text().splitlines()[0].split(",")[0] == "gfx"
    loaded = refkernels.default_table()
    assert len(loaded.rows) == len(shipped.read_text().splitlines()) - 1
    assert {"gfx908", "gfx90a", "gfx942", "gfx950"} <= set(loaded.gfx_archs)


def test_same_key_on_gfx942_and_gfx950_does_not_collide() -> None:
    # the shipped table has (cu_num=256, 1024, 1024, 1024) tuned differently on both archs
    on_942 = refkernels.select_kernel("gfx942", 256, 1024, 1024, 1024)
    on_950 = refkernels.select_kernel("gfx950", 256, 1024, 1024, 1024)
    assert (on_942.source, on_942.kernel) == ("exact", "gemm_tile32")
    assert (on_950.source, on_950.kernel) == ("exact", "gemm_tile16")


def test_fallbacks_stay_within_the_gfx() -> None:
    t = table(
        "gfx,cu_num,M,N,K,kernel\n"
        "gfx942,304,128,128,128,gemm_tile16\n"
        "gfx942,304,4096,4096,4096,gemm_tile32\n"
        "gfx942,80,2048,2048,2048,gemm_tile16\n"
        "gfx950,256,3000,3000,3000,gemm_tile16\n"
    )
    exact = t.select("gfx942:sramecc+:xnack-", 304, 4096, 4096, 4096)
    assert (exact.source, exact.kernel, exact.row.line if exact.row else 0) == ("exact", "gemm_tile32", 3)
    near = t.select("gfx942", 304, 3000, 3000, 3000)  # same cu_num rows preferred over the 2048 row
    assert (near.source, near.kernel) == ("nearest", "gemm_tile32")
    other_cu = t.select("gfx942", 228, 2000, 2000, 2000)  # no 228-CU row: any gfx942 row
    assert (other_cu.source, other_cu.kernel) == ("nearest", "gemm_tile16")
    assert other_cu.row is not None and other_cu.row.cu_num == 80
    unknown = t.select("gfx90a", 110, 3000, 3000, 3000)  # never the gfx950 row
    assert (unknown.source, unknown.kernel, unknown.row) == ("default", "gemm_tile16", None)


def test_nearest_ties_go_to_the_earlier_row() -> None:
    t = table(
        "gfx,cu_num,M,N,K,kernel\ngfx90a,110,64,64,64,gemm_tile32\ngfx90a,110,256,256,256,gemm_tile16\n"
    )
    assert t.select("gfx90a", 110, 128, 128, 128).kernel == "gemm_tile32"


def test_table_without_gfx_column_is_refused() -> None:
    with pytest.raises(TunedTableError, match=r"missing column\(s\) gfx.*collides across archs"):
        table("cu_num,M,N,K,kernel\n304,128,128,128,gemm_tile16\n")


def test_duplicate_keys_are_refused_with_lines() -> None:
    with pytest.raises(TunedTableError, match=r"t.csv:3: duplicate key .*'gfx942', 304, 1, 2, 3.*line 2"):
        table("gfx,cu_num,M,N,K,kernel\ngfx942,304,1,2,3,gemm_tile16\nGFX942:xnack-,304,1,2,3,gemm_tile32\n")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("gfx942,304,1,2,3,gemm_tile64", "unknown kernel 'gemm_tile64'"),
        ("gfx942,304,0,2,3,gemm_tile16", "M must be positive"),
        ("gfx942,x,1,2,3,gemm_tile16", "cu_num must be an integer"),
        ("mi300,304,1,2,3,gemm_tile16", "gfx must name an arch"),
        ("gfx942,304,1,2,3,gemm_tile16,extra", "more fields"),
    ],
)
def test_bad_rows_are_refused(row: str, message: str) -> None:
    with pytest.raises(TunedTableError, match=message):
        table("gfx,cu_num,M,N,K,kernel\n" + row + "\n")


def test_load_table_from_file(tmp_path: Path) -> None:
    path = tmp_path / "tuned.csv"
    path.write_text("gfx,cu_num,M,N,K,kernel,note\ngfx908,120,8,8,8,gemm_tile32,hand-picked\n")
    loaded = refkernels.load_table(path)
    assert loaded.rows[0].extra == {"note": "hand-picked"}
    assert refkernels.select_kernel("gfx908", 120, 8, 8, 8, table=loaded).kernel == "gemm_tile32"


ARCHS = st.sampled_from(["gfx908", "gfx90a", "gfx942", "gfx950", "gfx1100"])
SIZES = st.sampled_from([16, 64, 128, 1024, 4096])


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(ARCHS, st.sampled_from([80, 104, 304]), SIZES, SIZES, SIZES), max_size=12),
    query=st.tuples(ARCHS, st.sampled_from([80, 104, 256, 304]), SIZES, SIZES, SIZES),
)
def test_selection_never_uses_another_gfx(
    rows: list[tuple[str, int, int, int, int]], query: tuple[str, int, int, int, int]
) -> None:
    unique = list(dict.fromkeys(rows))
    text = "gfx,cu_num,M,N,K,kernel\n" + "".join(
        f"{g},{c},{m},{n},{k},gemm_tile32\n" for g, c, m, n, k in unique
    )
    selection = table(text).select(*query)
    if selection.row is None:
        assert selection.source == "default" and not any(r[0] == query[0] for r in unique)
    else:
        assert selection.row.gfx == query[0]
        assert (selection.source == "exact") == (selection.row.key == query)


# --- runtime gfx detection -----------------------------------------------------------------

ROCMINFO = """\
ROCk module is loaded
=====================
HSA System Attributes
=====================
Runtime Version:         1.1
*******
Agent 1
*******
  Name:                    AMD EPYC 9654 96-Core Processor
  Marketing Name:          AMD EPYC 9654 96-Core Processor
  Device Type:             CPU
  Compute Unit:            192
*******
Agent 2
*******
  Name:                    gfx942
  Marketing Name:          AMD Instinct MI300X
  Device Type:             GPU
  Compute Unit:            304
  ISA Info:
    ISA 1
      Name:                    amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-
*******
Agent 3
*******
  Name:                    gfx90a
  Marketing Name:          AMD Instinct MI210
  Device Type:             GPU
  Compute Unit:            104
*** Done ***
"""


def fake_tools(directory: Path, **scripts: str) -> str:
    """Scripts standing in for the ROCm tools (the real ones find no GPU on this machine)."""
    directory.mkdir(exist_ok=True)
    for name, body in scripts.items():
        path = directory / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(directory)


def test_rocminfo_agents(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text(ROCMINFO)
    path = fake_tools(tmp_path / "bin", rocminfo=f"cat {tmp_path / 'out.txt'}\n")
    found = refkernels.get_gfx_runtime(path=path)
    assert found.available and found.source == "rocminfo"
    assert found.agents == (runtime.GfxAgent("gfx942", 304), runtime.GfxAgent("gfx90a", 104))
    assert found.gfx_archs == ("gfx942", "gfx90a")


def test_enumerator_when_rocminfo_fails(tmp_path: Path) -> None:
    path = fake_tools(
        tmp_path / "bin",
        rocminfo="echo 'ROCk module is NOT loaded, possibly no GPU devices' >&2; exit 1\n",
        rocm_agent_enumerator="printf 'gfx000\\ngfx90a\\ngfx90a\\n'\n",
    )
    found = refkernels.get_gfx_runtime(path=path)
    assert found.source == "rocm_agent_enumerator"
    assert found.agents == (runtime.GfxAgent("gfx90a", None),) * 2 and found.gfx_archs == ("gfx90a",)


def test_no_gpu_result_not_exception(tmp_path: Path) -> None:
    nothing = refkernels.get_gfx_runtime(path=str(tmp_path))
    assert not nothing and nothing.agents == () and nothing.source is None
    assert "no AMD GPU" in nothing.reason and "nor rocm_agent_enumerator is on PATH" in nothing.reason
    path = fake_tools(
        tmp_path / "bin",
        rocminfo="printf '\\033[31mROCk module is NOT loaded\\033[0m\\n' >&2; exit 1\n",  # rocminfo's colours
        rocm_agent_enumerator="echo gfx000\n",
    )
    cpu_only = refkernels.get_gfx_runtime(path=path)
    assert not cpu_only.available
    assert "rocminfo exited with status 1: ROCk module is NOT loaded" in cpu_only.reason
    assert "rocm_agent_enumerator reported no GPU agent" in cpu_only.reason


# --- build helper (csrc/hipbuild.py) ------------------------------------------------------


def test_requested_archs() -> None:
    assert hipbuild.requested_archs({"PYTORCH_ROCM_ARCH": "gfx908; gfx90a;;gfx90a"}) == ["gfx908", "gfx90a"]
    assert hipbuild.requested_archs({"GPU_ARCHS": "gfx942;gfx90a:xnack-"}) == ["gfx942", "gfx90a:xnack-"]
    same = {"PYTORCH_ROCM_ARCH": "gfx942;gfx90a", "GPU_ARCHS": "gfx90a;gfx942"}
    assert hipbuild.requested_archs(same) == ["gfx942", "gfx90a"]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "set PYTORCH_ROCM_ARCH or GPU_ARCHS"),
        ({"PYTORCH_ROCM_ARCH": " "}, "does not guess"),
        ({"GPU_ARCHS": "gfx90a,gfx942"}, "not gfx target IDs"),
        ({"PYTORCH_ROCM_ARCH": "gfx90a", "GPU_ARCHS": "gfx942"}, "disagree"),
    ],
)
def test_requested_archs_errors(env: dict[str, str], message: str) -> None:
    with pytest.raises(SetupError, match=message):
        hipbuild.requested_archs(env)


def test_compiler_choice_and_ccache(tmp_path: Path) -> None:
    assert hipbuild.hip_compiler({"HIPCC": "/x/clang++ --rocm-path=/r"}) == ["/x/clang++", "--rocm-path=/r"]
    with pytest.raises(SetupError, match="hipcc not found"):
        hipbuild.hip_compiler({"PATH": str(tmp_path)})
    tools = fake_tools(tmp_path / "bin", hipcc="exit 0\n", ccache="exit 0\n")
    assert hipbuild.hip_compiler({"PATH": tools}) == [os.path.join(tools, "hipcc")]
    assert hipbuild.ccache_launcher({"PATH": tools}) is None  # CCACHE_DIR unset: no cache
    assert hipbuild.ccache_launcher({"PATH": tools, "CCACHE_DIR": "/c"}) == os.path.join(tools, "ccache")


def test_compilation_unit_id_is_stable_and_distinct() -> None:
    assert hipbuild.compilation_unit_id("src/gemm.hip") == hipbuild.compilation_unit_id("src/gemm.hip")
    assert hipbuild.compilation_unit_id("src/gemm.hip") != hipbuild.compilation_unit_id("src/rowsum.hip")
