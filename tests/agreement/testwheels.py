"""Test wheels built with the real toolchain (gcc/g++ of this Debian 12 host) and packed by hand.

Each builder compiles real C/C++ code, so the versioned symbol requirements in the ELF files are
the linker's, not ours. HIP objects are host ELFs compiled by gcc carrying a ``.hip_fatbin``
section with a clang offload bundle synthesized here (plain and CCOB/zlib): no HIP compiler runs on
this machine; a real one from the trixie hipcc builder may replace this later.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

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
