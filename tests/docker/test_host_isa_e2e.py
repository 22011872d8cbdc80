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
