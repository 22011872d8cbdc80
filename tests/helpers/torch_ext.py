"""Real torch wheels (pinned, sha256-verified, cached like the corpus: tests/corpus/fetch.py) and a real
torch extension built here against one of them, for the ``torch-abi`` rule's tests.

The extension (tests/data/torchabi/torchabi_demo.cpp) is compiled with the host's g++ against torch
2.13.0+cpu's own headers and libraries (extracted from the wheel into a temporary folder: only the
test subject's build does that, the rule streams the wheel). Three objects are compiled (each
~10-20 s on 2 cores) and linked into four subjects:

* ``base``: c10::Device, TORCH_CHECK, at::add/at::mul, linked with libc10 and libtorch_cpu;
* ``abi0``: the same source with ``-D_GLIBCXX_USE_CXX11_ABI=0`` (torch 2.13's wheels use the CXX11 ABI);
* ``old_api``: also at::qr (removed in torch 2.14) and at::toDLPackNonOwning (a parameter added in 2.14);
* ``unlinked``: ``base``'s object linked with libc10 only (its at:: ops live in libtorch_cpu).
"""

from __future__ import annotations

import concurrent.futures
import shutil
import subprocess
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.corpus.fetch import CorpusWheel, FetchError, fetch
from tests.helpers.wheel_zip import write_wheel

SOURCE = Path(__file__).resolve().parents[1] / "data" / "torchabi" / "torchabi_demo.cpp"

TORCH_2_13_CPU = CorpusWheel(
    name="torch",
    version="2.13.0+cpu",
    filename="torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
    sha256="6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b",
    size=191794682,
)
TORCH_2_14_1 = CorpusWheel(  # a CUDA 13.0 build (torch.version: 2.14.1+cu130), ~530 MiB
    name="torch",
    version="2.14.1",
    filename="torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl",
    sha256="305a61f61f35f128579f299c5bd33d475f6a01c6307336139632e30856c4854d",
    size=554581699,
)
MEMBER = "torchabi_demo/_C.cpython-311-x86_64-linux-gnu.so"


def torch_wheel(wheel: CorpusWheel) -> Path:
    """The pinned torch wheel from the corpus cache (fetched with pip once, sha256-verified), or a
    skip saying why it cannot be had."""
    try:
        return fetch(wheel)
    except FetchError as exc:
        pytest.skip(f"{wheel.filename} cannot be had here: {exc}")


@dataclass(frozen=True)
class Subjects:
    torch: Path  # the torch 2.13.0+cpu wheel they were built against
    base: Path
    abi0: Path
    old_api: Path
    unlinked: Path


def _extract(torch: Path, into: Path) -> Path:
    """torch/include and the two libraries the extension links against."""
    with zipfile.ZipFile(torch) as zf:
        wanted = [
            n
            for n in zf.namelist()
            if n.startswith("torch/include/") or n in ("torch/lib/libc10.so", "torch/lib/libtorch_cpu.so")
        ]
        zf.extractall(into, members=wanted)
    return into / "torch"


def _compile(out: Path, torch_dir: Path, *defines: str) -> Path:
    python_include = sysconfig.get_paths()["include"]
    cmd = [
        "g++", "-std=c++17", "-O1", "-fPIC", "-w", "-c", str(SOURCE), "-o", str(out),
        f"-I{torch_dir / 'include'}", f"-I{python_include}", *defines,
    ]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


def _link(out: Path, obj: Path, torch_dir: Path, libs: tuple[str, ...]) -> Path:
    cmd = ["g++", "-shared", "-o", str(out), str(obj), f"-L{torch_dir / 'lib'}", "-Wl,--no-as-needed"]
    subprocess.run([*cmd, *(f"-l{lib}" for lib in libs)], check=True, capture_output=True, text=True)
    return out


def _wheel(folder: Path, version: str, library: Path) -> Path:
    path = folder / f"torchabi_demo-{version}-cp311-cp311-linux_x86_64.whl"
    members = {MEMBER: library.read_bytes(), "torchabi_demo/__init__.py": b"from torchabi_demo._C import *\n"}
    return write_wheel(path, members, requires=["torch==2.13.*"])


def build_subjects(work: Path) -> Subjects:
    """Build the four test wheels in ``work`` (see the module docstring)."""
    if shutil.which("g++") is None:
        pytest.skip("no g++ on this machine to build the torch extension")
    torch = torch_wheel(TORCH_2_13_CPU)
    torch_dir = _extract(torch, work / "torch-2.13")
    jobs = {
        "base": (),
        "abi0": ("-D_GLIBCXX_USE_CXX11_ABI=0",),
        "old_api": ("-DTORCHABI_DEMO_OLD_API",),
    }
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {k: pool.submit(_compile, work / f"{k}.o", torch_dir, *d) for k, d in jobs.items()}
        objects = {k: f.result() for k, f in futures.items()}
    both = ("c10", "torch_cpu")
    wheels = work / "wheels"
    wheels.mkdir()
    built = {
        "base": _wheel(wheels, "1.0", _link(work / "base.so", objects["base"], torch_dir, both)),
        "abi0": _wheel(wheels, "1.0+abi0", _link(work / "abi0.so", objects["abi0"], torch_dir, both)),
        "old_api": _wheel(wheels, "1.1", _link(work / "old_api.so", objects["old_api"], torch_dir, both)),
        "unlinked": _wheel(
            wheels, "1.0+c10only", _link(work / "unlinked.so", objects["base"], torch_dir, ("c10",))
        ),
    }
    shutil.rmtree(torch_dir.parent)
    return Subjects(torch=torch, **built)
