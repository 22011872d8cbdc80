"""The libtorch stable ABI on real artifacts (issue 40): the table of shim functions is what the torch
2.13.0+cpu and 2.14.1 wheels give (``python -m buildkit.compare.torch_shim``), torch's stable-only
flags make a non-stable include a compile error, and the reference's stable operator
(csrc/refops/src/ops_stable.cpp, compiled here by g++ against torch 2.13's headers, its HIP launcher a
C stub: no hipcc on this host) passes the ``torch-stable-abi`` rule for the torch it targets and is
refused for an older one, while the pinned operator (src/ops.cpp) is refused for its C++ symbols."""

from __future__ import annotations

import json
import subprocess
import sysconfig
import zipfile
from pathlib import Path

import pytest

from buildkit.compare.torch_exports import load_torch_exports
from buildkit.compare.torch_shim import build_table, render
from buildkit.gate.config import GateConfig
from buildkit.gate.torchshim import TABLE_PATH
from buildkit.judge import judge_wheels
from tests.helpers.shared_library import have_gcc
from tests.helpers.torch_ext import TORCH_2_13_CPU, TORCH_2_14_1, torch_wheel
from tests.helpers.wheel_zip import write_wheel

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not have_gcc(), reason="needs g++")]

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "csrc" / "refops" / "src"
MEMBER = "refops/_C.cpython-311-x86_64-linux-gnu.so"
STUB = """#include <stdint.h>
int refops_hip_rms_norm_f32(const float *x, const float *w, float *o, int64_t r, int64_t c, float e, int d) {
    return 100;
}
const char *refops_hip_error_string(int code) { return "no HIP here"; }
"""


def _flags(major: int, minor: int) -> list[str]:
    return ["-DTORCH_STABLE_ONLY", f"-DTORCH_TARGET_VERSION=0x{major:02x}{minor:02x}000000000000"]


@pytest.fixture(scope="module")
def torch_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheel = torch_wheel(TORCH_2_13_CPU)
    into = tmp_path_factory.mktemp("torch213")
    with zipfile.ZipFile(wheel) as zf:
        names = [
            n for n in zf.namelist() if n.startswith("torch/include/") or n == "torch/lib/libtorch_cpu.so"
        ]
        zf.extractall(into, members=names)
    return into / "torch"


def _compile(source: Path, out: Path, torch_dir: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        "g++", "-std=c++17", "-O1", "-fPIC", "-c", str(source), "-o", str(out), f"-I{SRC}",
        f"-I{torch_dir / 'include'}", f"-I{torch_dir / 'include' / 'torch' / 'csrc' / 'api' / 'include'}",
        f"-I{sysconfig.get_paths()['include']}", *flags,
    ]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def _stable_wheel(tmp: Path, torch_dir: Path, major: int, minor: int) -> Path:
    obj, stub = tmp / f"ops_stable_{minor}.o", tmp / "stub.o"
    done = _compile(SRC / "ops_stable.cpp", obj, torch_dir, *_flags(major, minor))
    assert done.returncode == 0, done.stderr[-3000:]
    (tmp / "stub.c").write_text(STUB)
    subprocess.run(["gcc", "-fPIC", "-c", str(tmp / "stub.c"), "-o", str(stub)], check=True)
    lib = tmp / f"_C_{minor}.so"
    link = ["g++", "-shared", "-o", str(lib), str(obj), str(stub), f"-L{torch_dir / 'lib'}", "-ltorch_cpu"]
    subprocess.run(link, check=True)
    path = tmp / f"{minor}" / "buildkit_refops-0.1.0-cp311-cp311-linux_x86_64.whl"
    path.parent.mkdir()
    return write_wheel(path, {MEMBER: lib.read_bytes()}, requires=[f"torch>={major}.{minor}"])


def _gate(wheel: Path, lowest: str, torch: Path | None = None):  # type: ignore[no-untyped-def]
    config = GateConfig(
        torch_stable=lowest, exclude_globs=("libtorch*.so*",), torch_abi=None if torch is None else str(torch)
    )
    exports = None if torch is None else load_torch_exports(str(torch))
    (verdict,), failures = judge_wheels([wheel], config, torch=exports)
    assert not failures
    return verdict


def test_the_stored_table_is_what_the_torch_wheels_give() -> None:
    table = build_table([torch_wheel(TORCH_2_14_1), torch_wheel(TORCH_2_13_CPU)])  # any order
    assert render(table) == TABLE_PATH.read_text(encoding="utf-8")
    assert json.loads(render(table))["functions"]["torch_exception_get_what"] == "2.13"


def test_the_stable_only_flags_make_a_pinned_include_a_compile_error(tmp_path: Path, torch_dir: Path) -> None:
    done = _compile(SRC / "ops.cpp", tmp_path / "ops.o", torch_dir, *_flags(2, 13))
    assert done.returncode != 0
    assert (
        "This file should not be included when either TORCH_STABLE_ONLY or TORCH_TARGET_VERSION"
        in done.stderr
    )
    assert _compile(SRC / "ops.cpp", tmp_path / "ops.o", torch_dir).returncode == 0  # pinned: it builds


def test_the_stable_operator_serves_the_torch_it_targets_and_later(tmp_path: Path, torch_dir: Path) -> None:
    at_213 = _stable_wheel(tmp_path, torch_dir, 2, 13)
    v = _gate(at_213, "2.13", torch_wheel(TORCH_2_13_CPU))  # torch-abi against the torch it was built with
    assert v.passed, [f.message for f in v.errors]
    assert v.torch_stable is not None and v.torch_stable.serves == "torch>=2.13"
    assert v.torch_stable.newest is not None and v.torch_stable.newest[1] == "2.13"
    assert not any(n.name.startswith("_Z") for n, _ in v.torch_stable.shim)
    # the same build declared from 2.10: its headers targeted 2.13 and use 2.13's shim functions
    older = _gate(at_213, "2.10")
    newer = {f.symbol for f in older.errors if f.rule == "torch-stable-abi"}
    assert "torch_exception_get_what" in newer and all(f.startswith("torch_") for f in newer)
    # targeting 2.10 (TORCH_TARGET_VERSION): only 2.10's functions, the claim holds from 2.10, and every
    # symbol is exported by torch 2.14.1 too (torch-abi against the later torch)
    at_210 = _stable_wheel(tmp_path, torch_dir, 2, 10)
    v210 = _gate(at_210, "2.10", torch_wheel(TORCH_2_14_1))
    assert v210.passed, [f.message for f in v210.errors]
    assert v210.torch_stable is not None and v210.torch_stable.newest is not None
    assert v210.torch_stable.newest[1] == "2.10"


def test_the_pinned_operator_is_refused_for_its_cxx_symbols(tmp_path: Path, torch_dir: Path) -> None:
    obj = tmp_path / "ops.o"
    assert _compile(SRC / "ops.cpp", obj, torch_dir).returncode == 0
    lib = tmp_path / "_C.so"
    subprocess.run(
        ["g++", "-shared", "-o", str(lib), str(obj), f"-L{torch_dir / 'lib'}", "-ltorch_cpu"], check=True
    )
    wheel = write_wheel(
        tmp_path / "buildkit_refops-0.1.0-cp311-cp311-linux_x86_64.whl",
        {MEMBER: lib.read_bytes()},
        requires=["torch>=2.13"],
    )
    v = _gate(wheel, "2.13")
    refused = [f for f in v.errors if f.rule == "torch-stable-abi"]
    assert refused and all(f.symbol and f.symbol.startswith("_Z") for f in refused)
    assert any(f"{MEMBER} needs c10::" in f.message for f in refused)
