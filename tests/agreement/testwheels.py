"""Test wheels built with the real toolchain (gcc/g++ of this Debian 12 host) and packed by hand.

Each builder compiles real C/C++ code, so the versioned symbol requirements in the ELF files are
the linker's, not ours. HIP objects are host ELFs compiled by gcc carrying a ``.hip_fatbin``
section with a clang offload bundle synthesized here (plain and CCOB/zlib): no HIP compiler runs on
this machine; a real one from the trixie hipcc builder may replace this later.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from buildkit.gate.verdict import Verdict
from buildkit.policy import symbol_version_key
from tests.helpers import wheel_zip

# EF_AMDGPU_MACH values (LLVM ELF.h) and the v4 xnack field
MACH = {"gfx908": 0x030, "gfx90a": 0x03F, "gfx942": 0x04C, "gfx1100": 0x041}
XNACK_OFF_V4 = 0x200


def have_toolchain() -> bool:
    return all(shutil.which(t) for t in ("gcc", "g++"))


def compile_shared(
    src: str, out: Path, *, cxx: bool = False, flags: Sequence[str] = (), libs: Sequence[str] = ()
) -> Path:
    suffix = ".cpp" if cxx else ".c"
    source = out.with_suffix(out.suffix + suffix)
    source.write_text(src)
    cc = "g++" if cxx else "gcc"
    subprocess.run([cc, "-O1", "-shared", "-fPIC", *flags, str(source), "-o", str(out), *libs], check=True)
    return out


def pack_wheel(
    out_dir: Path,
    name: str,
    tag: str,
    files: Mapping[str, bytes | Path],
    *,
    requires: Sequence[str] = (),
    version: str = "1.0",
) -> Path:
    """A minimal valid wheel: the files plus .dist-info/{METADATA,WHEEL,RECORD}."""
    content: dict[str, bytes] = {k: v.read_bytes() if isinstance(v, Path) else v for k, v in files.items()}
    path = out_dir / f"{name}-{version}-{tag}.whl"
    return wheel_zip.write_wheel(path, content, tag=tag, requires=tuple(requires), fixed_time=True)


# --------------------------------------------------------------------------- the wheels
def glibc_new(out: Path) -> Path:
    """A C extension needing arc4random@GLIBC_2.36, named manylinux_2_28 (a lie the gate must catch)."""
    so = compile_shared(
        "#include <stdlib.h>\nunsigned r(void) { return arc4random(); }\n"
        "void *PyInit_glibcnew(void) { return 0; }\n",
        out / "glibcnew.cpython-311-x86_64-linux-gnu.so",
    )
    return pack_wheel(out, "glibcnew", "cp311-cp311-manylinux_2_28_x86_64", {"glibcnew/_ext.so": so})


def glibcxx_new(out: Path) -> Path:
    """A C++ extension needing GLIBCXX_3.4.30 (GCC 12's libstdc++), via _GLIBCXX_ASSERTIONS."""
    src = (
        "#include <string>\n#include <vector>\n"
        "extern \"C\" int use(int n) { std::vector<int> v(n); std::string s(n, 'x'); s.reserve();"
        " return v[0] + (int)s.size(); }\n"
        'extern "C" void *PyInit_cxxnew(void) { return 0; }\n'
    )
    so = compile_shared(src, out / "cxxnew.so", cxx=True, flags=["-D_GLIBCXX_ASSERTIONS"])
    return pack_wheel(out, "cxxnew", "cp311-cp311-linux_x86_64", {"cxxnew/_ext.so": so})


def tiny_library(out: Path) -> Path:
    """``libtiny.so.1``: a library of our own (needing getrandom@GLIBC_2.25), on no whitelist and not
    installed on the host."""
    libdir = out / "tinylib"
    libdir.mkdir(exist_ok=True)
    lib = compile_shared(
        "#include <string.h>\n#include <sys/random.h>\n"
        "int tiny(const char *s) { char b[4]; return (int)strlen(s) + (int)getrandom(b, 4, 0); }\n",
        libdir / "libtiny.so.1",
        flags=["-Wl,-soname,libtiny.so.1"],
    )
    link = libdir / "libtiny.so"
    if not link.exists():
        os.symlink(lib.name, link)
    return libdir


def external_lib(out: Path) -> tuple[Path, Path]:
    """An extension linking libtiny.so.1 (not whitelisted); returns (wheel, directory of libtiny)."""
    libdir = tiny_library(out)
    so = compile_shared(
        'int tiny(const char *);\nint use(void) { return tiny("x"); }\n'
        "void *PyInit_usetiny(void) { return 0; }\n",
        out / "usetiny.so",
        libs=[f"-L{libdir}", "-ltiny"],
    )
    return pack_wheel(out, "usetiny", "cp311-cp311-linux_x86_64", {"usetiny/_ext.so": so}), libdir


def grafted(out: Path, plat: str = "manylinux_2_28_x86_64") -> Path:
    """The external_lib wheel repaired by the real ``auditwheel repair``: libtiny grafted in usetiny.libs/."""
    src = out / "src"
    src.mkdir(exist_ok=True)
    wheel, libdir = external_lib(src)
    dest = out / "repaired"
    env = {**os.environ, "LD_LIBRARY_PATH": str(libdir)}
    subprocess.run(
        ["auditwheel", "repair", "--plat", plat, "-w", str(dest), str(wheel)],
        check=True,
        env=env,
        capture_output=True,
    )
    (repaired,) = dest.glob("*.whl")
    return repaired


def amdgpu_code_object(target: str) -> bytes:
    """A 64-byte ELF64 header of an AMDGPU HSA code object v4 for ``target`` (``gfx90a:xnack-``)."""
    name, *features = target.split(":")
    flags = MACH[name] | (XNACK_OFF_V4 if "xnack-" in features else 0)
    ident = b"\x7fELF" + bytes([2, 1, 1, 64, 2]) + bytes(7)
    return ident + struct.pack("<HHIQQQIHHHHHH", 3, 224, 1, 0, 0, 0, flags, 64, 0, 0, 64, 0, 0)


def offload_bundle(targets: Sequence[str]) -> bytes:
    """A plain clang offload bundle (``__CLANG_OFFLOAD_BUNDLE__``): a host entry plus one per target."""
    entries = [("host-x86_64-unknown-linux-gnu-", b"")]
    entries += [(f"hipv4-amdgcn-amd-amdhsa--{t}", amdgpu_code_object(t)) for t in targets]
    header = b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(entries))
    header_len = len(header) + sum(24 + len(i) for i, _ in entries)
    pos = (header_len + 7) & ~7
    table, blobs = b"", b""
    for ident, blob in entries:
        table += struct.pack("<QQQ", pos if blob else 0, len(blob), len(ident)) + ident.encode()
        if blob:
            blobs += blob + bytes((-len(blob)) % 8)
            pos += len(blob) + (-len(blob)) % 8
    head = header + table
    return head + bytes(((header_len + 7) & ~7) - len(head)) + blobs


def ccob_zlib(bundle: bytes) -> bytes:
    """A compressed offload bundle (``CCOB`` version 2, zlib), as ``--offload-compress`` emits."""
    payload = zlib.compress(bundle)
    total = 4 + 2 + 2 + 4 + 4 + 8 + len(payload)
    return b"CCOB" + struct.pack("<HHIIQ", 2, 0, total, len(bundle), 0) + payload


def _fatbin_c(blob: bytes, symbol: str) -> str:
    data = ",".join(str(b) for b in blob)
    return (
        f'__attribute__((section(".hip_fatbin"), used, aligned(4096))) '
        f"const unsigned char {symbol}[{len(blob)}] = {{{data}}};\n"
    )


def hip_like(out: Path, plain: Sequence[str], compressed: Sequence[str] | None = None) -> Path:
    """A HIP-like wheel: one extension with a plain bundle for ``plain``; optionally a second object
    with a CCOB/zlib bundle for ``compressed``; both gcc-compiled host ELFs."""
    files: dict[str, bytes | Path] = {}
    src = _fatbin_c(offload_bundle(plain), "__hip_fatbin") + "void *PyInit_hipk(void) { return 0; }\n"
    files["hipk/_ext.so"] = compile_shared(src, out / "hipk.so")
    if compressed is not None:
        src2 = (
            _fatbin_c(ccob_zlib(offload_bundle(compressed)), "__hip_fatbin_z")
            + "int k2(void) { return 2; }\n"
        )
        files["hipk/libkernels2.so"] = compile_shared(
            src2, out / "libkernels2.so", flags=["-Wl,-soname,libkernels2.so"]
        )
    return pack_wheel(out, "hipk", "cp311-cp311-manylinux_2_28_x86_64", files)


# --------------------------------------------------------------------------- policies beyond GLIBC ceilings
def atomic16(out: Path) -> Path:
    """16-byte atomics through libatomic: ``__atomic_load_16@LIBATOMIC_1.0`` (manylinux_2_24 and up)."""
    so = compile_shared(
        "typedef struct { long a, b; } pair;\npair g;\n"
        "long use(void) { pair p; __atomic_load(&g, &p, __ATOMIC_SEQ_CST); return p.a; }\n"
        "void *PyInit_atom(void) { return 0; }\n",
        out / "atom.cpython-311-x86_64-linux-gnu.so",
        libs=["-latomic"],
    )
    return pack_wheel(out, "atom", "cp311-cp311-linux_x86_64", {f"atom/{so.name}": so})


def zlib_new(out: Path) -> Path:
    """``uncompress2@ZLIB_1.2.9`` (manylinux_2_27 and up; blacklisted by auditwheel before 2_31)."""
    so = compile_shared(
        "#include <zlib.h>\n"
        "int use(unsigned char *d, unsigned long *dl, const unsigned char *s, unsigned long *sl)"
        " { return uncompress2(d, dl, s, sl); }\nvoid *PyInit_zl(void) { return 0; }\n",
        out / "zl.cpython-311-x86_64-linux-gnu.so",
        libs=["-lz"],
    )
    return pack_wheel(out, "zl", "cp311-cp311-linux_x86_64", {f"zl/{so.name}": so})


def dt_relr(out: Path, tag: str = "linux_x86_64") -> Path:
    """``-z pack-relative-relocs``: the extension needs ``GLIBC_ABI_DT_RELR`` (glibc 2.36), nothing
    numeric above GLIBC_2.2.5."""
    so = compile_shared(
        "#include <string.h>\nstatic int a, b, c; int *tab[] = {&a, &b, &c, &a, &b, &c};\n"
        "int get(int i, const char *s) { return *tab[i] + (int)strlen(s); }\n"
        "void *PyInit_relr(void) { return 0; }\n",
        out / "relr.cpython-311-x86_64-linux-gnu.so",
        flags=["-Wl,-z,pack-relative-relocs"],
    )
    return pack_wheel(out, "relr", f"cp311-cp311-{tag}", {f"relr/{so.name}": so})


def plain_ext(out: Path, tag: str, name: str = "plain") -> Path:
    """A C extension needing only ``strlen@GLIBC_2.2.5``, under the platform tag ``tag``."""
    so = compile_shared(
        "#include <string.h>\nint use(const char *s) { return (int)strlen(s); }\n"
        "void *PyInit_plain(void) { return 0; }\n",
        out / f"{name}.cpython-311-x86_64-linux-gnu.so",
    )
    return pack_wheel(out, name, f"cp311-cp311-{tag}", {f"{name}/{so.name}": so})


# --------------------------------------------------------------------------- libraries ld.so does not find
_HELPER_USER = (
    '#include <stdio.h>\nint helper(const char *);\nint use(void) { return helper("x") + puts("y"); }\n'
    "void *PyInit__C(void) { return 0; }\n"
)
_EXT = "_C.cpython-311-x86_64-linux-gnu.so"


def _helper(out: Path) -> Path:
    return compile_shared(
        "#include <string.h>\nint helper(const char *s) { return (int)strlen(s); }\n",
        out / "libhelper.so.1",
        flags=["-Wl,-soname,libhelper.so.1"],
    )


def soname_only(out: Path) -> Path:
    """``pkg/libhelper.so`` carrying SONAME ``libhelper.so.1`` (a ``package_data=['*.so']`` copy of a
    CMake SOVERSION library), needed by the extension through RUNPATH ``$ORIGIN``: ld.so looks for
    ``pkg/libhelper.so.1`` and finds nothing."""
    helper = _helper(out)
    ext = compile_shared(
        _HELPER_USER,
        out / "_C_origin.so",
        flags=["-Wl,--enable-new-dtags,-rpath,$ORIGIN"],
        libs=[f"-L{out}", "-l:libhelper.so.1"],
    )
    return pack_wheel(
        out,
        "sonameonly",
        "cp311-cp311-manylinux_2_17_x86_64",
        {f"pkg/{_EXT}": ext, "pkg/libhelper.so": helper},
    )


def unreachable(out: Path, rpath: str | None = None) -> Path:
    """``pkg/lib/libhelper.so.1`` needed by an extension with no search path (``rpath`` None) or the
    RPATH ``rpath`` (``$ORIGIN/lib`` reaches it)."""
    helper = _helper(out)
    flags = [f"-Wl,--disable-new-dtags,-rpath,{rpath}"] if rpath else []
    ext = compile_shared(_HELPER_USER, out / "_C_lib.so", flags=flags, libs=[f"-L{out}", "-l:libhelper.so.1"])
    name = "reachable" if rpath else "unreachable"
    return pack_wheel(
        out, name, "cp311-cp311-manylinux_2_17_x86_64", {f"pkg/{_EXT}": ext, "pkg/lib/libhelper.so.1": helper}
    )


# --------------------------------------------------------------------------- other architectures, musl
#: wheel arch -> (clang triple, extra flags, the architecture's base glibc version, Python's SOABI triple)
CROSS = {
    "aarch64": ("aarch64-linux-gnu", (), "2.17", "aarch64-linux-gnu"),
    "ppc64le": ("powerpc64le-linux-gnu", (), "2.17", "powerpc64le-linux-gnu"),
    "ppc64": ("powerpc64-linux-gnu", (), "2.3", "powerpc64-linux-gnu"),
    "s390x": ("s390x-linux-gnu", (), "2.2", "s390x-linux-gnu"),
    "i686": ("i686-linux-gnu", (), "2.0", "i386-linux-gnu"),
    "armv7l": ("armv7-linux-gnueabihf", ("-mfloat-abi=hard",), "2.4", "arm-linux-gnueabihf"),
    "riscv64": ("riscv64-linux-gnu", (), "2.27", "riscv64-linux-gnu"),
    "mips64el": ("mips64el-linux-gnuabi64", (), "2.0", "mips64el-linux-gnuabi64"),  # no policy has it
}


def have_cross_toolchain() -> bool:
    return shutil.which("clang-19") is not None and any(
        shutil.which(t) for t in ("ld.lld", "ld.lld-19", "/usr/lib/llvm-19/bin/ld.lld")
    )


def _clang(triple: str, flags: Sequence[str]) -> list[str]:
    return ["clang-19", f"--target={triple}", *flags, "-fPIC", "-shared", "-nostdlib", "-fuse-ld=lld", "-w"]


def cross_ext(out: Path, arch: str, tag: str | None = None) -> Path:
    """An extension for ``arch`` (clang-19 + lld, no sysroot) linked against a stub ``libc.so.6``
    carrying the architecture's base glibc version node and GLIBC_2.34; it needs ``newfn@GLIBC_2.34``.
    Tagged ``manylinux_2_17_<arch>`` unless ``tag`` says otherwise."""
    triple, flags, base, soabi = CROSS[arch]
    d = out / arch
    d.mkdir(exist_ok=True)
    (d / "libc.map").write_text(
        f"GLIBC_{base} {{ global: strlen; }};\nGLIBC_2.34 {{ global: newfn; }} GLIBC_{base};\n"
    )
    (d / "libc.c").write_text(
        "unsigned long strlen(const char *s) { return 0; }\nint newfn(void) { return 0; }\n"
    )
    cc = _clang(triple, flags)
    libc_map = f"-Wl,--version-script={d / 'libc.map'}"
    subprocess.run(
        [*cc, "-Wl,-soname,libc.so.6", libc_map, str(d / "libc.c"), "-o", str(d / "libc.so.6")], check=True
    )
    (d / "ext.c").write_text(
        "unsigned long strlen(const char *);\nint newfn(void);\n"
        "int use(const char *s) { return (int)strlen(s) + newfn(); }\nvoid *PyInit_ext(void) { return 0; }\n"
    )
    so = d / f"ext.cpython-311-{soabi}.so"
    subprocess.run([*cc, str(d / "ext.c"), str(d / "libc.so.6"), "-o", str(so)], check=True)
    return pack_wheel(
        d, f"ext{arch}", f"cp311-cp311-{tag or f'manylinux_2_17_{arch}'}", {f"ext/{so.name}": so}
    )


def musl_ext(out: Path, *, external: bool = False) -> Path:
    """A musllinux_1_2 x86_64 extension (clang-19 + lld) linked against stubs with musl's SONAME
    (musl has no symbol versions); with ``external``, also against ``libfoo.so.1`` (on no whitelist)."""
    d = out / ("musl-ext" if external else "musl")
    d.mkdir(exist_ok=True)
    cc = _clang("x86_64-linux-musl", ())
    (d / "libc.c").write_text(
        "unsigned long strlen(const char *s) { return 0; }\nint foo(void) { return 1; }\n"
    )
    libc = d / "libc.musl-x86_64.so.1"
    subprocess.run([*cc, "-Wl,-soname,libc.musl-x86_64.so.1", str(d / "libc.c"), "-o", str(libc)], check=True)
    libs = [str(libc)]
    if external:
        foo = d / "libfoo.so.1"
        subprocess.run([*cc, "-Wl,-soname,libfoo.so.1", str(d / "libc.c"), "-o", str(foo)], check=True)
        libs.append(str(foo))
    (d / "ext.c").write_text(
        "unsigned long strlen(const char *);\nint use(const char *s) { return (int)strlen(s); }\n"
        "void *PyInit_ext(void) { return 0; }\n"
    )
    so = d / "ext.cpython-311-x86_64-linux-musl.so"
    subprocess.run([*cc, str(d / "ext.c"), *libs, "-o", str(so)], check=True)
    name = "muslfoo" if external else "muslext"
    return pack_wheel(d, name, "cp311-cp311-musllinux_1_2_x86_64", {f"ext/{so.name}": so})


def auditwheel_show(wheel: Path) -> tuple[int, dict[str, Any]]:
    """``auditwheel show --json``: its exit status and JSON document (it prints one on refusal too)."""
    proc = subprocess.run(["auditwheel", "show", "--json", str(wheel)], capture_output=True, text=True)
    data: dict[str, Any] = json.loads(proc.stdout)
    assert data["version"] == 1, proc.stderr
    return proc.returncode, data


def assert_versions_listed(aw: dict[str, Any], v: Verdict) -> None:
    """Per library, the highest numeric version of each prefix auditwheel saw, and each non-numeric
    one (``GLIBC_ABI_DT_RELR``), is in our symbol maxima."""
    listed = {(s.library, s.version) for s in v.symbols}
    for lib, versions in aw["versioned_symbols"].items():
        numeric = [s for s in versions if symbol_version_key(s) is not None]
        for prefix in {s.split("_", 1)[0] for s in numeric}:
            top = max(
                (s for s in numeric if s.startswith(prefix + "_")), key=lambda s: symbol_version_key(s) or ()
            )
            assert (lib, top) in listed
        assert {(lib, s) for s in versions if symbol_version_key(s) is None} <= listed
