"""ElfInfo.endian, .undefined_of_interest and .x86_isa_needed read while streaming, checked against
pyelftools' sections (what auditwheel reads) on real libraries: gcc/GNU ld (DT_GNU_HASH, DT_HASH,
both), clang-19 + lld-19 (DT_GNU_HASH after .dynsym and .dynstr) for x86_64, i686, aarch64, ppc64le
and big-endian ppc64, patchelf'd files, and tight limits that force a second and third pass."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection, SymbolTableSection

from buildkit.inspect import ElfInfo, Limits, inspect_wheel
from buildkit.inspect.symbols import PYFPE_SYMBOLS, default_symbols_of_interest
from buildkit.records import to_data
from tests.helpers.wheel_zip import write_wheel

WHEEL = "demo-1.0-cp311-cp311-linux_x86_64.whl"
CLANG, LLD = "clang-19", "ld.lld-19"
EARLY = Limits(whole_member_bytes=0, chunk_size=4096)
# the head holds the ELF header only: .dynsym, .dynstr and the hash table are found behind the
# stream, and read in further passes (the scan of .dynsym may need a pass of its own)
TINY = Limits(whole_member_bytes=0, head_bytes=64, tail_bytes=0, dynamic_reach=0, chunk_size=256)
FULL = Limits(verify_members=True, chunk_size=4096)
SOURCE = """
extern int uncompress2(unsigned char *, unsigned long *, const unsigned char *, unsigned long *);
extern double PyFPE_jbuf[];
extern int weak_thing(void) __attribute__((weak));
extern int ext_a(void);
extern int ext_b(void);
int defined_here(void) { return 1; }
int f(unsigned char *d, unsigned long *n) {
    return uncompress2(d, n, d, n) + (int)PyFPE_jbuf[0] + (weak_thing ? weak_thing() : 0) + ext_a() + ext_b();
}
"""
INTEREST = frozenset({"uncompress2", "PyFPE_jbuf", "weak_thing", "ext_a", "defined_here", "absent"})


def _tool(name: str) -> str:
    """A build tool of ./dev's package list: missing is a broken CI machine, a skip elsewhere."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is needed (./dev installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def gcc_lib(out: Path, source: str, *flags: str) -> bytes:
    src = out.with_suffix(".c")
    src.write_text(source)
    subprocess.run([_tool("gcc"), "-O1", "-shared", "-fPIC", *flags, str(src), "-o", str(out)], check=True)
    return out.read_bytes()


def clang_lib(out: Path, source: str, target: str, *flags: str) -> bytes:
    _tool(LLD)
    src = out.with_suffix(".c")
    src.write_text(source)
    cmd = [_tool(CLANG), f"--target={target}", "-O1", "-fPIC", "-shared", "-nostdlib", "-fuse-ld=lld"]
    subprocess.run([*cmd, *flags, str(src), "-o", str(out)], check=True)
    return out.read_bytes()


def sections_undefined(data: bytes) -> set[str]:
    """auditwheel's ``get_undefined_symbols``: .dynsym entries with SHN_UNDEF, not STB_WEAK."""
    dynsym = ELFFile(io.BytesIO(data)).get_section_by_name(".dynsym")
    assert isinstance(dynsym, SymbolTableSection)
    return {
        s.name
        for s in dynsym.iter_symbols()
        if s["st_shndx"] == "SHN_UNDEF" and s["st_info"]["bind"] != "STB_WEAK" and s.name
    }


def sections_isa(data: bytes) -> int | None:
    """GNU_PROPERTY_X86_ISA_1_NEEDED of the first GNU property note, through pyelftools' notes."""
    for section in ELFFile(io.BytesIO(data)).iter_sections():
        if not isinstance(section, NoteSection):
            continue
        for note in section.iter_notes():
            if note["n_type"] == "NT_GNU_PROPERTY_TYPE_0" and note["n_name"] == "GNU":
                for prop in note["n_desc"]:
                    if prop.pr_type == "GNU_PROPERTY_X86_ISA_1_NEEDED" and prop.pr_datasz == 4:
                        return int(prop.pr_data)
                return None
    return None


def inspect_one(
    tmp_path: Path, data: bytes, limits: Limits, symbols: frozenset[str] | None = None
) -> ElfInfo:
    path = write_wheel(tmp_path / WHEEL, {"demo/lib.so": data})
    (info,) = inspect_wheel(path, limits=limits, symbols=symbols, verify_record=False).elves
    return info


LAYOUTS = {
    "gcc-gnu-hash": lambda out: gcc_lib(out, SOURCE),
    "gcc-sysv-hash": lambda out: gcc_lib(out, SOURCE, "-Wl,--hash-style=sysv"),
    "gcc-both-hashes": lambda out: gcc_lib(out, SOURCE, "-Wl,--hash-style=both"),
    "lld-x86_64": lambda out: clang_lib(out, SOURCE, "x86_64-linux-gnu"),
    "lld-x86_64-sysv": lambda out: clang_lib(out, SOURCE, "x86_64-linux-gnu", "-Wl,--hash-style=sysv"),
    "lld-i686": lambda out: clang_lib(out, SOURCE, "i686-linux-gnu"),
    "lld-aarch64": lambda out: clang_lib(out, SOURCE, "aarch64-linux-gnu"),
    "lld-ppc64le": lambda out: clang_lib(out, SOURCE, "powerpc64le-linux-gnu"),
    "lld-ppc64-big-endian": lambda out: clang_lib(out, SOURCE, "powerpc64-linux-gnu"),
}
ENDIAN = {"lld-ppc64-big-endian": "big"}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("limits", [EARLY, TINY, FULL], ids=["early", "tiny-head", "verify"])
def test_undefined_names_equal_the_section_view(tmp_path: Path, layout: str, limits: Limits) -> None:
    data = LAYOUTS[layout](tmp_path / "lib.so")
    undefined = sections_undefined(data)
    # the premise: the weak and the defined names are there but are not undefined non-weak ones
    assert {"uncompress2", "PyFPE_jbuf", "ext_a", "ext_b"} <= undefined
    assert "weak_thing" not in undefined and "defined_here" not in undefined
    info = inspect_one(tmp_path, data, limits, INTEREST)
    assert info.undefined_of_interest == tuple(sorted(undefined & INTEREST))
    assert info.endian == ENDIAN.get(layout, "little")
    everything = inspect_one(tmp_path, data, limits, frozenset(undefined | {"defined_here", "weak_thing"}))
    assert everything.undefined_of_interest == tuple(sorted(undefined))


def test_tight_limits_take_more_passes_but_not_the_whole_table(tmp_path: Path) -> None:
    data = clang_lib(tmp_path / "lib.so", SOURCE, "x86_64-linux-gnu")
    path = write_wheel(tmp_path / WHEEL, {"demo/lib.so": data})
    report = inspect_wheel(path, limits=TINY, symbols=INTEREST, verify_record=False)
    (stat,) = [s for s in report.stats if s.name == "demo/lib.so"]
    assert stat.passes > 1  # the premise: .dynsym went past before its size was known
    assert report.elves[0].undefined_of_interest == ("PyFPE_jbuf", "ext_a", "uncompress2")


def test_default_interest_is_the_blacklists_and_pyfpe(tmp_path: Path) -> None:
    interest = default_symbols_of_interest()
    assert "uncompress2" in interest and interest >= PYFPE_SYMBOLS and "ext_a" not in interest
    info = inspect_one(tmp_path, gcc_lib(tmp_path / "lib.so", SOURCE), EARLY)
    assert info.undefined_of_interest == ("PyFPE_jbuf", "uncompress2")
    assert to_data(info)["undefined_of_interest"] == ["PyFPE_jbuf", "uncompress2"]
    assert to_data(info)["endian"] == "little"


ISA_FLAGS = {
    "v3-mneeded": (("-march=x86-64-v3", "-mneeded", "-Wl,-z,x86-64-v3"), 0b111),
    "v2-mneeded": (("-march=x86-64-v2", "-mneeded"), 0b011),
    "v2-linker": (("-Wl,-z,x86-64-v2",), 0b010),  # ld sets the one level bit, no baseline bit
    "v4-linker": (("-Wl,-z,x86-64-v4",), 0b1000),
    "march-only": (("-march=x86-64-v3",), None),  # ISA_1_USED only: nothing is *needed*
    "plain": ((), None),
}


@pytest.mark.parametrize("case", sorted(ISA_FLAGS))
def test_x86_isa_needed_equals_the_note_section(tmp_path: Path, case: str) -> None:
    flags, expected = ISA_FLAGS[case]
    data = gcc_lib(tmp_path / "lib.so", "int f(int x) { return x * 3; }\n", *flags)
    assert sections_isa(data) == expected  # the toolchain did what the case says
    for limits in (EARLY, TINY, FULL):
        assert inspect_one(tmp_path, data, limits).x86_isa_needed == expected


def test_isa_is_read_from_pt_note_without_pt_gnu_property(tmp_path: Path) -> None:
    """Older linkers put .note.gnu.property in a PT_NOTE only: retyping PT_GNU_PROPERTY to PT_NULL
    leaves that route."""
    data = bytearray(gcc_lib(tmp_path / "lib.so", "int f(void){return 1;}\n", "-Wl,-z,x86-64-v3"))
    assert sections_isa(bytes(data)) == 0b100
    elf = ELFFile(io.BytesIO(bytes(data)))
    phoff, phentsize = elf["e_phoff"], elf["e_phentsize"]
    for i, seg in enumerate(elf.iter_segments()):
        if seg["p_type"] == "PT_GNU_PROPERTY":
            data[phoff + i * phentsize : phoff + i * phentsize + 4] = b"\0\0\0\0"
    assert not any(s["p_type"] == "PT_GNU_PROPERTY" for s in ELFFile(io.BytesIO(bytes(data))).iter_segments())
    assert inspect_one(tmp_path, bytes(data), EARLY).x86_isa_needed == 0b100


def test_other_machines_report_no_isa(tmp_path: Path) -> None:
    data = clang_lib(tmp_path / "lib.so", SOURCE, "aarch64-linux-gnu")
    assert inspect_one(tmp_path, data, EARLY).x86_isa_needed is None


@pytest.mark.skipif(shutil.which("patchelf") is None, reason="patchelf absent")
def test_patchelf_rewritten_library(tmp_path: Path) -> None:
    lib = tmp_path / "lib.so"
    gcc_lib(lib, SOURCE, "-march=x86-64-v2", "-mneeded")
    subprocess.run(["patchelf", "--set-rpath", "$ORIGIN/" + "/".join(["deep"] * 300), str(lib)], check=True)
    subprocess.run(["patchelf", "--add-needed", "libextra.so.1", str(lib)], check=True)
    data = lib.read_bytes()
    for limits in (EARLY, TINY, FULL):
        info = inspect_one(tmp_path, data, limits, INTEREST)
        assert info.undefined_of_interest == tuple(sorted(sections_undefined(data) & INTEREST))
        assert info.x86_isa_needed == sections_isa(data) == 0b011
