"""The compiler cache as the build container gets it (buildkit/building/ccache.py): the environment that
routes every C, C++ and HIP compile through ccache, as cibuildwheel's own parser reads it, per image
layout; the Dockerfiles that make the masquerade it relies on; the statistics read back."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from buildkit.building import ccache, cibw
from buildkit.plan.expansion import expand
from buildkit.plan.models import Job
from buildkit.recipe import load_recipe
from buildkit.recipe.sections.image import ImageSpec
from buildkit.records import to_data

ROOT = Path(__file__).resolve().parents[2]
#: the PATH cibuildwheel gives the build before CIBW_ENVIRONMENT: the job's Python first
CIBW_PATH = "/opt/python/cp313-cp313/bin:/usr/local/bin:/usr/bin:/bin"
#: first on PATH in every build that stages the launcher: the host compilers' wrappers (its host ISA)
HOST = ccache.HOST_CC_WRAPPERS + ":"


def _job(recipe: str, job_id: str | None = None) -> Job:
    plan = expand(load_recipe(ROOT / "recipes" / recipe), env={})
    return plan.job(job_id) if job_id else plan.jobs[0]


def _container_env(job: Job, *, volume: str | None = "rocm-buildkit-ccache-abc") -> dict[str, str]:
    """The build environment the container gets: rendered by buildkit, parsed by cibuildwheel."""
    from cibuildwheel.environment import parse_environment

    settings = cibw.CibwSettings(
        image="rocm-buildkit/debian-rocm:0123456789ab",
        source_date_epoch=1700000000,
        ccache_volume=volume,
        with_ca_bundle=False,
    )
    text = cibw.cibuildwheel_options(job, settings)["CIBW_ENVIRONMENT_LINUX"]
    env: dict[str, str] = parse_environment(text).as_dictionary(prev_environment={"PATH": CIBW_PATH})
    return env


def test_debian_build_routes_gcc_by_name_hipcc_and_cmake_through_ccache() -> None:
    env = _container_env(_job("reference-trixie.yaml"))
    # setuptools runs x86_64-linux-gnu-gcc/g++ by name: Debian's masquerade comes first, before the
    # job's Python, which stays ahead of everything else; the host compilers' wrappers first of all
    assert env["PATH"] == HOST + "/usr/lib/ccache:" + CIBW_PATH
    # Debian's hipcc, run by full path, and CMake's HIP compiles: through the launcher, which runs ccache
    assert env["HIP_CLANG_LAUNCHER"] == ccache.HIP_LAUNCHER == "/project/.buildkit/hip-launcher"
    assert env["CMAKE_HIP_COMPILER_LAUNCHER"] == ccache.HIP_LAUNCHER
    assert env["BUILDKIT_HIP_CCACHE"] == "1"
    assert "HIP_CLANG_PATH" not in env
    for var in ("CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER"):
        # CMake's C and C++ too: the launcher runs ccache (BUILDKIT_HIP_CCACHE), except for a
        # configure probe in CMake's random scratch folder (tests/unit/test_hip_launcher.py)
        assert env[var] == ccache.HIP_LAUNCHER
    assert env["CCACHE_DIR"] == "/ccache"
    assert env["CCACHE_COMPILERCHECK"] == "content"
    # the isolated build environment's random include folder stays out of the direct-mode hash
    assert env["CCACHE_IGNOREOPTIONS"].split() == [
        "-I/tmp/build-env-*",
        "-I/tmp/pip-build-env-*",
        "-I/root/.cache/uv/builds-v0/*",
    ]
    # no path rewriting: it would make a cached build's __FILE__ and debug info differ from an
    # uncached one's (buildkit verify rebuilds without the cache)
    assert "CCACHE_BASEDIR" not in env


def test_manylinux_build_routes_the_gcc_toolset_and_amd_hipcc() -> None:
    job = _job("aiter.yaml", "cp312-rocm7.2-torch2.10")
    assert job.image.profile == "manylinux_2_28-rocm"
    env = _container_env(job)
    assert env["PATH"] == HOST + "/usr/lib64/ccache:" + CIBW_PATH  # gcc, g++ of the toolset, by name
    assert env["HIP_CLANG_PATH"] == ccache.HIP_CLANG_WRAPPERS == "/opt/rocm-buildkit/hip-ccache"
    assert "HIP_CLANG_LAUNCHER" not in env  # AMD's compiled hipcc does not read it
    # the image's wrappers exec the launcher this names; CMake's HIP compiles go through it too
    assert env[ccache.LAUNCHER_VARIABLE] == env["CMAKE_HIP_COMPILER_LAUNCHER"] == ccache.HIP_LAUNCHER
    assert env["BUILDKIT_HIP_CCACHE"] == "1"


def test_debian_image_with_extra_packages_keeps_the_debian_layout() -> None:
    job = _job("reference-trixie.yaml")
    extended = dataclasses.replace(job, image=ImageSpec(profile="debian-rocm", packages=("librocfft-dev",)))
    assert ccache.layout(extended) is ccache.DEBIAN


@pytest.mark.parametrize(
    "image", [ImageSpec(dockerfile="docker/Builder.Dockerfile"), ImageSpec(ref="example/builder:1")]
)
def test_an_image_buildkit_did_not_make_gets_only_the_masquerade_directories(image: ImageSpec) -> None:
    job = dataclasses.replace(_job("reference-trixie.yaml"), image=image, image_profile=image.label)
    env = _container_env(job)
    # a directory the image lacks is skipped by PATH lookup; no variable names a ccache that may be absent
    assert env["PATH"] == "/usr/lib/ccache:/usr/lib64/ccache:" + CIBW_PATH
    assert not {"HIP_CLANG_LAUNCHER", "HIP_CLANG_PATH", *ccache.CMAKE_LAUNCHERS} & set(env)
    assert not {ccache.CCACHE_SWITCH, ccache.LAUNCHER_VARIABLE} & set(env)
    assert not ccache.uses_launcher(job)
    assert env["CCACHE_DIR"] == "/ccache"


def test_no_cache_routes_compiles_through_the_launcher_alone() -> None:
    job = _job("reference-trixie.yaml")
    settings = cibw.CibwSettings(image="img:1", source_date_epoch=1, ccache_volume=None, with_ca_bundle=False)
    options = cibw.cibuildwheel_options(job, settings)
    env = _container_env(job, volume=None)
    assert env["PATH"] == HOST + CIBW_PATH  # cibuildwheel's PATH, after the host compilers' wrappers
    assert "CCACHE_DIR" not in env
    # the launcher gives HIP compiles the -cuid a cached build gives them, holds every compile's host
    # ISA (C and C++ too: a compiler CMake names by path misses the wrappers) and runs no ccache
    for var in ("HIP_CLANG_LAUNCHER", *ccache.CMAKE_LAUNCHERS):
        assert env[var] == ccache.HIP_LAUNCHER
    assert ccache.CCACHE_SWITCH not in env
    assert options["CIBW_BEFORE_BUILD_LINUX"] == ccache.HOST_CC_SETUP  # no statistics to zero
    assert "volume" not in options["CIBW_CONTAINER_ENGINE"]


@pytest.mark.parametrize("volume", ["rocm-buildkit-ccache-abc", None])
def test_sid_makes_the_wrappers_of_hipcc_s_clang_with_or_without_the_cache(volume: str | None) -> None:
    job = _job("reference.yaml")
    assert ccache.layout(job) is ccache.DEBIAN_SID
    settings = cibw.CibwSettings(
        image="img:1", source_date_epoch=1, ccache_volume=volume, with_ca_bundle=False
    )
    hook = cibw.cibuildwheel_options(job, settings)["CIBW_BEFORE_BUILD_LINUX"]
    assert (
        hook
        == (f"{ccache.ZERO_STATS} && " if volume else "") + f"{ccache.SID_SETUP} && {ccache.HOST_CC_SETUP}"
    )
    assert f"exec {ccache.HIP_LAUNCHER} %s/%s" in ccache.SID_SETUP
    env = _container_env(job, volume=volume)
    assert env["HIP_CLANG_PATH"] == ccache.SID_HIP_WRAPPERS
    assert env["CMAKE_HIP_COMPILER_LAUNCHER"] == ccache.HIP_LAUNCHER
    assert (env.get(ccache.CCACHE_SWITCH) == "1") is (volume is not None)


def test_the_build_zeroes_the_statistics_before_the_recipe_hooks() -> None:
    job = _job("reference-trixie.yaml")
    job = dataclasses.replace(job, hooks=dataclasses.replace(job.hooks, before_build=("make -C deps",)))
    settings = cibw.CibwSettings(
        image="img:1", source_date_epoch=1, ccache_volume="vol", with_ca_bundle=False
    )
    hook = cibw.cibuildwheel_options(job, settings)["CIBW_BEFORE_BUILD_LINUX"]
    assert hook == f"{ccache.ZERO_STATS} && {ccache.HOST_CC_SETUP} && make -C deps"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CMAKE_CXX_COMPILER_LAUNCHER", "sccache"),
        ("HIP_CLANG_LAUNCHER", "/opt/tools/launch"),
        ("HIP_CLANG_PATH", "/usr/lib/llvm-17/bin"),
    ],
)
def test_a_recipe_that_routes_its_compiler_itself_keeps_its_routing(name: str, value: str) -> None:
    job = _job("reference-trixie.yaml")
    job = dataclasses.replace(job, env={**job.env, name: value})
    env = _container_env(job)
    assert env[name] == value
    assert name in cibw.RECIPE_OVERRIDABLE
    assert env["PATH"].startswith(HOST + "/usr/lib/ccache:")


def test_path_is_the_one_value_rendered_with_an_expansion() -> None:
    text = cibw.render_environment({"PATH": "/usr/lib/ccache:$PATH", "OTHER": "a:$PATH"})
    assert text == 'PATH="/usr/lib/ccache:$PATH" OTHER="a:\\$PATH"'


# --------------------------------------------------------------------------- the images' masquerade
def test_debian_dockerfile_links_every_compiler_a_build_calls_by_name() -> None:
    text = (ROOT / "docker" / "debian-rocm.Dockerfile").read_text(encoding="utf-8")
    run = text[text.index("RUN apt-get update") :]
    run = run[: run.index("\n\n")]
    installed = run.index("apt-get install")
    linked = run.index("update-ccache-symlinks")
    assert installed < linked  # after every compiler is installed, so that each gets its link
    checked = re.search(r"for cc in ([^;]+); do", run[linked:])
    assert checked is not None
    names = set(checked.group(1).split())
    assert {"cc", "c++", "gcc", "g++", "x86_64-linux-gnu-gcc", "x86_64-linux-gnu-g++", "clang++-17"} <= names
    assert ccache.DEBIAN.masquerade == ("/usr/lib/ccache",)


def test_manylinux_dockerfile_makes_the_masquerade_and_the_hip_clang_wrappers() -> None:
    text = (ROOT / "docker" / "manylinux_2_28-rocm.Dockerfile").read_text(encoding="utf-8")
    (masquerade,) = ccache.EL.masquerade
    assert f"mkdir -p {masquerade}" in text
    links = re.search(r'for cc in ([^;]+); do ln -sfn \.\./\.\./bin/ccache "' + masquerade, text)
    assert links is not None and set(links.group(1).split()) == {"gcc", "g++", "cc", "c++"}
    assert f"mkdir -p {ccache.HIP_CLANG_WRAPPERS}" in text
    # the launcher the build names (without one, as outside a build: ccache)
    assert f'exec "${{{ccache.LAUNCHER_VARIABLE}:-ccache}}" /opt/rocm/llvm/bin/%s "$@"' in text
    assert re.search(r"for cc in clang clang\+\+; do", text)


# --------------------------------------------------------------------------- statistics
#: `ccache --print-stats` of ccache 4.11 (the Debian image's) after a miss, a hit, a link and a -E
PRINT_STATS_4 = """autoconf_test\t0
bad_compiler_arguments\t0
cache_miss\t1
cache_size_kibibyte\t8
called_for_link\t1
called_for_preprocessing\t1
direct_cache_hit\t1
direct_cache_miss\t1
files_in_cache\t2
local_storage_hit\t1
local_storage_miss\t1
preprocessed_cache_hit\t2
preprocessed_cache_miss\t1
stats_updated_timestamp\t1796144535
"""
#: `ccache -s` of ccache 3.7
STATS_3 = """cache directory                     /ccache
primary config                      /ccache/ccache.conf
secondary config      (readonly)    /etc/ccache.conf
stats updated                       Mon Dec  1 10:00:00 2026
cache hit (direct)                    40
cache hit (preprocessed)               2
cache miss                             7
cache hit rate                     85.71 %
called for link                        3
files in cache                        98
"""


def test_parse_ccache_4_print_stats() -> None:
    stats = ccache.parse_stats(PRINT_STATS_4)
    assert stats == ccache.CacheStats(hits=3, misses=1)  # direct + preprocessed; misses: cache_miss only
    assert to_data(stats) == {"hits": 3, "misses": 1, "hit_rate": 0.75}
    assert stats.describe() == "3 hits, 1 miss (75.0% hit rate)"


def test_missed_compiles_are_named_after_the_counters_and_stay_out_of_the_json() -> None:
    text = PRINT_STATS_4 + "buildkit-missed\tsrc/a.hip\nbuildkit-missed\t/project/b c.cpp\n"
    stats = ccache.parse_stats(text)
    assert stats is not None
    assert stats.missed == ("src/a.hip", "/project/b c.cpp")
    assert (stats.hits, stats.misses) == (3, 1)  # a missed file is never taken for a counter
    assert to_data(stats) == {"hits": 3, "misses": 1, "hit_rate": 0.75}  # the manifest's shape
    assert ccache.parse_stats(PRINT_STATS_4).missed == ()


def test_parse_ccache_3_table() -> None:
    stats = ccache.parse_stats(STATS_3)
    assert stats == ccache.CacheStats(hits=42, misses=7)
    assert stats.describe() == "42 hits, 7 misses (85.7% hit rate)"


@pytest.mark.parametrize(
    "text", ["", "ccache: invalid option -- 'print-stats'\n", "cache_size_kibibyte\t8\n"]
)
def test_unreadable_statistics_are_none(text: str) -> None:
    assert ccache.parse_stats(text) is None


def test_no_cacheable_compile_has_no_hit_rate() -> None:
    stats = ccache.CacheStats(hits=0, misses=0)
    assert stats.hit_rate is None
    assert to_data(stats) == {"hits": 0, "misses": 0, "hit_rate": None}
    assert stats.describe() == "no compile went through ccache"


class _Box:
    def __init__(self, client: _Client, kwargs: dict[str, Any], command: list[str]) -> None:
        self.client, self.kwargs, self.command = client, kwargs, command

    def start(self) -> None:
        pass

    def wait(self, timeout: int | None = None) -> dict[str, int]:
        return {"StatusCode": self.client.exit_code}

    def logs(self, stdout: bool = True, stderr: bool = False) -> bytes:
        return self.client.output if stdout else b""

    def remove(self, force: bool = False) -> None:
        self.client.removed += 1


class _Containers:
    def __init__(self, client: _Client) -> None:
        self.client = client

    def create(self, image: str, command: list[str], **kwargs: Any) -> _Box:
        box = _Box(self.client, kwargs, command)
        self.client.made.append(box)
        return box


class _Client:
    def __init__(self, output: bytes, exit_code: int = 0) -> None:
        self.output, self.exit_code = output, exit_code
        self.made: list[_Box] = []
        self.removed = 0
        self.containers = _Containers(self)


def test_read_stats_mounts_the_volume_in_a_throwaway_container() -> None:
    client = _Client(PRINT_STATS_4.encode())
    assert ccache.read_stats(client, "img:1", "vol-1", run_id="b1") == ccache.CacheStats(3, 1)
    (box,) = client.made
    assert box.kwargs["volumes"] == {"vol-1": {"bind": "/ccache", "mode": "rw"}}
    assert box.kwargs["environment"] == {"CCACHE_DIR": "/ccache"}
    assert box.kwargs["network_mode"] == "none"
    assert box.kwargs["labels"]["io.rocm-buildkit.container"] == "ccache-stats"
    assert "--print-stats" in box.command[-1]
    assert client.removed == 1


def test_read_stats_of_an_image_without_ccache_is_none() -> None:
    client = _Client(b"", exit_code=3)
    assert ccache.read_stats(client, "img:1", "vol-1") is None
    assert client.removed == 1
