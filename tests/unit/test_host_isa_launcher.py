"""Issue 38, case 8: the build's compiler launcher (buildkit/building/hip_launcher.sh) holds the host CPU
baseline. Run here as the build runs it, ``hip-launcher COMPILER ARG...``, with ``echo`` as the
compiler (it prints the arguments the real compiler would get): -march=native refused in every build,
flags above the recipe's level refused, rewritten with ``rewrite``, allowed for the sources ``allow``
names; and the recipe's ``host_isa`` reaches the job's environment."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from buildkit.building.ccache import launcher_script
from buildkit.plan.expansion import expand
from buildkit.plan.models import Job
from buildkit.recipe import load_recipe
from buildkit.recipe.sections import host_isa

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    script = launcher_script()
    full = {"PATH": "/usr/bin:/bin", **env}
    return subprocess.run(
        ["sh", "-c", script, "hip-launcher", "echo", *args], capture_output=True, text=True, env=full
    )


def test_march_native_is_refused_in_every_build() -> None:
    done = _run("-c", "-O2", "-march=native", "src/gemm.hip", "-o", "gemm.o")
    assert done.returncode == 1 and done.stdout == ""
    assert "buildkit: host ISA: refused -march=native in the compile of src/gemm.hip:" in done.stderr
    assert "Command: echo -c -O2 -march=native src/gemm.hip -o gemm.o" in done.stderr
    assert _run("-c", "-mcpu=native", "a.c").returncode == 1
    assert _run("-c", "-mtune=native", "a.c").returncode == 0  # tuning adds no instruction


@pytest.mark.parametrize(
    ("flag", "level", "refused"),
    [
        ("-march=x86-64-v4", "x86-64-v2", True),
        ("-march=skylake-avx512", "x86-64-v3", True),
        ("-march=haswell", "x86-64-v2", True),
        ("-mavx512f", "x86-64-v3", True),
        ("-mavx2", "x86-64-v2", True),
        ("-mavx2", "x86-64-v3", False),
        ("-msse4.2", "x86-64-v2", False),
        ("-march=x86-64-v2", "x86-64-v2", False),
        ("-march=my-future-cpu", "x86-64-v4", True),  # unknown: cannot be held to the level
        ("-mavx512f", "", True),  # no level: the policy's baseline, x86-64 (this machine is x86_64)
        ("-march=x86-64", "", False),
        ("-mno-avx512f", "x86-64", False),
    ],
)
def test_flags_above_the_level_are_refused(flag: str, level: str, refused: bool) -> None:
    env = {"BUILDKIT_HOST_ISA": level} if level else {}
    done = _run("-c", flag, "src/k.c", **env)
    assert (done.returncode == 1) is refused, done.stderr
    if refused:
        assert (
            f"refused {flag} in the compile of src/k.c: it asks for more than the host ISA the build holds, "
            f"{level or 'x86-64'} (the recipe's host_isa.level; without one, the policy's baseline x86-64)"
            in done.stderr
        )


def test_the_default_baseline_holds_only_on_x86_64(tmp_path: Path) -> None:
    """On another machine (aarch64's -march=armv8.2-a) a silent recipe holds nothing but native."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "uname").write_text("#!/bin/sh\necho aarch64\n")
    (fake / "uname").chmod(0o755)
    path = f"{fake}:/usr/bin:/bin"
    assert _run("-c", "-march=armv8.2-a+sve", "src/k.c", PATH=path).returncode == 0
    assert _run("-c", "-march=native", "src/k.c", PATH=path).returncode == 1


def test_rewrite_and_allow() -> None:
    done = _run(
        "-c",
        "-march=native",
        "-mavx512f",
        "-O2",
        "src/a.c",
        BUILDKIT_HOST_ISA="x86-64-v2",
        BUILDKIT_HOST_ISA_REWRITE="1",
    )
    assert done.returncode == 0 and done.stdout.split() == ["-c", "-march=x86-64-v2", "-O2", "src/a.c"]
    assert "rewrote -march=native to -march=x86-64-v2 in the compile of src/a.c" in done.stderr
    assert "dropped -mavx512f from the compile of src/a.c" in done.stderr
    allowed = {"BUILDKIT_HOST_ISA": "x86-64-v2", "BUILDKIT_HOST_ISA_ALLOW": "kernels/avx512_*.c"}
    assert _run("-c", "-mavx512f", "/project/kernels/avx512_gemm.c", **allowed).returncode == 0
    assert _run("-c", "-mavx512f", "/project/src/other.c", **allowed).returncode == 1
    assert _run("-c", "-march=native", "/project/kernels/avx512_gemm.c", **allowed).returncode == 1


def _reference_text() -> str:
    """recipes/reference-trixie.yaml with its source path absolute (the copy is written elsewhere)."""
    text = (ROOT / "recipes" / "reference-trixie.yaml").read_text()
    return text.replace("path: ../csrc", f"path: {ROOT / 'csrc'}")


def test_the_recipes_host_isa_reaches_the_jobs_environment(tmp_path: Path) -> None:
    text = _reference_text()
    path = tmp_path / "r.yaml"
    path.write_text(text + "host_isa:\n  level: x86-64-v2\n  rewrite: true\n  allow: [src/avx512_*.c]\n")
    job = expand(load_recipe(path)).jobs[0]
    assert job.env["BUILDKIT_HOST_ISA"] == "x86-64-v2"
    assert (
        job.env["BUILDKIT_HOST_ISA_REWRITE"] == "1" and job.env["BUILDKIT_HOST_ISA_ALLOW"] == "src/avx512_*.c"
    )
    plain = tmp_path / "plain.yaml"
    plain.write_text(text)
    assert "BUILDKIT_HOST_ISA" not in expand(load_recipe(plain)).jobs[0].env


def test_the_host_compilers_wrappers_exec_the_launcher_on_the_real_compiler(tmp_path: Path) -> None:
    """The before_build command of a host_isa build (ccache.HOST_CC_SETUP), run here with its folder
    and the launcher's path moved under tmp_path: each compiler found on PATH gets a wrapper that
    execs the launcher on it, never on itself or (with the launcher running ccache) on the masquerade."""
    from buildkit.building import ccache

    wrappers, launcher = tmp_path / "wrappers", tmp_path / "hip-launcher"
    launcher.write_text(launcher_script())
    launcher.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gcc = bin_dir / "gcc"
    gcc.write_text('#!/bin/sh\necho "gcc $*"\n')
    gcc.chmod(0o755)
    (bin_dir / "clang++-19").write_text('#!/bin/sh\necho "clang++-19 $*"\n')
    (bin_dir / "clang++-19").chmod(0o755)
    setup = ccache.HOST_CC_SETUP.replace(ccache.HOST_CC_WRAPPERS, str(wrappers)).replace(
        ccache.HIP_LAUNCHER, str(launcher)
    )
    path = f"{wrappers}:{bin_dir}:/usr/bin:/bin"
    subprocess.run(["sh", "-c", setup], check=True, env={"PATH": path})
    assert f"exec {launcher} {gcc} " in (wrappers / "gcc").read_text()
    ran = subprocess.run(["gcc", "-c", "-O2", "a.c"], capture_output=True, text=True, env={"PATH": path})
    assert ran.returncode == 0 and ran.stdout.strip() == "gcc -c -O2 a.c"
    refused = subprocess.run(
        ["gcc", "-c", "-march=native", "src/module.c"], capture_output=True, text=True, env={"PATH": path}
    )
    assert (
        refused.returncode == 1 and "refused -march=native in the compile of src/module.c" in refused.stderr
    )
    # a versioned compiler a project names (CC=clang++-19) is wrapped too
    versioned = subprocess.run(
        ["clang++-19", "-c", "-mavx512f", "k.cc"], capture_output=True, text=True, env={"PATH": path}
    )
    assert versioned.returncode == 1 and "refused -mavx512f in the compile of k.cc" in versioned.stderr


def _container_env(job: Job, volume: str | None = None) -> dict[str, str]:
    from buildkit.building import cibw

    settings = cibw.CibwSettings(image="img", source_date_epoch=0, ccache_volume=volume, with_ca_bundle=False)
    return cibw.container_environment(job, settings)


@pytest.mark.parametrize("section", ["", "host_isa:\n  level: x86-64-v2\n"])
def test_every_build_holds_a_host_isa_through_every_route(tmp_path: Path, section: str) -> None:
    """With or without the recipe's host_isa: the level in the build's environment (the policy's baseline
    x86-64 when the recipe is silent), the host compilers' wrappers first on PATH and made first in
    before_build, CMake's C, C++ and HIP launchers (cache or not: a compiler CMake names by path,
    a sysroot's toolchain file, misses the wrappers) and hipcc's clang, all the launcher."""
    from buildkit.building import ccache

    path = tmp_path / "r.yaml"
    path.write_text(_reference_text() + section)
    job = expand(load_recipe(path)).jobs[0]
    assert ccache.HOST_CC_SETUP in ccache.setup_commands(job, cached=False)
    for volume in (None, "v"):
        env = _container_env(job, volume)
        assert env["BUILDKIT_HOST_ISA"] == ("x86-64-v2" if section else "x86-64")
        assert env["BUILDKIT_HOST_ISA_LOG"] == "/output/buildkit-host-isa.log"
        assert env["PATH"].startswith(f"{ccache.HOST_CC_WRAPPERS}:") and env["PATH"].endswith("$PATH")
        for var in (*ccache.CMAKE_LAUNCHERS, "HIP_CLANG_LAUNCHER"):
            assert env[var] == ccache.HIP_LAUNCHER, var
    assert _container_env(job, "v")["PATH"].startswith(f"{ccache.HOST_CC_WRAPPERS}:/usr/lib/ccache:")


def test_a_job_that_is_not_x86_64_holds_no_level(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(_reference_text())
    job = expand(load_recipe(path)).jobs[0]
    arm = dataclasses.replace(job, platform_tag=job.platform_tag.replace("x86_64", "aarch64"))
    assert "BUILDKIT_HOST_ISA" not in _container_env(arm)


def test_the_launcher_logs_each_isa_flag_and_what_it_did(tmp_path: Path) -> None:
    """The log (its folder made at the first line) and the manifest's host_isa read from it: small,
    sorted, each once, the same whatever the order of the compiles."""
    log = tmp_path / "output" / "buildkit-host-isa.log"
    env = {"BUILDKIT_HOST_ISA": "x86-64-v2", "BUILDKIT_HOST_ISA_LOG": str(log)}
    assert _run("-c", "-O2", "-mtune=native", "src/plain.c", **env).returncode == 0
    assert not log.exists()  # no ISA flag: nothing logged
    assert _run("-c", "-march=native", "src/gemm.hip", **env).returncode == 1
    rewrite = {**env, "BUILDKIT_HOST_ISA_REWRITE": "1"}
    for _ in range(2):
        assert _run("-c", "-march=native", "-mavx512f", "-msse4.2", "src/gemm.hip", **rewrite).returncode == 0
    allow = {**env, "BUILDKIT_HOST_ISA_ALLOW": "src/avx2_*.c"}
    assert _run("-c", "-mavx2", "src/avx2_kernel.c", **allow).returncode == 0
    lines = log.read_text().splitlines()
    assert lines == [
        "refused -march=native",
        *["rewrote -march=native -march=x86-64-v2", "dropped -mavx512f", "kept -msse4.2"] * 2,
        "allowed -mavx2",
    ]
    summary = host_isa.summary(log.read_text(), "x86-64-v2")
    assert summary == {
        "level": "x86-64-v2",
        "flags_seen": ["-march=native", "-mavx2", "-mavx512f", "-msse4.2"],
        "rewritten": ["-march=native -> -march=x86-64-v2", "-mavx512f -> (dropped)"],
        "allowed": ["-mavx2"],
    }
    assert host_isa.summary("\n".join(reversed(lines)), "x86-64-v2") == summary
    assert host_isa.summary(None, "x86-64") == {
        "level": "x86-64",
        "flags_seen": [],
        "rewritten": [],
        "allowed": [],
    }


def test_a_refusal_in_the_build_log_fails_the_build_with_its_own_code() -> None:
    """The compile step names the launcher's refusal (exit 19, a BuildFailed), and the build command exits
    with it when every failed job failed so."""
    from types import SimpleNamespace
    from typing import Any, cast

    from buildkit.building.steps import compile as compile_step
    from buildkit.building.steps.state import JobResult
    from buildkit.errors import BuildFailed, HostIsaRefused
    from buildkit.service.build import _BuildRun

    text = (
        "[2/5] /project/.buildkit/hip-launcher clang++ -c src/gemm.hip\n"
        "buildkit: host ISA: refused -march=native in the compile of src/gemm.hip: it asks for ...\n"
    )
    with pytest.raises(HostIsaRefused) as caught:
        compile_step._explain_failure(BuildFailed("cibuildwheel failed"), text, True)
    assert caught.value.exit_code == 19 and isinstance(caught.value, BuildFailed)
    assert "refused -march=native in the compile of src/gemm.hip" in str(caught.value)
    compile_step._explain_failure(
        BuildFailed("cibuildwheel failed"), "error: x.c:1: oops\n", True
    )  # no raise

    def failure(*codes: int) -> Any:
        results = [JobResult(job=f"j{i}", status="build-failed", exit_code=c) for i, c in enumerate(codes)]
        options = SimpleNamespace(log_dir="logs", refused_dir="r", out_dir="o")
        return _BuildRun(cast(Any, None), cast(Any, None), cast(Any, options), results).failure()

    assert failure(19, 19).exit_code == 19
    assert failure(19, 9).exit_code == 9
