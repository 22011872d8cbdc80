"""Issue 38, case 8, at build time: host code compiled with ``-march=native`` (AVX-512 on a build runner)
dies with SIGILL on users' older CPUs, and the gate's ``x86-isa`` rule cannot see it (such builds write
no ISA note). The build's compiler launcher refuses the flag in the real HIP extension's compile (the
reference recipe, its ``.hip`` sources given ``-march=native`` through hipbuild's HIPFLAGS), naming
the flag, the file and the command, with its own exit code (19); with the recipe's ``host_isa:
{rewrite: true}`` it is rewritten to the recipe's level, the build says so, the manifest records it
and the wheel's host code, disassembled (``check --isa-strict``), holds nothing above that level.
Every build holds the policy's baseline (x86-64) without ``host_isa``, in every host compile.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from buildkit import manifest
from buildkit.inspect import inspect_wheel
from buildkit.inspect.isa import host_isa_of
from tests.docker.test_build_e2e import JOB, ROOT, _build, _buildkit, _recipe

pytestmark = pytest.mark.docker


def test_march_native_is_refused_naming_the_flag_and_the_file(tmp_path: Path, debian_rocm_image: Any) -> None:
    recipe = _recipe(tmp_path, ROOT / "csrc", env={"HIP_PLATFORM": "amd", "HIPFLAGS": "-march=native"})
    proc = _build(recipe, tmp_path)
    log = (tmp_path / "logs" / f"{JOB}.log").read_text(errors="replace")
    assert proc.returncode == 19, proc.stdout + proc.stderr  # HostIsaRefused, not any build failure
    assert "buildkit: host ISA: refused -march=native in the compile of" in log
    assert "src/gemm.hip" in log or "src/rowsum.hip" in log or "src/hip_runtime_info.hip" in log
    assert "refused -march=native in the compile of" in proc.stdout + proc.stderr  # the job's failure
    assert not list((tmp_path / "dist").glob("*/*.whl"))


def test_with_the_recipes_permission_it_is_rewritten_to_the_level(
    tmp_path: Path, debian_rocm_image: Any
) -> None:
    recipe = _recipe(
        tmp_path,
        ROOT / "csrc",
        env={"HIP_PLATFORM": "amd", "HIPFLAGS": "-march=native"},
        host_isa={"level": "x86-64-v2", "rewrite": True},
    )
    proc = _build(recipe, tmp_path)
    log = (tmp_path / "logs" / f"{JOB}.log").read_text(errors="replace")
    assert proc.returncode == 0, proc.stdout + proc.stderr + log[-4000:]
    assert "buildkit: host ISA: rewrote -march=native to -march=x86-64-v2 in the compile of" in log
    (wheel,) = (tmp_path / "dist").glob("*/*.whl")
    record = manifest.read(wheel)["host_isa"]
    assert record["level"] == "x86-64-v2"
    assert "-march=native" in record["flags_seen"] and record["allowed"] == []
    assert record["rewritten"] == ["-march=native -> -march=x86-64-v2"]
    # the static report: every host ELF of the wheel disassembled, none above the recipe's level
    with zipfile.ZipFile(wheel) as zf:
        scan = host_isa_of(zf, inspect_wheel(wheel), True)  # type: ignore[arg-type]
    assert scan and any(e.member.endswith(".so") for e in scan)
    assert max(e.level for e in scan) <= 2, [(e.member, e.level_name) for e in scan]
    check = _buildkit(
        "check", str(wheel), "--recipe", str(recipe), "--job", JOB, "--isa-strict", cwd=tmp_path
    )
    assert check.returncode == 0 and "host-isa" not in check.stdout, check.stdout + check.stderr


C_PROJECT = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n',
    "setup.py": (
        "import os\nfrom setuptools import Extension, setup\n"
        "setup(name='buildkit-refkernels', version=os.environ.get('BUILDKIT_VERSION', '0.1.0'),\n"
        "      ext_modules=[Extension('cdemo._c', ['src/cdemo.c'])], packages=['cdemo'])\n"
    ),
    "cdemo/__init__.py": "",
    "src/cdemo.c": (
        '#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "_c", 0, -1, 0};\n'
        "PyMODINIT_FUNC PyInit__c(void) { return PyModule_Create(&m); }\n"
    ),
}


def test_without_host_isa_every_host_compile_holds_the_baseline(
    tmp_path: Path, debian_rocm_image: Any
) -> None:
    """A plain setuptools C extension whose recipe has no host_isa: its compile runs the build's gcc (no
    HIP, no CMake), which every build routes through the launcher holding the policy's baseline
    (BUILDKIT_HOST_ISA=x86-64), so CFLAGS=-mavx2 is refused there, naming src/cdemo.c."""
    source = tmp_path / "cdemo"
    for name, text in C_PROJECT.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    recipe = _recipe(
        tmp_path,
        source,
        env={"HIP_PLATFORM": "amd", "CFLAGS": "-mavx2"},
        checks={},  # the reference's tuned CSVs are not in this project
    )
    proc = _build(recipe, tmp_path)
    log_path = tmp_path / "logs" / f"{JOB}.log"
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    assert proc.returncode == 19, proc.stdout + proc.stderr + log[-3000:]
    assert "buildkit: host ISA: refused -mavx2 in the compile of src/cdemo.c" in log, log[-3000:]
    assert "more than the host ISA the build holds, x86-64 (the recipe's host_isa.level; without one" in log
