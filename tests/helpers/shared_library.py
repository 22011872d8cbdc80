"""Build real x86_64 shared libraries with the host's gcc (optionally carrying a .hip_fatbin section).

gcc's output depends only on what it is given (no ``-g``: no path lands in the library), so a library
already built in this process with the same source and options is copied instead of compiled again:
the tests build the same libraries many times (140 builds of 86 distinct libraries in the unit tier).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

#: (source, options) -> the library gcc made of them, in this process (each xdist worker has its own)
_BUILT: dict[tuple[object, ...], bytes] = {}


def have_gcc() -> bool:
    return shutil.which("gcc") is not None


def build_shared_library(
    out: Path,
    source: str,
    *,
    soname: str | None = None,
    libs: tuple[str, ...] = (),
    rpath: str | None = None,
    fatbin: bytes | None = None,
    cplusplus: bool = False,
) -> Path:
    """Compile ``source`` into ``out`` with gcc/g++ -shared. ``fatbin`` bytes are placed in an allocated
    ``.hip_fatbin`` section the way clang does it (``.incbin`` in an assembly file)."""
    fatbin_digest = None if fatbin is None else hashlib.sha256(fatbin).hexdigest()
    key = (source, soname, libs, rpath, fatbin_digest, cplusplus)
    if key in _BUILT:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(_BUILT[key])
        out.chmod(0o755)
        return out
    work = out.parent / (out.name + ".build")
    work.mkdir(parents=True, exist_ok=True)
    src = work / ("lib.cpp" if cplusplus else "lib.c")
    src.write_text(source)
    inputs = [str(src)]
    if fatbin is not None:
        blob = work / "fatbin.bin"
        blob.write_bytes(fatbin)
        asm = work / "fatbin.s"
        asm.write_text(f'.section .hip_fatbin,"a",@progbits\n.p2align 12\n.incbin "{blob}"\n')
        inputs.append(str(asm))
    cmd = ["g++" if cplusplus else "gcc", "-shared", "-fPIC", "-O1", "-o", str(out), *inputs]
    if soname:
        cmd.append(f"-Wl,-soname,{soname}")
    if rpath:
        cmd += ["-Wl,--disable-new-dtags" if rpath.startswith("rpath:") else "-Wl,--enable-new-dtags"]
        cmd.append(f"-Wl,-rpath,{rpath.removeprefix('rpath:')}")
    cmd += [f"-l{lib}" for lib in libs]
    subprocess.run(cmd, check=True, capture_output=True)
    _BUILT[key] = out.read_bytes()
    return out
