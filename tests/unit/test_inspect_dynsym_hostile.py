"""Hostile and truncated variants of what the inspection now reads besides the loader's tables:
.dynsym (sized by DT_HASH / DT_GNU_HASH, scanned as it streams by) and the GNU property note. Each
gives a WheelReadError or is ignored: never a crash, a hang or an unbounded allocation."""

from __future__ import annotations

import contextlib
import io
import random
import struct
import subprocess
import time
import tracemalloc
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from buildkit.errors import WheelReadError
from buildkit.inspect import ElfInfo, Limits, inspect_wheel, loader
from tests.helpers.shared_library import have_gcc
from tests.helpers.wheel_zip import write_wheel

pytestmark = pytest.mark.skipif(not have_gcc(), reason="gcc is needed to build test libraries")
WHEEL = "demo-1.0-cp311-cp311-linux_x86_64.whl"
EARLY = Limits(whole_member_bytes=0, chunk_size=4096)
SOURCE = (
    "extern int uncompress2(unsigned char *, unsigned long *, const unsigned char *, unsigned long *);\n"
    "extern double PyFPE_jbuf[];\n"
    "int f(unsigned char *d, unsigned long *n) { return uncompress2(d, n, d, n) + (int)PyFPE_jbuf[0]; }\n"
)
DT_HASH, DT_SYMTAB, DT_GNU_HASH = 4, 6, 0x6FFFFEF5


def build(tmp_path: Path, *flags: str, source: str = SOURCE, name: str = "lib.so") -> bytes:
    src = tmp_path / (name + ".c")
    src.write_text(source)
    out = tmp_path / name
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", *flags, str(src), "-o", str(out)], check=True)
    return out.read_bytes()


def inspect(tmp_path: Path, data: bytes, limits: Limits = EARLY) -> ElfInfo:
    path = write_wheel(tmp_path / WHEEL, {"demo/lib.so": data})
    (info,) = inspect_wheel(path, limits=limits, verify_record=False).elves
    return info


def section(data: bytes, name: str) -> tuple[int, int]:
    found = ELFFile(io.BytesIO(data)).get_section_by_name(name)
    assert found is not None, name
    return found["sh_offset"], found["sh_size"]


def dynamic_value(data: bytes, tag: int) -> tuple[int, int]:
    """(file offset of the entry, value) of the first dynamic entry ``tag``."""
    start, size = section(data, ".dynamic")
    for at in range(start, start + size, 16):
        d_tag, value = struct.unpack_from("<qQ", data, at)
        if d_tag == tag:
            return at, value
    raise AssertionError(f"no dynamic tag {tag:#x}")


def patched(data: bytes, at: int, fmt: str, *values: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, *values)
    return bytes(out)


def test_the_unpatched_library_is_read(tmp_path: Path) -> None:
    """The premise of every case below: the same library, untouched, inspects cleanly."""
    assert inspect(tmp_path, build(tmp_path)).undefined_of_interest == ("PyFPE_jbuf", "uncompress2")


# --------------------------------------------------------------------------- .dynsym sizing
def test_dt_hash_count_past_the_file(tmp_path: Path) -> None:
    data = build(tmp_path, "-Wl,--hash-style=sysv")
    at, _ = section(data, ".hash")
    with pytest.raises(WheelReadError, match="dynamic symbol"):
        inspect(tmp_path, patched(data, at + 4, "<I", 0xFFFF_FFF0))  # nchain


def test_dt_hash_count_running_off_the_end(tmp_path: Path) -> None:
    data = build(tmp_path, "-Wl,--hash-style=sysv")
    at, _ = section(data, ".hash")
    count = (len(data) - section(data, ".dynsym")[0]) // 24 + 1  # one entry more than the file holds
    with pytest.raises(WheelReadError, match="runs past the file"):
        inspect(tmp_path, patched(data, at + 4, "<I", count))


def test_gnu_hash_with_absurd_bucket_count(tmp_path: Path) -> None:
    data = build(tmp_path)
    at, _ = section(data, ".gnu.hash")
    with pytest.raises(WheelReadError, match="DT_GNU_HASH"):
        inspect(tmp_path, patched(data, at, "<I", 0x7FFF_FFFF))


def test_gnu_hash_bucket_pointing_far_away(tmp_path: Path) -> None:
    data = build(tmp_path)
    at, _ = section(data, ".gnu.hash")
    nbuckets, _symoffset, bloom, _shift = struct.unpack_from("<IIII", data, at)
    with pytest.raises(WheelReadError, match=r"DT_GNU_HASH|dynamic symbol"):
        inspect(tmp_path, patched(data, at + 16 + bloom * 8 + (nbuckets - 1) * 4, "<I", 0xFFFF_FF00))


def _gnu_hash(nbuckets: int, symoffset: int, buckets: list[int], chain: list[int]) -> bytes:
    return (
        struct.pack("<IIII", nbuckets, symoffset, 1, 6)
        + bytes(8)
        + struct.pack(f"<{len(buckets)}I", *buckets)
        + (struct.pack(f"<{len(chain)}I", *chain))
    )


def _header() -> loader.ElfHeader:
    return loader.ElfHeader(True, "<", 62, 0, 0, 0, 64, 56, 0, 0, 64, 0, 0)


def _strings_at(names: dict[int, str]) -> loader._Strings:
    """A dynamic string table holding each name at its offset (NUL elsewhere)."""
    data = bytearray(max(at + len(name) for at, name in names.items()) + 1)
    for at, name in names.items():
        data[at : at + len(name)] = name.encode("latin-1")
    return loader._Strings("lib.so", bytes(data))


def _count(blob: bytes) -> int:
    table = loader.DynamicTable((), None, (), (), None, 0, None, None, symtab=0, gnu_hash=0)
    read = loader.require(lambda offset, size: blob[offset : offset + size])
    return loader.symbol_count("lib.so", _header(), table, read, len(blob) + 10_000 * 24)


def test_gnu_hash_count_follows_the_last_chain() -> None:
    # symbols 0..2 unhashed; bucket 0 -> 3 (chain 3, 4: the end bit at 4); bucket 1 -> 5 (5, 6, 7)
    assert _count(_gnu_hash(2, 3, [3, 5], [2, 5, 4, 6, 9])) == 8
    assert _count(_gnu_hash(2, 3, [5, 3], [2, 5, 4, 6, 9])) == 8  # the highest bucket value counts
    assert _count(_gnu_hash(2, 3, [0, 0], [])) == 3  # nothing hashed: only the unhashed symbols


def test_gnu_hash_chain_that_never_ends_is_refused_quickly() -> None:
    blob = _gnu_hash(1, 1, [1], [2] * 300_000)  # no end bit anywhere, within the file
    started = time.monotonic()
    with pytest.raises(WheelReadError, match="does not end"):
        _count(blob)
    assert time.monotonic() - started < 2


def test_lying_symbol_name_offset(tmp_path: Path) -> None:
    data = build(tmp_path)
    start, _ = section(data, ".dynsym")
    dynsym = ELFFile(io.BytesIO(data)).get_section_by_name(".dynsym")
    assert isinstance(dynsym, SymbolTableSection)
    index = next(i for i, s in enumerate(dynsym.iter_symbols()) if s.name == "uncompress2")
    with pytest.raises(WheelReadError, match="outside the dynamic string table"):
        inspect(tmp_path, patched(data, start + index * 24, "<I", 0x7FFF_0000))


def test_dt_symtab_in_no_segment_takes_the_section_route(tmp_path: Path) -> None:
    data = build(tmp_path)
    at, _ = dynamic_value(data, DT_SYMTAB)
    info = inspect(tmp_path, patched(data, at, "<qQ", DT_SYMTAB, 0x7FFF_0000_0000))
    assert info.undefined_of_interest == ("PyFPE_jbuf", "uncompress2")  # pyelftools' .dynsym


def test_symbol_table_bytes_garbled(tmp_path: Path) -> None:
    """Random bytes over .dynsym: a report (names that are not of interest) or a WheelReadError."""
    data = build(tmp_path)
    start, size = section(data, ".dynsym")
    rng = random.Random(7)
    for _ in range(20):
        out = bytearray(data)
        out[start + 24 : start + size] = bytes(rng.randrange(256) for _ in range(size - 24))
        with contextlib.suppress(WheelReadError):
            inspect(tmp_path, bytes(out))


# --------------------------------------------------------------------------- GNU property note
def _property_note(data: bytes) -> int:
    at, _ = section(data, ".note.gnu.property")
    return at


@pytest.mark.parametrize(
    ("field", "value"),
    [(0, 0x7FFF_FFFF), (4, 0x7FFF_FFFF), (4, 3), (16 + 4, 0x7FFF_FFFF), (16 + 4, 2)],
    ids=["namesz", "descsz", "descsz-short", "pr_datasz", "pr_datasz-odd"],
)
def test_property_note_with_a_bad_size_is_ignored(tmp_path: Path, field: int, value: int) -> None:
    data = build(tmp_path, "-march=x86-64-v3", "-mneeded")
    assert inspect(tmp_path, data).x86_isa_needed == 0b111  # the premise
    broken = patched(data, _property_note(data) + field, "<I", value)
    assert inspect(tmp_path, broken).x86_isa_needed is None


def test_note_segment_past_the_file_is_ignored(tmp_path: Path) -> None:
    data = build(tmp_path, "-march=x86-64-v3", "-mneeded")
    elf = ELFFile(io.BytesIO(data))
    out = data
    for i, seg in enumerate(elf.iter_segments()):
        if seg["p_type"] in ("PT_GNU_PROPERTY", "PT_NOTE"):
            at = elf["e_phoff"] + i * elf["e_phentsize"]
            out = patched(out, at + 8, "<Q", len(data) + 4096)  # p_offset
            out = patched(out, at + 32, "<Q", 1 << 40)  # p_filesz
    info = inspect(tmp_path, out)
    assert info.x86_isa_needed is None and info.undefined_of_interest == ("PyFPE_jbuf", "uncompress2")


# --------------------------------------------------------------------------- memory
def _short_name(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return "".join(letters[(i // 26**k) % 26] for k in range(4))


def _many_undefined(tmp_path: Path, count: int) -> bytes:
    """A library referencing ``count`` undefined symbols with 4-letter names (and uncompress2) from
    its data: .dynsym (24 bytes an entry) is about five times .dynstr."""
    asm = tmp_path / "many.s"
    lines = [".data", ".globl table", "table:"] + [f".quad {_short_name(i)}" for i in range(count)]
    asm.write_text("\n".join([*lines, ".quad uncompress2", ""]))
    out = tmp_path / "many.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-z,notext", str(asm), "-o", str(out)],
        check=True,
        capture_output=True,
    )
    return out.read_bytes()


def _peak(path: Path, limits: Limits) -> tuple[int, ElfInfo]:
    tracemalloc.start()
    try:
        report = inspect_wheel(path, limits=limits, verify_record=False, workers=1)
        return tracemalloc.get_traced_memory()[1], report.elves[0]
    finally:
        tracemalloc.stop()


def test_a_large_dynsym_is_scanned_not_kept(tmp_path: Path) -> None:
    """120k undefined symbols: .dynsym is about 2.9 MB. With a small head it goes by unkept: the
    pass that reads it again keeps only .dynstr and the other small tables (a pass keeping .dynsym
    would exceed max_second_pass_bytes, set below its size), and the memory the inspection allocates
    beyond what a tiny library costs stays below the table's size (the offsets of the undefined
    entries, 4 bytes each, and .dynstr are what is kept)."""
    data = _many_undefined(tmp_path, 120_000)
    _, dynsym_size = section(data, ".dynsym")
    _, dynstr_size = section(data, ".dynstr")
    assert dynsym_size > 4 * dynstr_size  # the premise: the table dwarfs the strings that are kept
    limits = Limits(
        whole_member_bytes=0,
        head_bytes=4096,
        tail_bytes=0,
        dynamic_reach=0,
        chunk_size=64 * 1024,
        max_second_pass_bytes=dynstr_size + 64 * 1024,
    )
    big = write_wheel(tmp_path / WHEEL, {"demo/many.so": data})
    peak, info = _peak(big, limits)
    assert info.undefined_of_interest == ("uncompress2",)
    small = write_wheel(tmp_path / "small-1.0-cp311-cp311-linux_x86_64.whl", {"demo/s.so": build(tmp_path)})
    baseline, _ = _peak(small, limits)
    assert peak - baseline < dynsym_size, (peak, baseline, dynsym_size)


# --------------------------------------------------------------------------- the scanner itself
def test_scan_is_the_same_whatever_the_chunking() -> None:
    rng = random.Random(3)
    entries = []
    for i in range(500):
        shndx = 0 if i % 3 else 12
        bind = 2 if i % 7 == 0 else 1  # some weak
        entries.append(struct.pack("<IBBHQQ", 10 * (i + 1), (bind << 4) | 2, 0, shndx, 0, 0))
    table = b"".join(entries)
    expected = {i + 1 for i in range(500) if i % 3 and i % 7}
    for _ in range(30):
        scan = loader.UndefinedScan(100, 500, _header())
        at = 0
        while at < len(table):
            step = rng.randint(1, 60)
            scan.feed(100 + at, table[at : at + step])
            scan.feed(100 + at, table[at : at + step])  # fed twice: harmless
            at += step
        assert scan.done
        strings = _strings_at({10 * i: f"s{i}" for i in range(1, 501)})
        names = scan.names(strings, {f"s{i}" for i in range(1, 501)})
        assert set(names) == {f"s{i}" for i in expected}


def test_scan_before_the_count_is_known_forgets_what_lies_past_the_table() -> None:
    undefined = struct.pack("<IBBHQQ", 5, 0x12, 0, 0, 0, 0)  # global, SHN_UNDEF, name at 5
    table = struct.pack("<IBBHQQ", 0, 0, 0, 0, 0, 0) + undefined * 3
    garbage = struct.pack("<IBBHQQ", 99, 0x12, 0, 0, 0, 0) * 4  # looks undefined, is not the table
    scan = loader.UndefinedScan(0, None, _header(), limit=len(table) + len(garbage))
    scan.feed(0, table + garbage + b"x" * 100)
    assert not scan.done  # the count is not known yet
    scan.set_count(4)
    assert scan.done and scan.position == len(table)
    assert scan.names(_strings_at({5: "s5", 99: "s99"}), {"s5", "s99"}) == ("s5",)
    short = loader.UndefinedScan(0, None, _header(), limit=24)  # stopped at the limit, then told more
    short.feed(0, table[:48])
    short.set_count(4)
    assert not short.done and short.position == 24
    short.feed(0, table)
    assert short.done and short.names(_strings_at({5: "s5"}), {"s5"}) == ("s5",)


@pytest.mark.parametrize(
    ("field", "value"), [(56, 0), (56, 7), (32, 1 << 40)], ids=["entsize-0", "entsize-7", "size"]
)
def test_section_route_dynsym_header_lies(tmp_path: Path, field: int, value: int) -> None:
    """DT_SYMTAB in no segment sends the file to pyelftools' sections; a .dynsym section header whose
    entry size or size lies is an error there, not a ZeroDivisionError or a huge read."""
    data = build(tmp_path)
    at, _ = dynamic_value(data, DT_SYMTAB)
    unmapped = patched(data, at, "<qQ", DT_SYMTAB, 0x7FFF_0000_0000)
    elf = ELFFile(io.BytesIO(data))
    index = next(i for i, s in enumerate(elf.iter_sections()) if s.name == ".dynsym")
    header = elf["e_shoff"] + index * elf["e_shentsize"]
    with pytest.raises(WheelReadError):
        inspect(tmp_path, patched(unmapped, header + field, "<Q", value))


def test_undefined_names_equal_reading_each_name() -> None:
    # tail-merged strings (an offset into the middle of another name), names outside the interest,
    # empty names, latin-1 bytes, repeated offsets: the bytes comparison gives what decoding each
    # name and comparing it gives
    rng = random.Random(5)
    words = ["gets", "_tr_align", "xgets", "PyFPE_jbuf", "caf\xe9", "", "_dist_code", "memcpy"]
    for _ in range(50):
        data = b"\0" + b"".join(rng.choice(words).encode("latin-1") + b"\0" for _ in range(40))
        strings = loader._Strings("lib.so", data)
        offsets = [rng.randrange(1, len(data)) for _ in range(60)]
        table = b"".join(struct.pack("<IBBHQQ", at, 0x12, 0, 0, 0, 0) for at in offsets)
        scan = loader.UndefinedScan(0, len(offsets), _header())
        scan.feed(0, table)
        interest = set(rng.sample(words, 4)) | {"caf\u0113"}  # one name latin-1 cannot encode
        expected = tuple(sorted({strings.get(at) for at in offsets} & interest))
        assert scan.names(strings, interest) == expected


def test_undefined_name_past_the_last_nul_is_named() -> None:
    data = b"\0gets\0tail"  # offsets 7.. have no terminating NUL
    table = b"".join(struct.pack("<IBBHQQ", at, 0x12, 0, 0, 0, 0) for at in (1, 8, 7, 40))
    scan = loader.UndefinedScan(0, 4, _header())
    scan.feed(0, table)
    with pytest.raises(WheelReadError, match="string at 8 lies outside the dynamic string table"):
        scan.names(loader._Strings("lib.so", data), {"gets"})
