"""buildkit.gate.rules.integrity through the real pipeline: each rule on a wheel built here (gcc for the ELF
members, tests/helpers for the zip), inspected by ``inspect_wheel`` and judged by ``gate.evaluate``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.gate.loading import resolve_origin
from buildkit.gate.verdict import Verdict
from buildkit.inspect import Limits, inspect_wheel
from tests.helpers.offload_bundle import amdgpu_header, plain_bundle
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_edit import edit_wheel, read_members, record_row
from tests.helpers.wheel_zip import write_wheel

pytestmark = pytest.mark.skipif(not have_gcc(), reason="gcc is needed to build test libraries")
WHEEL = "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
DIST = "demo-1.0.dist-info"
EXT = "demo/_ext.so"
SIMPLE = "int f(void) { return 1; }\n"
# Many local functions: .symtab/.strtab after the dynamic data make the member larger than the part
# the early stop reads.
BIG = "".join(
    f"__attribute__((used)) static int local_{i}_with_a_long_name(void){{return {i};}}\n" for i in range(4000)
)
EARLY = Limits(whole_member_bytes=0, chunk_size=4096)


def gate(path: Path, config: GateConfig | None = None, **inspect: object) -> Verdict:
    return evaluate(inspect_wheel(path, **inspect), config or GateConfig())  # type: ignore[arg-type]


def found(v: Verdict, rule: str, severity: str = "error") -> list[tuple[str | None, str]]:
    return [(f.file, f.message) for f in v.findings if f.rule == rule and f.severity == severity]


def lib(tmp_path: Path, name: str = "a.so", source: str = SIMPLE, **kw: object) -> bytes:
    return build_shared_library(tmp_path / name, source, **kw).read_bytes()  # type: ignore[arg-type]


# --------------------------------------------------------------------------- RECORD
def test_consistent_wheel_passes_with_hashes_verified(tmp_path: Path) -> None:
    path = write_wheel(
        tmp_path / WHEEL, {EXT: lib(tmp_path), "demo/__init__.py": b"", "demo/x.py": b"x = 1\n"}
    )
    v = gate(path)
    assert v.passed, v.findings
    assert v.integrity is not None and v.integrity.hashes_verified
    assert (v.integrity.record_entries, v.integrity.files) == (6, 6)


def test_member_missing_from_record_is_a_hidden_binary(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {EXT: lib(tmp_path)})
    edit_wheel(path, put={"demo/hidden.so": lib(tmp_path, "h.so"), "demo/notes.txt": b"hi\n"})
    v = gate(path)
    assert not v.passed
    errors = dict(found(v, "record"))
    assert "hidden binary" in errors["demo/hidden.so"]
    assert "not in RECORD" in errors["demo/notes.txt"] and "hidden binary" not in errors["demo/notes.txt"]
    # names and sizes need no hashing: the same verdict without --verify-record
    assert dict(found(gate(path, verify_record=False), "record")) == errors


def test_record_entry_without_a_file_is_a_broken_wheel(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {EXT: lib(tmp_path), "demo/data.bin": b"\1\2\3"})
    edit_wheel(path, drop=["demo/data.bin"])
    assert found(gate(path), "record") == [
        ("demo/data.bin", "RECORD lists demo/data.bin but the archive has no such file: a broken wheel")
    ]


def test_hash_mismatch_of_same_size_member_names_it_only_when_hashing(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {EXT: lib(tmp_path), "demo/x.py": b"x = 1\n"})
    edit_wheel(path, put={"demo/x.py": b"x = 2\n"})  # same size: only the digest tells
    errors = found(gate(path), "record")
    assert [f for f, _ in errors] == ["demo/x.py"] and "does not match its RECORD hash" in errors[0][1]
    unverified = gate(path, verify_record=False)
    assert unverified.passed and unverified.integrity is not None and not unverified.integrity.hashes_verified


def test_tampering_past_the_early_stop_is_caught_by_reading_on(tmp_path: Path) -> None:
    """The bytes after an ELF's dynamic data (.symtab, .strtab) are not parsed: RECORD verification
    must still hash them. The tampered wheel has a valid zip (CRC recomputed) and an old RECORD."""
    data = bytearray(lib(tmp_path, source=BIG + SIMPLE))
    at = data.rfind(b"local_3999_with_a_long_name")
    assert at > len(data) // 2
    data[at : at + 5] = b"LOCAL"
    path = write_wheel(tmp_path / WHEEL, {EXT: lib(tmp_path, source=BIG + SIMPLE)})
    edit_wheel(path, put={EXT: bytes(data)})
    fast = inspect_wheel(path, limits=EARLY, verify_record=False)
    stat = next(s for s in fast.stats if s.name == EXT)
    assert stat.bytes_read <= at  # the tampered bytes were never read without verification
    assert evaluate(fast, GateConfig()).passed
    v = gate(path, limits=EARLY)
    assert [f for f, _ in found(v, "record")] == [EXT]


def test_size_mismatch_is_caught_without_hashing(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {EXT: lib(tmp_path), "demo/x.py": b"x = 1\n"})
    edit_wheel(path, put={"demo/x.py": b"x = 100\n"})
    errors = found(gate(path, verify_record=False), "record")
    assert errors == [("demo/x.py", "RECORD says demo/x.py is 6 bytes, the archive holds 8")]


def test_record_line_and_signature_files_are_exempt(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {EXT: lib(tmp_path)})
    edit_wheel(path, put={f"{DIST}/RECORD.jws": b"{}", f"{DIST}/RECORD.p7s": b"\0sig"})
    v = gate(path)
    assert v.passed, v.findings
    record = read_members(path)[f"{DIST}/RECORD"].decode()
    assert f"{DIST}/RECORD,," in record and "RECORD.jws" not in record


def test_missing_record_and_weak_or_absent_hashes_fail(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {EXT: lib(tmp_path), "demo/x.py": b"x = 1\n"})
    members = read_members(path)
    rows = [
        record_row(EXT, members[EXT], "md5"),
        "demo/x.py,,",
        record_row(f"{DIST}/WHEEL", members[f"{DIST}/WHEEL"]),
    ]
    rows += [record_row(f"{DIST}/METADATA", members[f"{DIST}/METADATA"]), f"{DIST}/RECORD,,"]
    edit_wheel(path, put={f"{DIST}/RECORD": ("\n".join(rows) + "\n").encode()})
    errors = dict(found(gate(path), "record"))
    assert "md5, which the wheel spec forbids" in errors[EXT]
    # no hash: pip installs it and nothing breaks, the gate only cannot verify it (calibrated on
    # onnxruntime-rocm, docs/GATE-RULES.md): a warning
    assert "demo/x.py" not in errors
    warnings = dict(found(gate(path), "record", "warning"))
    assert warnings["demo/x.py"] == "RECORD gives no hash for demo/x.py: it cannot be verified"
    edit_wheel(path, drop=[f"{DIST}/RECORD"])
    assert found(gate(path), "record") == [
        (None, f"the wheel has no {DIST}/RECORD (a wheel must list its files)")
    ]


def test_sha512_record_is_verified_in_its_own_algorithm(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {EXT: lib(tmp_path)})
    members = read_members(path)
    rows = [record_row(n, d, "sha512") for n, d in members.items() if not n.endswith("RECORD")]
    edit_wheel(path, put={f"{DIST}/RECORD": ("\n".join([*rows, f"{DIST}/RECORD,,"]) + "\n").encode()})
    assert gate(path).passed
    edit_wheel(path, put={EXT: members[EXT][:-1] + b"\x01"})
    assert [f for f, _ in found(gate(path), "record")] == [EXT]


# --------------------------------------------------------------------------- WHEEL tags
def test_wheel_tag_lines_must_equal_the_file_name_tags(tmp_path: Path) -> None:
    path = write_wheel(tmp_path / WHEEL, {EXT: lib(tmp_path)}, tag="cp311-cp311-manylinux_2_17_x86_64")
    v = gate(path)
    assert v.passed, v.findings  # a warning: pip and uv read the file name (cupy, playwright, xgboost)
    errors = found(v, "wheel-tags", "warning")
    assert len(errors) == 1 and errors[0][0] == f"{DIST}/WHEEL"
    assert "cp311-cp311-manylinux_2_28_x86_64 not in" in errors[0][1]
    assert "cp311-cp311-manylinux_2_17_x86_64 not in the file name" in errors[0][1]


@pytest.mark.parametrize(
    ("lines", "ok"),
    [
        (["py2-none-any", "py3-none-any"], True),  # the spec's form: one expanded tag per line
        (["py2.py3-none-any"], True),  # a compressed line expands to the same set
        (["py3-none-any"], False),
        ([], False),
    ],
)
def test_compressed_tag_sets_compare_as_sets(tmp_path: Path, lines: list[str], ok: bool) -> None:
    path = write_wheel(
        tmp_path / "demo-1.0-py2.py3-none-any.whl", {"demo/x.py": b"x = 1\n"}, tag="py2.py3-none-any"
    )
    text = "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n" + "".join(
        f"Tag: {t}\n" for t in lines
    )
    edit_wheel(path, put={f"{DIST}/WHEEL": text.encode()}, rerecord=True)
    v = gate(path)
    assert not found(v, "record")
    assert (not found(v, "wheel-tags", "warning")) is ok
    assert v.passed


# --------------------------------------------------------------------------- RPATH / RUNPATH
@pytest.mark.parametrize(
    ("rpath", "severity", "words"),
    [
        ("/project/build/lib", "error", "leaked build directory"),
        ("/tmp/pip-build-env-x/lib", "error", "leaked build directory"),
        ("rpath:/home/runner/work/lib", "error", "RPATH entry /home/runner/work/lib"),
        ("/usr/local/cuda/lib64", "error", "absolute path outside the wheel"),
        ("lib", "error", "relative to the current directory"),
        ("$ORIGIN/../..", "warning", "1 level above site-packages (inside the environment)"),
        ("$ORIGIN/../../../..", "warning", "3 levels above site-packages (inside the environment)"),
        ("$ORIGIN/../../../../..", "error", "4 levels above site-packages, outside the Python environment"),
        ("/opt/rocm/lib", "warning", "system ROCm install"),
        ("/opt/rocm-6.2.0/lib", "warning", "system ROCm install"),
    ],
)
def test_search_paths_leaving_the_wheel(tmp_path: Path, rpath: str, severity: str, words: str) -> None:
    path = write_wheel(tmp_path / WHEEL, {EXT: lib(tmp_path, rpath=rpath)})
    v = gate(path)
    hits = found(v, "rpath", severity)
    assert len(hits) == 1 and hits[0][0] == EXT and words in hits[0][1], v.findings
    assert v.passed is (severity == "warning")
    assert [f.symbol for f in v.findings if f.rule == "rpath"] == [rpath.removeprefix("rpath:")]


def test_origin_paths_inside_the_wheel_pass(tmp_path: Path) -> None:
    members = {
        EXT: lib(tmp_path, rpath="$ORIGIN/../demo.libs:$ORIGIN"),
        "demo/sub/b.so": lib(tmp_path, "b.so", rpath="${ORIGIN}/../../demo.libs"),
        "demo-1.0.data/platlib/c.so": lib(tmp_path, "c.so", rpath="$ORIGIN/demo.libs"),
    }
    assert not [f for f in gate(write_wheel(tmp_path / WHEEL, members)).findings if f.rule == "rpath"]
    assert resolve_origin("demo/sub/b.so", "$ORIGIN/../../..") == ".."
    assert resolve_origin("demo-1.0.data/platlib/c.so", "$ORIGIN/..") == ".."
    assert resolve_origin("demo-1.0.data/scripts/tool", "$ORIGIN/..") is None


def test_wheel_tags_missing_from_either_side_are_named(tmp_path: Path) -> None:
    # auditwheel's file name for a manylinux2014 wheel, with only the legacy alias in WHEEL
    name = "demo-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
    path = write_wheel(tmp_path / name, {EXT: lib(tmp_path)}, tag="cp311-cp311-manylinux2014_x86_64")
    ((where, message),) = found(gate(path), "wheel-tags", "warning")
    assert where == f"{DIST}/WHEEL"
    assert message == (
        "WHEEL Tag: lines differ from the file name's tags: the file name's "
        f"cp311-cp311-manylinux_2_17_x86_64 not in {DIST}/WHEEL"
    )
    # the reverse: WHEEL lists both, the file name only the alias
    other = tmp_path / "reverse"
    other.mkdir()
    path = write_wheel(
        other / "demo-1.0-cp311-cp311-manylinux2014_x86_64.whl",
        {EXT: lib(other)},
        tag="cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64",
    )
    ((_, message),) = found(gate(path), "wheel-tags", "warning")
    assert message == (
        f"WHEEL Tag: lines differ from the file name's tags: {DIST}/WHEEL's "
        "cp311-cp311-manylinux_2_17_x86_64 not in the file name"
    )
    assert "manylinux2014" not in message  # the tag both sides have is never named


# --------------------------------------------------------------------------- load order
def _gcc(out: Path, source: str, *flags: str) -> bytes:
    src = out.with_suffix(".c")
    src.write_text(source)
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(out), str(src), *flags], check=True, capture_output=True
    )
    return out.read_bytes()


def _chain(tmp_path: Path, ext_path_flag: str | None) -> dict[str, bytes]:
    """demo/_ext.so -> demo.libs/liba.so.1 -> demo.libs/libb.so.1, as auditwheel grafts them (no
    search path of their own on the grafted libraries)."""
    d = tmp_path / f"chain{abs(hash(ext_path_flag))}"
    d.mkdir()
    b = _gcc(d / "libb.so.1", "int b(void){return 2;}\n", "-Wl,-soname,libb.so.1")
    a = _gcc(
        d / "liba.so.1",
        "int b(void); int a(void){return b();}\n",
        "-Wl,-soname,liba.so.1",
        f"-L{d}",
        "-l:libb.so.1",
    )
    flags = [f"-L{d}", "-l:liba.so.1"] + ([ext_path_flag] if ext_path_flag else [])
    ext = _gcc(d / "ext.so", "int a(void); int f(void){return a();}\n", *flags)
    return {EXT: ext, "demo.libs/liba.so.1": a, "demo.libs/libb.so.1": b}


def test_needed_library_found_only_by_load_order_is_reported(tmp_path: Path) -> None:
    v = gate(write_wheel(tmp_path / WHEEL, _chain(tmp_path, None)))
    warned = [(f.file, f.library, f.symbol) for f in v.findings if f.rule == "load-order"]
    assert warned == [  # elves in member order
        ("demo.libs/liba.so.1", "libb.so.1", "demo.libs/libb.so.1"),
        (EXT, "liba.so.1", "demo.libs/liba.so.1"),
    ]
    message = next(f.message for f in v.findings if f.rule == "load-order" and f.file == EXT)
    assert "demo/_ext.so needs liba.so.1, which demo.libs/liba.so.1 provides" in message
    # ld.so does not find them in the wheel: the gate counts them as external, as auditwheel does
    assert {u.library: (u.status, u.needed_by) for u in v.libraries if u.library != "libc.so.6"} == {
        "liba.so.1": ("external", (EXT,)),
        "libb.so.1": ("external", ("demo.libs/liba.so.1",)),
    }
    assert sorted(f.library or "" for f in v.errors if f.rule == "external-library") == [
        "liba.so.1",
        "libb.so.1",
    ]


def test_rpath_reaches_the_whole_chain_runpath_only_its_own_needs(tmp_path: Path) -> None:
    # DT_RPATH (what auditwheel sets, patchelf --force-rpath) is used for the whole chain below it
    rpath = gate(
        write_wheel(tmp_path / WHEEL, _chain(tmp_path, "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../demo.libs"))
    )
    assert not [f for f in rpath.findings if f.rule == "load-order"]
    assert {u.library: u.detail for u in rpath.libraries if u.status == "grafted"} == {
        "liba.so.1": "demo.libs/liba.so.1",
        "libb.so.1": "demo.libs/libb.so.1",
    }
    assert rpath.passed, rpath.findings
    # DT_RUNPATH covers only the object's own DT_NEEDED: liba.so.1 finds libb.so.1 only by load order
    runpath = gate(
        write_wheel(tmp_path / WHEEL, _chain(tmp_path, "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../demo.libs"))
    )
    assert [(f.file, f.library) for f in runpath.findings if f.rule == "load-order"] == [
        ("demo.libs/liba.so.1", "libb.so.1")
    ]
    # ... so libb.so.1 is not in the wheel for it (the file name's manylinux_2_28 breaks too)
    assert [(f.rule, f.library) for f in runpath.errors] == [
        ("platform-tag", "libb.so.1"),
        ("external-library", "libb.so.1"),
    ]


# --------------------------------------------------------------------------- pure wheels
PURE = "demo-1.0-py3-none-any.whl"


def test_host_binary_in_a_pure_wheel_fails(tmp_path: Path) -> None:
    path = write_wheel(
        tmp_path / PURE, {"demo/x.py": b"", "demo/helper.so": lib(tmp_path)}, tag="py3-none-any"
    )
    v = gate(path)
    assert not v.passed
    assert found(v, "pure-wheel") == [
        (
            "demo/helper.so",
            "demo/helper.so is x86_64 machine code but the wheel is tagged py3-none-any "
            "(platform-independent)",
        )
    ]


def test_standalone_code_object_in_a_pure_wheel_is_reported_not_failed(tmp_path: Path) -> None:
    path = write_wheel(
        tmp_path / PURE, {"demo/x.py": b"", "demo/k.hsaco": amdgpu_header(0x3F)}, tag="py3-none-any"
    )
    v = gate(path)
    assert v.passed, v.findings
    assert [f for f, _ in found(v, "pure-wheel", "warning")] == ["demo/k.hsaco"]
    assert [g.targets for g in v.gfx] == [("gfx90a",)]


# --------------------------------------------------------------------------- gfx targets are structural
GFX_TABLE = r"""
#include <string.h>
/* what LLVM-embedding libraries (comgr, the LLVM backend, triton's bundled LLVM) carry as data */
const char *const gfx_names[] = {"gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1100", 0};
const char bundle_id[] = "hipv4-amdgcn-amd-amdhsa--gfx90a";
const char magic_text[] = "__CLANG_OFFLOAD_BUNDLE__hipv4-amdgcn-amd-amdhsa--gfx942";
const char register_name[] = "__hipRegisterFatBinary";
/* the magic at a 4096-aligned offset, followed by garbage: not a well-formed bundle */
__attribute__((aligned(4096))) const char aligned_magic[64] = "__CLANG_OFFLOAD_BUNDLE__\377\377\377\377junk";
int count(const char *want) {
    int n = 0;
    for (int i = 0; gfx_names[i]; i++) n += strcmp(gfx_names[i], want) == 0;
    return n + (int)strlen(bundle_id) + (int)strlen(magic_text) + aligned_magic[3] + register_name[2];
}
"""


def _well_formed_rodata_bundle() -> str:
    """A complete, valid bundle as a 4096-aligned C array in .rodata (an LLVM test fixture, say):
    structurally a bundle, but not in .hip_fatbin, so no runtime registers it."""
    data = plain_bundle([("hipv4-amdgcn-amd-amdhsa--gfx90a", amdgpu_header(0x3F) + b"\0" * 64)])
    body = ",".join(str(b) for b in data)
    return f"__attribute__((aligned(4096))) const unsigned char fixture[{len(data)}] = {{{body}}};\n" + (
        "int fixture_byte(int i) { return fixture[i]; }\n"
    )


@pytest.mark.parametrize("verify_record", [True, False])
def test_gfx_name_tables_in_host_libraries_are_not_targets(tmp_path: Path, verify_record: bool) -> None:
    comgr = lib(tmp_path, "libcomgr.so", GFX_TABLE + _well_formed_rodata_bundle(), soname="libcomgr.so.2")
    assert b"hipv4-amdgcn-amd-amdhsa--gfx90a" in comgr and b"__CLANG_OFFLOAD_BUNDLE__" in comgr
    path = write_wheel(tmp_path / WHEEL, {"demo/lib/libcomgr.so.2": comgr})
    for limits in (Limits(), EARLY):
        report = inspect_wheel(path, limits=limits, verify_record=verify_record)
        (e,) = report.elves
        assert e.offload_targets == () and e.offload_bundles == 0 and e.gfx_targets == ()
        assert report.code_objects == ()
    v = gate(path, GateConfig(archs=("gfx90a",)), verify_record=verify_record)
    assert v.gfx == ()
    assert [f.message for f in v.findings if f.rule == "gfx-arch"] == [
        "archs gfx90a requested but the wheel has no HIP object or code object"
    ]


# --------------------------------------------------------------------------- *.so that are not ELF
SCRIPT = b"#!/bin/sh\necho not a library\n"
LD_SCRIPT = b"/* GNU ld script */\nINPUT(libfoo.so.1)\n"


def not_elf(v: Verdict, severity: str) -> list[tuple[str | None, str]]:
    return found(v, "inspect:not-elf-library", severity)


@pytest.mark.parametrize(
    ("member", "module"),
    [
        ("demo/_ext.cpython-311-x86_64-linux-gnu.so", "demo._ext"),
        ("demo/foo.abi3.so", "demo.foo"),
        ("demo/plain.so", "demo.plain"),
        ("demo/lib/_deep.cpython-311-x86_64-linux-gnu.so", "demo.lib._deep"),  # tagged: a module anywhere
        ("demo-1.0.data/platlib/demo_plat/_p.so", "demo_plat._p"),  # installed into site-packages
    ],
)
def test_extension_module_that_is_not_elf_fails_naming_its_first_bytes(
    tmp_path: Path, member: str, module: str
) -> None:
    v = gate(write_wheel(tmp_path / WHEEL, {EXT: lib(tmp_path), member: SCRIPT}))
    assert not v.passed
    assert not_elf(v, "error") == [
        (
            member,
            f"{member} is named like a shared library but is not ELF (starts with b'#!/bin/sh\\necho n'): "
            f"`import {module}` loads it as an extension module, which fails",
        )
    ]
    assert [f.rule for f in v.errors] == ["inspect:not-elf-library"]


def test_not_elf_library_that_ld_so_loads_fails(tmp_path: Path) -> None:
    helper = _gcc(tmp_path / "libhelper.so.1", "int h(void){return 1;}\n", "-Wl,-soname,libhelper.so.1")
    ext = _gcc(
        tmp_path / "ext.so",
        "int h(void); int f(void){return h();}\n",
        f"-L{tmp_path}",
        "-l:libhelper.so.1",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN",
    )
    assert helper  # linked against the real library; the wheel carries a linker script in its place
    members = {EXT: ext, "demo/libhelper.so.1": LD_SCRIPT, "demo.libs/libz-0a1b2c3d.so.1.2.13": LD_SCRIPT}
    v = gate(write_wheel(tmp_path / WHEEL, members))
    assert not v.passed
    errors = dict(not_elf(v, "error"))
    assert set(errors) == {"demo/libhelper.so.1", "demo.libs/libz-0a1b2c3d.so.1.2.13"}
    assert errors["demo/libhelper.so.1"].endswith(
        f"(starts with {LD_SCRIPT[:16]!r}): {EXT} needs libhelper.so.1 and ld.so opens this file for it, "
        "which fails"
    )
    assert "ld.so loads the libraries of demo.libs/" in errors["demo.libs/libz-0a1b2c3d.so.1.2.13"]


def test_not_elf_files_nothing_loads_stay_warnings(tmp_path: Path) -> None:
    members = {
        EXT: lib(tmp_path),
        "demo/lib/libfoo.so": LD_SCRIPT,  # a linker script for the link editor (dev area)
        "demo/include/libbar.so": b"GROUP ( libbar.so.2 )\n",
        "demo/libunused.so.1": LD_SCRIPT,  # versioned: never imported, and nothing needs it
        "demo/not-a-package/x.so": SCRIPT,  # no import reaches a folder named so
        "demo/two.dots.so": SCRIPT,  # no module name has a dot
        "demo-1.0.data/data/lib/libq.so": LD_SCRIPT,  # installed outside site-packages
        "demo-1.0.data/headers/libh.so": LD_SCRIPT,
        f"{DIST}/licenses/x.so": b"MIT\n",
    }
    v = gate(write_wheel(tmp_path / WHEEL, members))
    assert v.passed, v.errors
    warned = dict(not_elf(v, "warning"))
    assert set(warned) == set(members) - {EXT}
    assert warned["demo/lib/libfoo.so"] == (
        "demo/lib/libfoo.so is named like a shared library but is not ELF (starts with b'/* GNU ld script'); "
        "nothing imports or loads it from there (a linker script or a data file?)"
    )
