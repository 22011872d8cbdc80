"""Issue 38, case 8, at build time: host code compiled with ``-march=native`` (AVX-512 on a build runner)
dies with SIGILL on users' older CPUs, and the gate's ``x86-isa`` rule cannot see it (such builds write
no ISA note). The build's compiler launcher now refuses the flag in the real HIP extension's compile
(the reference recipe, its ``.hip`` sources given ``-march=native`` through hipbuild's HIPFLAGS),
naming the flag, the file and the command; with the recipe's ``host_isa: {rewrite: true}`` it is
rewritten to the recipe's level and the build says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.docker.test_build_e2e import JOB, ROOT, _build, _recipe

pytestmark = pytest.mark.docker


def test_march_native_is_refused_naming_the_flag_and_the_file(tmp_path: Path, debian_rocm_image: Any) -> None:
    recipe = _recipe(tmp_path, ROOT / "csrc", env={"HIP_PLATFORM": "amd", "HIPFLAGS": "-march=native"})
    proc = _build(recipe, tmp_path)
    log = (tmp_path / "logs" / f"{JOB}.log").read_text(errors="replace")
    assert proc.returncode == 9, proc.stdout + proc.stderr
    assert "buildkit: host ISA: refused -march=native in the compile of" in log
    assert "src/gemm.hip" in log or "src/rowsum.hip" in log or "src/hip_runtime_info.hip" in log
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
    assert len(list((tmp_path / "dist").glob("*/*.whl"))) == 1


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


def test_with_host_isa_every_host_compile_is_held(tmp_path: Path, debian_rocm_image: Any) -> None:
    """A plain setuptools C extension: its compile runs the build's gcc (no HIP, no CMake), which the
    host compilers' wrappers of a host_isa build route through the launcher, so CFLAGS=-march=native
    is refused there too, naming src/cdemo.c."""
    source = tmp_path / "cdemo"
    for name, text in C_PROJECT.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    recipe = _recipe(
        tmp_path,
        source,
        env={"HIP_PLATFORM": "amd", "CFLAGS": "-march=native"},
        host_isa={"level": "x86-64-v2"},
        checks={},  # the reference's tuned CSVs are not in this project
    )
    proc = _build(recipe, tmp_path)
    log_path = tmp_path / "logs" / f"{JOB}.log"
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    assert proc.returncode == 9, proc.stdout + proc.stderr + log[-3000:]
    assert "buildkit: host ISA: refused -march=native in the compile of src/cdemo.c" in log, log[-3000:]
