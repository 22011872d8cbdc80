"""ROCm 7.2 and 6.4 from Debian (issue 25), before any container: the debian-sid-rocm profile's data
as the plan and the build use it -- a toolchain per release, gfx950 withheld for 6.4 with its reason,
the library GPU targets a recipe's packages bring, the glibc the image and the policy cannot meet, the
sysroot's environment for every compiler, and the repair fallback that keeps an unrepairable wheel."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

import pytest

from buildkit import rocm as rocm_data
from buildkit.building import ccache, cibw
from buildkit.errors import RecipeError
from buildkit.plan.expansion import expand
from buildkit.plan.models import Plan
from buildkit.recipe import parse_recipe
from buildkit.records import to_data

ROOT = Path(__file__).resolve().parents[2]

SID = """\
name: demo
source: {path: ../csrc}
version: {base: "1.0", local: "rocm{rocm}"}
python: ["3.13", "3.14"]
rocm: ["6.4", "7.2"]
archs: {list: [gfx90a, gfx942, gfx950]}
manylinux: {policy: manylinux_2_31, sysroot: glibc2.31}
repair: {exclude: {sets: [rocm]}}
image: debian-sid-rocm
"""


def _plan(text: str, tmp_path: Path) -> Plan:
    return expand(parse_recipe(text, path=tmp_path / "r.yaml"), env={}, enumerator=lambda: [])


def test_each_release_builds_with_its_own_toolchain_and_archs(tmp_path: Path) -> None:
    plan = _plan(SID, tmp_path)
    by_id = {j.id: j for j in plan.jobs}
    assert sorted(by_id) == ["cp313-rocm6.4", "cp313-rocm7.2", "cp314-rocm6.4", "cp314-rocm7.2"]
    assert by_id["cp313-rocm7.2"].toolchain == "debian-experimental"
    assert by_id["cp313-rocm6.4"].toolchain == "debian-sid"
    assert [str(a) for a in by_id["cp313-rocm7.2"].archs.kept] == ["gfx90a", "gfx942", "gfx950"]
    assert [str(a) for a in by_id["cp313-rocm6.4"].archs.kept] == ["gfx90a", "gfx942"]
    dropped = [n for n in plan.notes if "gfx950: dropped" in n]
    assert dropped and "withheld by toolchain debian-sid (ROCm 6.4)" in dropped[0]
    assert "AMD supports gfx950 (MI350) from ROCm 7.0" in dropped[0]
    assert all(j.sysroot == "glibc2.31" for j in plan.jobs)
    assert to_data(plan.jobs[0])["sysroot"] == "glibc2.31"


def test_the_toolchain_data_is_measured_and_consistent() -> None:
    exp, sid = rocm_data.get_toolchain("debian-experimental"), rocm_data.get_toolchain("debian-sid")
    assert (
        exp.sonames["libamdhip64"] == "libamdhip64.so.7" and sid.sonames["libamdhip64"] == "libamdhip64.so.6"
    )
    assert exp.sonames["librocblas"] == "librocblas.so.5" and sid.sonames["librocblas"] == "librocblas.so.4"
    assert exp.sonames["libhipblas"] == "libhipblas.so.3" and sid.sonames["libhipblas"] == "libhipblas.so.2"
    assert "gfx950" in exp.archs and "gfx950" not in sid.archs and "gfx950" in sid.withheld
    assert "gfx942" not in exp.library_targets["libhipblaslt"]  # Debian's hipBLASLt 7.2.4
    assert "gfx942" not in sid.library_targets["librocblas"]  # Debian's rocBLAS 6.4.4


def test_a_target_a_library_of_the_recipe_lacks_is_noted(tmp_path: Path) -> None:
    """Debian's libhipblaslt1 (7.2.4) carries no gfx942/gfx950 kernels: a recipe that installs its -dev
    package and builds for them is told so, naming the library and its targets."""
    text = SID.replace(
        "image: debian-sid-rocm", "image: {profile: debian-sid-rocm, packages: [libhipblaslt-dev]}"
    )
    text = text.replace('rocm: ["6.4", "7.2"]', 'rocm: ["7.2"]')
    notes = _plan(text, tmp_path).notes
    lacking = [n for n in notes if "libhipblaslt (libhipblaslt-dev) carries no kernels" in n]
    assert [n.split(" carries no kernels for ")[1].split(" ")[0] for n in lacking] == ["gfx942", "gfx950"]
    assert "(its GPU targets: gfx908, gfx90a," in lacking[0]
    assert not [n for n in _plan(SID, tmp_path).notes if "carries no kernels" in n]


def test_plan_refuses_a_glibc_the_policy_cannot_meet(tmp_path: Path) -> None:
    """Without the sysroot, sid's glibc 2.43 is above manylinux_2_31's: refused at plan with the
    sysroot that fits named (the newest one old enough: glibc2.31 for 2_31, glibc2.28 for 2_28); with
    glibc2.31, a policy below its glibc (manylinux_2_28) is refused too, naming glibc2.28; no sysroot
    is as old as manylinux_2_17's glibc 2.17, which the hint says."""
    with pytest.raises(RecipeError) as plain:
        _plan(SID.replace(", sysroot: glibc2.31", ""), tmp_path)
    assert "image debian-sid-rocm builds against glibc 2.43; a manylinux_2_31 wheel" in str(plain.value)
    assert "set manylinux.sysroot: glibc2.31" in str(plain.value)
    with pytest.raises(RecipeError) as plain28:
        _plan(SID.replace(", sysroot: glibc2.31", "").replace("manylinux_2_31", "manylinux_2_28"), tmp_path)
    assert "set manylinux.sysroot: glibc2.28" in str(plain28.value)
    with pytest.raises(RecipeError) as old:
        _plan(SID.replace("manylinux_2_31", "manylinux_2_28"), tmp_path)
    assert "the sysroot glibc2.31 of image debian-sid-rocm builds against glibc 2.31" in str(old.value)
    assert "set manylinux.sysroot: glibc2.28" in str(old.value)
    with pytest.raises(RecipeError) as older:
        _plan(SID.replace("manylinux_2_31", "manylinux_2_17"), tmp_path)
    assert "no sysroot of the image is as old as glibc 2.17" in str(older.value)
    assert _plan(SID, tmp_path).jobs
    at_2_28 = SID.replace("manylinux_2_31, sysroot: glibc2.31", "manylinux_2_28, sysroot: glibc2.28")
    assert _plan(at_2_28, tmp_path).jobs


def test_a_sysroot_the_profile_lacks_is_a_recipe_error(tmp_path: Path) -> None:
    missing = r"image profile debian-sid-rocm has no sysroot 'glibc2\.17'"
    with pytest.raises(RecipeError, match=missing) as info:
        parse_recipe(SID.replace("sysroot: glibc2.31", "sysroot: glibc2.17"), path=tmp_path / "r.yaml")
    assert (info.value.line, info.value.column) == (7, 46)  # the value glibc2.17
    with pytest.raises(RecipeError, match="needs an image profile of rocm-buildkit"):
        parse_recipe(
            SID.replace("image: debian-sid-rocm", "image: {ref: 'example/builder:1'}"),
            path=tmp_path / "r.yaml",
        )


@pytest.mark.parametrize("sysroot", ["glibc2.31", "glibc2.28"])
def test_the_sysroot_reaches_every_compiler(tmp_path: Path, sysroot: str) -> None:
    policy = {"glibc2.31": "manylinux_2_31", "glibc2.28": "manylinux_2_28"}[sysroot]
    text = SID.replace("manylinux_2_31, sysroot: glibc2.31", f"{policy}, sysroot: {sysroot}")
    job = next(j for j in _plan(text, tmp_path).jobs if j.id == "cp313-rocm7.2")
    settings = cibw.CibwSettings(
        image="rocm-buildkit/debian-sid-rocm:x", source_date_epoch=1, ccache_volume="v", with_ca_bundle=False
    )
    env = cibw.container_environment(job, settings)
    root = f"/opt/buildkit/sysroots/{sysroot}"
    assert job.platform_tag == f"{policy}_x86_64"
    # the compiler cache's key holds the sysroot: the two sysroots never share a cached object
    assert cibw.cache_key(job, "img").endswith("\0" + sysroot)
    assert env["ROCM_PATH"] == "/usr"  # the profile's rocm_prefix: Debian's layout
    # the host compilers' wrappers (the launcher's host ISA) and the compiler cache's masquerade first,
    # then the sysroot's wrappers, then the image's compilers
    assert env["PATH"] == f"{ccache.HOST_CC_WRAPPERS}:/usr/lib/ccache:{root}/bin:$PATH"
    flags = shlex.split(env["HIPCC_COMPILE_FLAGS_APPEND"])
    assert (
        f"--sysroot={root}" in flags and f"--gcc-install-dir={root}/usr/lib/gcc/x86_64-linux-gnu/10" in flags
    )
    assert flags[-2:] == ["-idirafter", "/usr/include"] and "--rocm-path=/usr" in flags
    assert env["HIPCC_LINK_FLAGS_APPEND"].endswith("-L/opt/buildkit/rocm-lib")
    assert env["HIP_INCLUDE_PATH"] == f"{root}/usr/include"
    assert env["CMAKE_TOOLCHAIN_FILE"] == f"{root}/toolchain.cmake"
    rendered = cibw.render_environment(env)
    # $PATH expands in the container
    assert f'PATH="{ccache.HOST_CC_WRAPPERS}:/usr/lib/ccache:{root}/bin:$PATH"' in rendered


def test_without_a_sysroot_no_compiler_is_redirected(tmp_path: Path) -> None:
    text = SID.replace(", sysroot: glibc2.31", "").replace("manylinux_2_31", "manylinux_2_41")
    with pytest.raises(RecipeError, match=r"builds against glibc 2\.43"):  # refused at plan: no policy fits
        _plan(text, tmp_path)
    job = next(j for j in _plan(SID, tmp_path).jobs if j.rocm == "7.2")
    settings = cibw.CibwSettings(image="i", source_date_epoch=1, ccache_volume=None, with_ca_bundle=False)
    env = cibw.container_environment(dataclasses.replace(job, sysroot=None), settings)
    assert not {"HIPCC_COMPILE_FLAGS_APPEND", "CMAKE_TOOLCHAIN_FILE", "BUILDKIT_SYSROOT"} & set(env)
    assert env["PATH"] == f"{ccache.HOST_CC_WRAPPERS}:$PATH"  # only the host compilers' wrappers


def test_repair_keeps_a_wheel_no_policy_fits_for_the_gate(tmp_path: Path) -> None:
    """auditwheel refuses the policy, then every policy (symbols of glibc 2.43): the unrepaired wheel
    is copied on for the gate to refuse and the build to keep in quarantine, never dropped."""
    job = _plan(SID, tmp_path).jobs[0]
    command = cibw.repair_command(job)
    first, rest = command.split(" || ", 1)
    assert first.startswith("{ auditwheel repair --plat manylinux_2_31_x86_64")
    assert "auditwheel repair --plat auto" in rest and "cp {wheel} {dest_dir}/" in rest
    assert "the unrepaired wheel goes to the gate" in rest


def test_offload_compress_and_the_sysroot_both_reach_hipcc(tmp_path: Path) -> None:
    """``offload_compress: true`` appends --offload-compress to the hipcc flag variables the sysroot
    also sets: the build gets both, the sysroot's first."""
    job = next(j for j in _plan(SID + "offload_compress: true\n", tmp_path).jobs if j.rocm == "7.2")
    settings = cibw.CibwSettings(image="i", source_date_epoch=1, ccache_volume=None, with_ca_bundle=False)
    env = cibw.container_environment(job, settings)
    for var in ("HIPCC_COMPILE_FLAGS_APPEND", "HIPCC_LINK_FLAGS_APPEND"):
        flags = env[var].split()
        assert flags[0] == "--sysroot=/opt/buildkit/sysroots/glibc2.31" and flags[-1] == "--offload-compress"


@pytest.mark.parametrize(
    ("cmake_args", "expected"),
    [
        ("-DGGML_HIP=ON -DCMAKE_BUILD_TYPE=MinSizeRel", "MinSizeRel"),
        ("-DCMAKE_BUILD_TYPE:STRING=Debug -DX=1 -DCMAKE_BUILD_TYPE=RelWithDebInfo", "RelWithDebInfo"),
        ("-DGGML_HIP=ON", None),
    ],
)
def test_a_build_type_in_cmake_args_is_translated_for_scikit_build_core(
    tmp_path: Path, cmake_args: str, expected: str | None
) -> None:
    """scikit-build-core ignores -DCMAKE_BUILD_TYPE in CMAKE_ARGS ("Unsupported CMAKE_ARGS ignored",
    a line of the job log only: a MinSizeRel request became a Release build): the plan sets its
    SKBUILD_CMAKE_BUILD_TYPE too and says so; CMAKE_ARGS stays for the backends that read it; a
    recipe's own SKBUILD_CMAKE_BUILD_TYPE is left alone."""
    text = SID.replace(
        "image: debian-sid-rocm", f"image: debian-sid-rocm\nenv: {{CMAKE_ARGS: '{cmake_args}'}}"
    )
    plan = _plan(text, tmp_path)
    job = plan.jobs[0]
    assert job.env.get("SKBUILD_CMAKE_BUILD_TYPE") == expected
    assert cmake_args in job.env["CMAKE_ARGS"]
    noted = [n for n in plan.notes if "which scikit-build-core ignores" in n]
    assert bool(noted) is (expected is not None)
    if expected:
        own = text.replace("env: {", "env: {SKBUILD_CMAKE_BUILD_TYPE: Debug, ")
        assert _plan(own, tmp_path).jobs[0].env["SKBUILD_CMAKE_BUILD_TYPE"] == "Debug"
