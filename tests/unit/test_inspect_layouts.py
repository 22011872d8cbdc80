"""Every ELF layout the field's tools produce is read, and read the same as pyelftools reads it.

Real tools, no mocks: the shared libraries are linked by GNU ld (bfd), gold, lld and mold, then
rewritten by patchelf (what ``auditwheel repair`` runs: ``--set-rpath``, ``--replace-needed``,
``--add-needed``, ``--set-soname``, applied repeatedly, so the dynamic tables move into segments
appended at the end of the file), ``strip`` and ``objcopy``; and their program headers are reordered
(ld.so does not require sorted headers, and prelink/other tools leave them unsorted). Each variant is
read through the streaming loader route with several chunk sizes and kept-head sizes, so every place
a table can fall relative to a chunk boundary (the last chunk included: numpy 2.x's
``_multiarray_umath`` has ``.gnu.hash``, ``.dynamic`` and ``.dynstr`` in its last MiB) is crossed.
The expected values come from pyelftools reading the whole file by its sections, as auditwheel does.
"""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection
from elftools.elf.sections import SymbolTableSection

from buildkit.errors import WheelReadError
from buildkit.inspect.elf import read_elf_bytes, read_elf_member
from buildkit.inspect.limits import Limits

SOURCE = r"""
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>
/* %(pad)s */
static const unsigned char blob[%(blob)d] = {1, 2, 3};
double f(double x) { printf("%%p", (void*)blob); return cos(x) + strlen("x") + zlibVersion()[0]; }
"""

LINKERS = {
    "bfd": ["-fuse-ld=bfd"],
    "gold": ["-fuse-ld=gold"],
    "lld": ["-fuse-ld=lld"],
    "mold": ["-fuse-ld=mold"],
    # DT_HASH instead of (or beside) DT_GNU_HASH: another way .dynsym is counted
    "bfd-sysv": ["-fuse-ld=bfd", "-Wl,--hash-style=sysv"],
    "lld-both": ["-fuse-ld=lld", "-Wl,--hash-style=both"],
}
INTEREST = frozenset({"cos", "printf", "strlen", "zlibVersion", "uncompress2", "f"})

LIMITS = [
    pytest.param(Limits(), id="defaults"),
    pytest.param(Limits(chunk_size=4096, head_bytes=64 * 1024, whole_member_bytes=0), id="4k-chunks"),
    pytest.param(Limits(chunk_size=977, head_bytes=8192, whole_member_bytes=0), id="odd-chunks"),
    pytest.param(Limits(chunk_size=1 << 16, head_bytes=4096, dynamic_reach=0, tail_bytes=0), id="no-reach"),
    # the head holds .gnu.version_r, nothing keeps .gnu.hash: it is found in the chunk that also
    # holds PT_DYNAMIC, the last one (numpy 2.x's layout: unreadable before 6e3c34c)
    pytest.param(
        Limits(chunk_size=1 << 16, head_bytes=1 << 16, dynamic_reach=0, tail_bytes=0), id="hash-in-last-chunk"
    ),
]


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not on PATH (./dev installs it)")  # a broken set-up, not a skip
    return path


def _lld_dir(tmp: Path) -> Path:
    """gcc finds ``ld.lld`` on PATH; Debian names it ``ld.lld-19``: a private bin folder with the link."""
    bindir = tmp / "bin"
    bindir.mkdir(exist_ok=True)
    link = bindir / "ld.lld"
    if not link.exists():
        link.symlink_to(_tool("ld.lld-19"))
    return bindir


def link(tmp: Path, linker: str, *, blob: int = 1 << 20, name: str = "libx.so") -> Path:
    src = tmp / f"{name}.c"
    src.write_text(SOURCE % {"pad": "", "blob": blob})
    out = tmp / f"{linker}-{name}"
    cmd = [_tool("gcc"), "-shared", "-fPIC", "-O1", *LINKERS[linker], "-o", str(out), str(src)]
    cmd += ["-Wl,-soname,libx.so.1", "-lm", "-lz"]
    env = None
    if linker.startswith("lld"):
        import os

        env = {**os.environ, "PATH": f"{_lld_dir(tmp)}:{os.environ['PATH']}"}
    if linker == "mold":
        _tool("mold")
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return out


def patchelf(path: Path, *args: str) -> Path:
    subprocess.run([_tool("patchelf"), *args, str(path)], check=True, capture_output=True)
    return path


def shuffle_program_headers(path: Path) -> Path:
    """Reverse the order of the program header table (every entry kept, ld.so does not care)."""
    data = bytearray(path.read_bytes())
    (phoff,) = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    entries = [bytes(data[phoff + i * phentsize : phoff + (i + 1) * phentsize]) for i in range(phnum)]
    # PT_PHDR must stay first (ld.so requires it to precede any PT_LOAD); the rest reversed
    first = [e for e in entries if struct.unpack_from("<I", e)[0] == 6]
    rest = [e for e in entries if struct.unpack_from("<I", e)[0] != 6][::-1]
    data[phoff : phoff + phnum * phentsize] = b"".join(first + rest)
    path.write_bytes(bytes(data))
    return path


def expected(path: Path) -> dict[str, object]:
    """What auditwheel reads: pyelftools over the sections."""
    with path.open("rb") as fh:
        elf = ELFFile(fh)
        needed: list[str] = []
        rpath: list[str] = []
        runpath: list[str] = []
        soname = None
        versions: dict[str, tuple[str, ...]] = {}
        undefined: set[str] = set()
        for section in elf.iter_sections():
            if isinstance(section, SymbolTableSection) and section.name == ".dynsym":
                undefined |= {
                    s.name
                    for s in section.iter_symbols()
                    if s["st_shndx"] == "SHN_UNDEF" and s["st_info"]["bind"] != "STB_WEAK"
                } & INTEREST
            if isinstance(section, DynamicSection):
                for tag in section.iter_tags():
                    kind = tag.entry.d_tag
                    if kind == "DT_NEEDED":
                        needed.append(tag.needed)
                    elif kind == "DT_SONAME":
                        soname = tag.soname
                    elif kind == "DT_RPATH":
                        rpath += [p for p in tag.rpath.split(":") if p]
                    elif kind == "DT_RUNPATH":
                        runpath += [p for p in tag.runpath.split(":") if p]
            elif isinstance(section, GNUVerNeedSection):
                for verneed, aux in section.iter_versions():
                    versions[verneed.name] = tuple(sorted(a.name for a in aux))
    return {
        "needed": tuple(needed),
        "soname": soname,
        "rpath": tuple(rpath),
        "runpath": tuple(runpath),
        "version_needs": dict(sorted(versions.items())),
        "undefined": tuple(sorted(undefined)),
    }


def read(path: Path, limits: Limits) -> dict[str, object]:
    data = path.read_bytes()
    result = read_elf_member(path.name, lambda: io.BytesIO(data), len(data), limits, symbols=INTEREST)
    assert result.elf is not None
    elf = result.elf
    # a member read whole into memory (RECORD verified, small) is parsed in one pass that keeps every
    # byte: the same facts as the stream, whatever the limits made the stream keep or re-read
    in_memory = read_elf_bytes(path.name, data, limits, symbols=INTEREST)
    assert in_memory.elf == elf and in_memory.passes == 1 and in_memory.bytes_read == len(data)
    return {
        "needed": elf.needed,
        "soname": elf.soname,
        "rpath": elf.rpath,
        "runpath": elf.runpath,
        "version_needs": dict(elf.version_needs),
        "undefined": elf.undefined_of_interest,
    }


def _repaired(path: Path) -> Path:
    """What auditwheel repair does to an extension: replace a dependency by its grafted name, set an
    $ORIGIN RPATH (patchelf grows .dynstr, so it moves the tables to a new segment at the end)."""
    patchelf(path, "--replace-needed", "libz.so.1", "libz-0123abcd.so.1.2.13")
    return patchelf(path, "--force-rpath", "--set-rpath", "$ORIGIN/../numpy.libs:" + "x" * 300)


VARIANTS: dict[str, Callable[[Path], Path]] = {
    "as-linked": lambda p: p,
    "repaired": _repaired,
    "repaired-twice": lambda p: patchelf(
        _repaired(p), "--set-rpath", "$ORIGIN/" + "y" * 2000 + ":$ORIGIN/../lib"
    ),
    "add-needed": lambda p: patchelf(p, "--add-needed", "libextra-" + "z" * 500 + ".so.3"),
    "soname": lambda p: patchelf(p, "--set-soname", "libgrafted-" + "s" * 700 + ".so.1"),
    "runpath": lambda p: patchelf(p, "--set-rpath", "$ORIGIN/runpath-" + "r" * 900),
    "stripped": lambda p: _run(p, "strip", "--strip-all"),
    "repaired-then-stripped": lambda p: _run(_repaired(p), "strip", "--strip-unneeded"),
    "objcopy-added-section": lambda p: _objcopy_add(p),
    "objcopy-removed-comment": lambda p: _run(p, "objcopy", "--remove-section=.comment"),
    "unsorted-phdrs": shuffle_program_headers,
    "repaired-unsorted-phdrs": lambda p: shuffle_program_headers(_repaired(p)),
}


def _run(path: Path, tool: str, *args: str) -> Path:
    subprocess.run([_tool(tool), *args, str(path)], check=True, capture_output=True)
    return path


def _objcopy_add(path: Path) -> Path:
    extra = path.with_suffix(".extra")
    extra.write_bytes(b"\xab" * (3 << 20))
    return _run(path, "objcopy", f"--add-section=.buildkit_extra={extra}")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """Every linker x every rewrite, each its own file (a 1 MiB .rodata blob, so the dynamic data
    patchelf moves lands past the first MiB-sized chunk)."""
    root = tmp_path_factory.mktemp("layouts")
    out: dict[tuple[str, str], Path] = {}
    for linker in LINKERS:
        base = link(root, linker)
        for variant, rewrite in VARIANTS.items():
            copy = root / f"{linker}-{variant}.so"
            shutil.copyfile(base, copy)
            out[(linker, variant)] = rewrite(copy)
    return out


@pytest.mark.parametrize("limits", LIMITS)
@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("linker", list(LINKERS))
def test_every_layout_reads_as_pyelftools_reads_it(
    built: dict[tuple[str, str], Path], linker: str, variant: str, limits: Limits
) -> None:
    path = built[(linker, variant)]
    want = expected(path)
    assert want["needed"], "the library links libm, libz and libc"
    assert {"cos", "zlibVersion"} <= set(want["undefined"])  # type: ignore[arg-type]
    assert read(path, limits) == want


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("linker", list(LINKERS))
def test_tables_within_reach_of_dynamic_are_read_in_one_pass(
    built: dict[tuple[str, str], Path], linker: str, variant: str
) -> None:
    """With a head window too small for the tables, what lies within ``dynamic_reach`` before
    PT_DYNAMIC is still kept as it streams by, whole LOAD segments included: patchelf gives .dynsym
    and .dynstr segments of their own beside .dynamic's (numpy 2.x's libscipy_openblas64_), and
    keeping only .dynamic's own segment read every repaired library twice with RECORD verified."""
    path = built[(linker, variant)]
    data = path.read_bytes()
    limits = Limits(chunk_size=1 << 16, head_bytes=4096, whole_member_bytes=0)
    dynamic = next(s for s in ELFFile(io.BytesIO(data)).iter_sections() if isinstance(s, DynamicSection))
    assert dynamic["sh_offset"] < limits.dynamic_reach  # all that precedes .dynamic is within reach
    result = read_elf_member(
        path.name, lambda: io.BytesIO(data), len(data), limits, read_to_end=True, symbols=INTEREST
    )
    assert (result.passes, result.bytes_read, result.complete) == (1, len(data), True)
    assert result.elf is not None and result.elf.needed == expected(path)["needed"]


def test_repair_moved_the_tables_to_the_end(built: dict[tuple[str, str], Path]) -> None:
    """The variants do produce the layout that was unreadable: PT_DYNAMIC in a segment after the
    1 MiB blob, the string table beside it, .dynsym and .gnu.version_r still at the front."""
    path = built[("bfd", "repaired")]
    out = subprocess.run(["readelf", "-lW", str(path)], check=True, capture_output=True, text=True).stdout
    dynamic = next(line for line in out.splitlines() if line.strip().startswith("DYNAMIC"))
    assert int(dynamic.split()[1], 16) > 1 << 20


def test_really_corrupt_tables_name_the_bytes(tmp_path: Path) -> None:
    """A string table that runs past the file is corrupt: the message says which bytes."""
    path = _repaired(link(tmp_path, "bfd", blob=4096))
    data = bytearray(path.read_bytes())
    elf = ELFFile(io.BytesIO(bytes(data)))
    dyn = next(s for s in elf.iter_sections() if isinstance(s, DynamicSection))
    base = dyn["sh_offset"]
    for i in range(dyn.num_tags()):
        tag, _value = struct.unpack_from("<qQ", data, base + 16 * i)
        if tag == 10:  # DT_STRSZ
            struct.pack_into("<qQ", data, base + 16 * i, 10, len(data) * 2)
    with pytest.raises(WheelReadError, match=r"DT_STRTAB .*past the file|bytes") as streamed:
        read_elf_member("corrupt.so", lambda: io.BytesIO(bytes(data)), len(data), Limits())
    with pytest.raises(WheelReadError) as in_memory:
        read_elf_bytes("corrupt.so", bytes(data), Limits())
    assert str(in_memory.value) == str(streamed.value)


def test_common_machine_names_are_pyelftools_names() -> None:
    """The built-in names (no pyelftools import on the common path) are pyelftools' own."""
    from elftools.elf.enums import ENUM_E_MACHINE

    from buildkit.inspect.loader import _COMMON_MACHINES

    assert all(ENUM_E_MACHINE[name] == value for value, name in _COMMON_MACHINES.items())
