"""Real AMDGPU code objects and offload bundles from LLVM (Debian's clang-19 / clang-tools-19), when
installed: ``apt-get install -y clang-19 lld-19 clang-tools-19``."""

from __future__ import annotations

import subprocess
from pathlib import Path

LLVM_BIN = Path("/usr/lib/llvm-19/bin")


def have_llvm() -> bool:
    return all((LLVM_BIN / tool).exists() for tool in ("clang", "ld.lld", "clang-offload-bundler"))


def code_object(work: Path, target: str) -> bytes:
    """Compile a one-kernel OpenCL-free C file for ``target`` (``gfx90a:xnack-``) and link a code object."""
    work.mkdir(parents=True, exist_ok=True)
    src = work / "k.c"
    src.write_text("void k(float *x) { x[0] = 1.0f; }\n")
    stem = target.replace(":", "_").replace("+", "p").replace("-", "m")
    obj, out = work / f"{stem}.o", work / f"{stem}.co"
    clang = [str(LLVM_BIN / "clang"), "--target=amdgcn-amd-amdhsa", f"-mcpu={target}", "-nogpulib", "-O1"]
    subprocess.run([*clang, "-c", str(src), "-o", str(obj)], check=True, capture_output=True)
    subprocess.run(
        [str(LLVM_BIN / "ld.lld"), "-shared", str(obj), "-o", str(out)], check=True, capture_output=True
    )
    return out.read_bytes()


def bundle(work: Path, targets: list[str], *, compress: bool = False) -> bytes:
    """``clang-offload-bundler -type=o`` over a host placeholder and one code object per target."""
    work.mkdir(parents=True, exist_ok=True)
    host = work / "host.o"
    host.write_bytes(b"")
    inputs = [str(host)]
    for target in targets:
        path = work / f"co-{len(inputs)}.co"
        path.write_bytes(code_object(work, target))
        inputs.append(str(path))
    ids = ["host-x86_64-unknown-linux-gnu-"] + [f"hipv4-amdgcn-amd-amdhsa--{t}" for t in targets]
    out = work / ("bundle.ccob" if compress else "bundle.bin")
    cmd = [str(LLVM_BIN / "clang-offload-bundler"), "-type=o", f"-targets={','.join(ids)}"]
    cmd += [f"-input={i}" for i in inputs] + [f"-output={out}"]
    if compress:
        cmd.append("-compress")
    subprocess.run(cmd, check=True, capture_output=True)
    return out.read_bytes()
