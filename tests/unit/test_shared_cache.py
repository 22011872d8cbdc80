"""Device code once per matrix (issue 29), before any container: the jobs that differ in their Python
only share a compiler-cache volume; another ROCm release, arch list or sysroot gets its own; the
Python include folders stay in ccache's hash (the images hold every Python's headers side by side);
debian-sid-rocm's compiled hipcc is routed through wrappers the build's first hook makes."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

from buildkit.building import ccache, cibw
from buildkit.plan.expansion import expand
from buildkit.plan.models import Plan
from buildkit.recipe import parse_recipe

SID = """\
name: demo
source: {path: ../csrc}
version: {base: "1.0", local: "rocm{rocm}"}
python: ["3.13", "3.14", "3.15"]
rocm: ["6.4", "7.2"]
archs: {list: [gfx90a, gfx942, gfx950]}
manylinux: {policy: manylinux_2_31, sysroot: glibc2.31}
repair: {exclude: {sets: [rocm]}}
image: debian-sid-rocm
"""
TAG = "rocm-buildkit/debian-sid-rocm:0123456789ab"


def _plan(text: str, tmp_path: Path) -> Plan:
    return expand(parse_recipe(text, path=tmp_path / "r.yaml"), env={}, enumerator=lambda: [])


def _volumes(plan: Plan, tag: str = TAG) -> dict[str, str]:
    return {job.id: cibw.ccache_volume(job, tag) for job in plan.jobs}


def test_jobs_differing_in_their_python_only_share_one_volume(tmp_path: Path) -> None:
    volumes = _volumes(_plan(SID, tmp_path))
    assert len(volumes) == 6
    assert volumes["cp313-rocm7.2"] == volumes["cp314-rocm7.2"] == volumes["cp315-rocm7.2"]
    assert volumes["cp313-rocm6.4"] == volumes["cp314-rocm6.4"] == volumes["cp315-rocm6.4"]
    assert volumes["cp313-rocm7.2"] != volumes["cp313-rocm6.4"]  # another release, other compilers


def test_another_image_arch_list_or_sysroot_gets_its_own_volume(tmp_path: Path) -> None:
    base = _volumes(_plan(SID, tmp_path))["cp313-rocm7.2"]
    other = "rocm-buildkit/debian-sid-rocm:ba9876543210"
    assert _volumes(_plan(SID, tmp_path), other)["cp313-rocm7.2"] != base
    fewer = SID.replace("[gfx90a, gfx942, gfx950]", "[gfx90a, gfx942]")
    assert _volumes(_plan(fewer, tmp_path))["cp313-rocm7.2"] != base
    job = next(j for j in _plan(SID, tmp_path).jobs if j.id == "cp313-rocm7.2")
    assert cibw.ccache_volume(dataclasses.replace(job, sysroot=None), TAG) != base


def test_python_include_folders_stay_in_the_direct_mode_hash() -> None:
    """Every builder holds /usr/include/python3.13 and 3.14 side by side: ignoring them would let
    a manifest naming 3.13's Python.h hit in the 3.14 job (the file is there) and serve 3.13's object."""
    for pattern in ccache.IGNORED_OPTIONS:
        for include in ("-I/usr/include/python3.14", "-I/opt/python/cp314-cp314/include/python3.14"):
            assert not include.startswith(pattern.removesuffix("*")), (pattern, include)


def test_debian_sid_routes_its_compiled_hipcc_through_wrappers(tmp_path: Path) -> None:
    job = next(j for j in _plan(SID, tmp_path).jobs if j.id == "cp314-rocm7.2")
    assert ccache.layout(job) is ccache.DEBIAN_SID
    settings = cibw.CibwSettings(image=TAG, source_date_epoch=1, ccache_volume="v", with_ca_bundle=False)
    env = cibw.container_environment(job, settings)
    assert env["HIP_CLANG_PATH"] == ccache.SID_HIP_WRAPPERS
    assert "HIP_CLANG_LAUNCHER" not in env  # the compiled hipcc has no such hook
    hook = cibw.cibuildwheel_options(job, settings)["CIBW_BEFORE_BUILD_LINUX"]
    assert hook == f"{ccache.ZERO_STATS} && {ccache.SID_SETUP} && {ccache.HOST_CC_SETUP}"
    for setup in (ccache.SID_SETUP, ccache.HOST_CC_SETUP):
        assert "{" not in setup and "}" not in setup  # cibuildwheel formats hooks
    none = cibw.CibwSettings(image=TAG, source_date_epoch=1, ccache_volume=None, with_ca_bundle=False)
    # without the cache: no statistics to zero, but the wrappers still run the HIP launcher
    assert (
        cibw.cibuildwheel_options(job, none)["CIBW_BEFORE_BUILD_LINUX"]
        == f"{ccache.SID_SETUP} && {ccache.HOST_CC_SETUP}"
    )
    assert cibw.container_environment(job, none)["HIP_CLANG_PATH"] == ccache.SID_HIP_WRAPPERS


def test_a_recipe_routing_hipcc_itself_gets_no_wrappers(tmp_path: Path) -> None:
    job = next(j for j in _plan(SID + "env: {HIP_CLANG_PATH: /opt/mine}\n", tmp_path).jobs)
    assert ccache.setup_commands(job) == (ccache.ZERO_STATS, ccache.HOST_CC_SETUP)


def test_the_wrapper_setup_makes_wrappers_that_exec_the_launcher_on_hipcc_s_clang(tmp_path: Path) -> None:
    """The hook's script itself, run by sh over a fake hipcc naming a fake InstalledDir."""
    real = tmp_path / "llvm" / "bin"
    real.mkdir(parents=True)
    for tool in ("clang", "clang++", "clang-offload-bundler", "lld"):
        (real / tool).write_text("#!/bin/sh\n")
        (real / tool).chmod(0o755)
    fake = tmp_path / "path"
    fake.mkdir()
    (fake / "hipcc").write_text(f"#!/bin/sh\necho 'HIP version: 7.2'\necho 'InstalledDir: {real}'\n")
    (fake / "hipcc").chmod(0o755)
    out = tmp_path / "wrappers"
    script = ccache.SID_SETUP.replace(ccache.SID_HIP_WRAPPERS, str(out))
    done = subprocess.run(
        ["sh", "-c", script], env={"PATH": f"{fake}:/usr/bin:/bin", "HIP_CLANG_PATH": str(out)}, check=False
    )
    assert done.returncode == 0
    # the HIP launcher (its -cuid, then ccache with the cache) on the real clang
    launcher = ccache.HIP_LAUNCHER
    assert (out / "clang++").read_text() == f'#!/bin/sh\nexec {launcher} {real}/clang++ "$@"\n'
    assert (out / "clang").read_text() == f'#!/bin/sh\nexec {launcher} {real}/clang "$@"\n'
    assert (out / "lld").resolve() == real / "lld"
    assert (out / "clang-offload-bundler").is_symlink()
