"""buildkit.inspect.loader: the dynamic loader's view (PT_DYNAMIC, DT_STRTAB, DT_VERNEED through the
PT_LOAD segments) must equal what auditwheel reads through pyelftools' sections, on libraries built
here with gcc, patched with patchelf, and built by hipcc (tests/data/hip)."""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection

from buildkit.errors import WheelReadError
from buildkit.inspect import ElfInfo, Limits, inspect_wheel
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_zip import write_wheel

pytestmark = pytest.mark.skipif(not have_gcc(), reason="gcc is needed to build test libraries")
WHEEL = "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
HIP_DATA = Path(__file__).resolve().parent.parent / "data" / "hip"
# Every member goes through the early-stopping loader route, however small.
EARLY = Limits(whole_member_bytes=0, chunk_size=4096)

C_NEW_GLIBC = """
#include <sys/random.h>
#include <math.h>
int f(void *buf) { return (int)getrandom(buf, 4, 0); }
double g(double x) { return exp(x) + log(x); }
"""
CXX = """
#include <string>
#include <stdexcept>
std::string g(const char *s) { if (!s) throw std::runtime_error("x"); return std::string(s) + "!"; }
"""


def section_view(data: bytes) -> dict[str, Any]:
    """What auditwheel reads: pyelftools' .dynamic and .gnu.version_r sections."""
    elf = ELFFile(io.BytesIO(data))
    out: dict[str, Any] = {"needed": [], "soname": None, "rpath": [], "runpath": [], "version_needs": {}}
    for section in elf.iter_sections():
        if isinstance(section, DynamicSection) and section.name == ".dynamic":
            for tag in section.iter_tags():
                kind = tag.entry.d_tag
                if kind == "DT_NEEDED":
                    out["needed"].append(tag.needed)
                elif kind == "DT_SONAME":
                    out["soname"] = tag.soname
                elif kind == "DT_RPATH":
                    out["rpath"] += [p for p in tag.rpath.split(":") if p]
                elif kind == "DT_RUNPATH":
                    out["runpath"] += [p for p in tag.runpath.split(":") if p]
        elif isinstance(section, GNUVerNeedSection):
            for verneed, aux in section.iter_versions():
                out["version_needs"].setdefault(verneed.name, set()).update(a.name for a in aux)
    out["version_needs"] = {k: tuple(sorted(v)) for k, v in sorted(out["version_needs"].items())}
    return out


def loader_view(info: ElfInfo) -> dict[str, Any]:
    return {
        "needed": list(info.needed),
        "soname": info.soname,
        "rpath": list(info.rpath),
        "runpath": list(info.runpath),
        "version_needs": info.version_needs,
    }


def _inspect(tmp_path: Path, data: bytes, limits: Limits = EARLY) -> ElfInfo:
    report = inspect_wheel(write_wheel(tmp_path / WHEEL, {"demo/lib.so": data}), limits=limits)
    (info,) = report.elves
    return info


def _libraries(tmp_path: Path) -> dict[str, bytes]:
    libs = {
        "c-soname-rpath": build_shared_library(
            tmp_path / "a.so", C_NEW_GLIBC, soname="liba.so.1", rpath="rpath:$ORIGIN/x:/opt/y", libs=("m",)
        ),
        "cxx-runpath": build_shared_library(tmp_path / "b.so", CXX, cplusplus=True, rpath="$ORIGIN/../lib"),
        "plain": build_shared_library(
            tmp_path / "c.so", "#include <stdlib.h>\nvoid *f(void){return malloc(4);}\n"
        ),
    }
    out = {name: path.read_bytes() for name, path in libs.items()}
    out.update({p.name: p.read_bytes() for p in sorted(HIP_DATA.glob("*.so"))})
    return out


def test_loader_view_equals_the_section_view(tmp_path: Path) -> None:
    for name, data in _libraries(tmp_path).items():
        info = _inspect(tmp_path, data)
        assert loader_view(info) == section_view(data), name
        assert info.needed, name


@pytest.mark.skipif(shutil.which("patchelf") is None, reason="patchelf absent")
def test_patchelf_moves_dynstr_past_the_dynamic_section(tmp_path: Path) -> None:
    """patchelf (what auditwheel repair runs) rewrites .dynstr into a new segment at the end of the
    file: the loader must then keep DT_STRTAB when it streams by, after PT_DYNAMIC."""
    lib = build_shared_library(tmp_path / "p.so", CXX, cplusplus=True)
    long_rpath = "$ORIGIN/" + "/".join(["deep"] * 400)
    subprocess.run(["patchelf", "--set-rpath", long_rpath, str(lib)], check=True)
    data = lib.read_bytes()
    elf = ELFFile(io.BytesIO(data))
    first_load = next(s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD")
    dynstr = elf.get_section_by_name(".dynstr")
    assert dynstr["sh_offset"] > first_load["p_filesz"]  # moved out of the head: the case under test
    tight = Limits(whole_member_bytes=0, head_bytes=4096, chunk_size=1024)
    report = inspect_wheel(write_wheel(tmp_path / WHEEL, {"demo/lib.so": data}), limits=tight)
    (info,) = report.elves
    assert loader_view(info) == section_view(data)
    assert info.runpath == (long_rpath,) or info.rpath == (long_rpath,)
    assert (
        next(s for s in report.stats if s.name == "demo/lib.so").passes == 1
    )  # kept as it streamed by, no second read


def _dynamic_entries(data: bytes) -> tuple[int, int]:
    elf = ELFFile(io.BytesIO(data))
    seg = next(s for s in elf.iter_segments() if s["p_type"] == "PT_DYNAMIC")
    return seg["p_offset"], seg["p_filesz"]


def _patch_tag(data: bytes, tag: int, value: int) -> bytes:
    out = bytearray(data)
    start, size = _dynamic_entries(data)
    for at in range(start, start + size, 16):
        d_tag, _ = struct.unpack_from("<qQ", out, at)
        if d_tag == tag:
            struct.pack_into("<qQ", out, at, d_tag, value)
            return bytes(out)
    raise AssertionError(f"no tag {tag}")


def test_unmappable_strtab_falls_back_to_the_sections(tmp_path: Path) -> None:
    data = build_shared_library(tmp_path / "a.so", C_NEW_GLIBC, soname="liba.so.1").read_bytes()
    broken = _patch_tag(data, 5, 0x7FFF_0000_0000)  # DT_STRTAB: an address in no PT_LOAD
    info = _inspect(tmp_path, broken)
    assert loader_view(info) == section_view(broken) == section_view(data)


def test_needed_string_outside_the_string_table_is_an_error(tmp_path: Path) -> None:
    data = build_shared_library(tmp_path / "a.so", C_NEW_GLIBC).read_bytes()
    broken = _patch_tag(data, 1, 1 << 30)  # DT_NEEDED string offset
    with pytest.raises(WheelReadError, match="outside the dynamic string table"):
        _inspect(tmp_path, broken)


def test_huge_strsz_is_refused_not_allocated(tmp_path: Path) -> None:
    data = build_shared_library(tmp_path / "a.so", C_NEW_GLIBC).read_bytes()
    broken = _patch_tag(data, 10, 1 << 40)  # DT_STRSZ
    with pytest.raises(WheelReadError, match=r"DT_STRSZ|DT_STRTAB ends past"):
        _inspect(tmp_path, broken)


def test_verneed_chain_running_off_the_file_is_an_error(tmp_path: Path) -> None:
    data = build_shared_library(tmp_path / "a.so", C_NEW_GLIBC).read_bytes()
    elf = ELFFile(io.BytesIO(data))
    verneed = elf.get_section_by_name(".gnu.version_r")
    out = bytearray(data)
    struct.pack_into("<I", out, verneed["sh_offset"] + 12, 1 << 31)  # first entry's vn_next
    struct.pack_into("<I", out, verneed["sh_offset"] + 8, 1 << 31)  # and its vn_aux
    with pytest.raises(WheelReadError, match="version-needs"):
        _inspect(tmp_path, bytes(out))
