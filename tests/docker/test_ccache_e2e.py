"""The compiler cache works for a project that does nothing for it, on the real engine.

A small setuptools project that knows nothing of ccache: a C extension and a C++ extension that
setuptools compiles by name (``x86_64-linux-gnu-gcc``/``g++``), and a HIP extension whose
``build_ext`` runs ``/usr/bin/hipcc`` by full path (as many HIP projects do, out of reach of PATH).
A cold build fills a fresh cache volume (every compile a miss); a ``--force`` rebuild of the same
inputs hits every compile, HIP's included, and says so in the summary and the manifest; the three
builds, the uncached ``--no-cache`` one among them, make the same wheel bytes (``buildkit verify``
rebuilds without the cache and must still compare equal). Then the manylinux image's wrappers of
ROCm's clang (its Dockerfile's own lines, run in the Debian image over Debian's clang) are shown to
route a HIP compile through ccache the way AMD's hipcc calls them (``$HIP_CLANG_PATH/clang++``).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from buildkit.building import ccache
from buildkit.building.cibw import ccache_volume
from buildkit.docker_engine import throwaway
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe
from tests.helpers.build_run import build_job

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
JOB = "cp313-rocm5.7"

SETUP_PY = r'''
import os
import subprocess
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class HipBuildExt(build_ext):
    """Compiles and links the HIP extension with /usr/bin/hipcc, by full path."""

    def build_extension(self, ext):
        if ext.name != "plainext._kernels":
            return super().build_extension(ext)
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(self.build_temp, exist_ok=True)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        obj = os.path.join(self.build_temp, "kernels.o")
        archs = [f"--offload-arch={a}" for a in os.environ["PYTORCH_ROCM_ARCH"].split(";")]
        include = "-I" + sysconfig.get_paths()["include"]
        compile_ = ["/usr/bin/hipcc", "-c", "-fPIC", "-O2", *archs, include, ext.sources[0], "-o", obj]
        subprocess.check_call(compile_)
        subprocess.check_call(["/usr/bin/hipcc", "-shared", "-fPIC", *archs, obj, "-o", target])


setup(
    name="plainext",
    version=os.environ.get("BUILDKIT_VERSION", "0.0.0"),
    packages=["plainext"],
    ext_modules=[
        Extension("plainext._c", ["src/one.c", "src/two.c"]),
        Extension("plainext._cxx", ["src/three.cpp"], language="c++"),
        Extension("plainext._kernels", ["src/kernels.hip"]),
    ],
    cmdclass={"build_ext": HipBuildExt},
)
'''
PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"
"""
ONE_C = r"""
#include <Python.h>
int two(void);
static PyObject *answer(PyObject *self, PyObject *args) { return PyLong_FromLong(40 + two()); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_c", NULL, -1, methods};
PyMODINIT_FUNC PyInit__c(void) { return PyModule_Create(&module); }
"""
TWO_C = "int two(void) { return 2; }\n"
THREE_CPP = r"""
#include <Python.h>
#include <string>
static PyObject *greet(PyObject *, PyObject *) { return PyUnicode_FromString(std::string("hi").c_str()); }
static PyMethodDef methods[] = {{"greet", greet, METH_NOARGS, ""}, {nullptr, nullptr, 0, nullptr}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cxx", nullptr, -1, methods};
PyMODINIT_FUNC PyInit__cxx(void) { return PyModule_Create(&module); }
"""
KERNELS_HIP = r"""
#include <Python.h>
#include <hip/hip_runtime.h>
__global__ void scale(float *x, float f) { x[threadIdx.x] *= f; }
static PyMethodDef methods[] = {{nullptr, nullptr, 0, nullptr}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", nullptr, -1, methods};
extern "C" PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
"""
#: compiles of one build: one.c, two.c, three.cpp (setuptools, by name) and kernels.hip (hipcc)
COMPILES = 4


def _project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "plainext").mkdir()
    (root / "plainext" / "__init__.py").write_text("")
    (root / "setup.py").write_text(SETUP_PY)
    (root / "pyproject.toml").write_text(PYPROJECT)
    for name, text in (
        ("one.c", ONE_C),
        ("two.c", TWO_C),
        ("three.cpp", THREE_CPP),
        ("kernels.hip", KERNELS_HIP),
    ):
        (root / "src" / name).write_text(text)
    return root


def _recipe(tmp_path: Path, source: Path) -> Path:
    recipe = {
        "name": "plainext",
        "source": {"path": str(source)},
        "version": {"base": "1.0.0", "local": "rocm{rocm}"},
        "python": ["3.13"],
        "rocm": ["5.7"],
        "archs": {"list": ["gfx90a"], "toolchain": "debian-trixie"},
        "manylinux": {"policy": "manylinux_2_41"},
        "repair": {"exclude": {"sets": ["rocm"]}},
        "image": "debian-rocm",
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path


def _build(tmp_path: Path, recipe: Path, *flags: str) -> tuple[str, dict[str, Any]]:
    built = build_job(tmp_path, recipe, JOB, *flags)
    return built.stdout, built.manifest


def test_a_project_that_does_not_opt_in_fills_the_cache_and_hits_it(
    tmp_path: Path, debian_rocm_image: Any, docker_client: Any
) -> None:
    source = _project(tmp_path / "plainext")
    recipe = _recipe(tmp_path, source)
    job = expand(load_recipe(recipe), env={}).job(JOB)
    volume = ccache_volume(job, debian_rocm_image.tag)
    with contextlib.suppress(Exception):
        docker_client.volumes.get(volume).remove(force=True)
    try:
        _out, cold = _build(tmp_path, recipe)
        assert cold["compiler_cache"] == {"hits": 0, "misses": COMPILES, "hit_rate": 0.0}, cold[
            "compiler_cache"
        ]

        out, warm = _build(tmp_path, recipe, "--force")  # the same inputs, rebuilt: every compile hits
        assert warm["compiler_cache"] == {"hits": COMPILES, "misses": 0, "hit_rate": 1.0}, warm[
            "compiler_cache"
        ]
        assert re.search(rf"^  ccache    {COMPILES} hits, 0 misses \(100\.0% hit rate\)$", out, re.M), out
        log = (tmp_path / "logs" / f"{JOB}.log").read_text(errors="replace")
        assert f"compiler cache ({volume}): {COMPILES} hits, 0 misses" in log

        _out, uncached = _build(tmp_path, recipe, "--force", "--no-cache")
        assert uncached["compiler_cache"] is None
        # a cache hit returns what the compiler made: cold, cached and uncached builds are the same bytes
        assert cold["wheel"]["sha256"] == warm["wheel"]["sha256"] == uncached["wheel"]["sha256"]
    finally:
        with contextlib.suppress(Exception):
            docker_client.volumes.get(volume).remove(force=True)


def _wrapper_lines() -> str:
    """The manylinux Dockerfile's lines that make the HIP clang wrappers, as a shell script."""
    text = (ROOT / "docker" / "manylinux_2_28-rocm.Dockerfile").read_text(encoding="utf-8")
    start = text.index(f" && mkdir -p {ccache.HIP_CLANG_WRAPPERS}")
    end = text.index("\n\n", start)
    return text[start:end].removeprefix(" && ")  # its continuation lines as they are: bash reads them


def test_manylinux_hip_clang_wrappers_route_hipcc_s_clang_through_ccache(
    debian_rocm_image: Any, docker_client: Any
) -> None:
    # ROCm's layout over Debian's clang 17: /opt/rocm/llvm/bin holds clang, clang++ and the tools
    script = (
        "set -e; mkdir -p /opt/rocm/llvm/bin; "
        "for t in /usr/lib/llvm-17/bin/*; do ln -s $t /opt/rocm/llvm/bin/; done\n"
        + _wrapper_lines()
        + "\nexport CCACHE_DIR=/tmp/cache CCACHE_COMPILERCHECK=content\n"
        "test -L /opt/rocm-buildkit/hip-ccache/clang-offload-bundler\n"
        "printf '#include <hip/hip_runtime.h>\\n__global__ void k(int *p) { *p = 1; }\\n' > /tmp/k.hip\n"
        # what AMD's hipcc runs: $HIP_CLANG_PATH/clang++ -x hip --offload-arch=... (and the device libs)
        "cc=$HIP_CLANG_PATH/clang++; flags='-x hip --offload-arch=gfx90a -c -O2 --rocm-path=/usr'\n"
        "$cc $flags /tmp/k.hip -o /tmp/k1.o; $cc $flags /tmp/k.hip -o /tmp/k2.o\n"
        "cmp /tmp/k1.o /tmp/k2.o\n"
        # another arch is other device code: the offload arch is part of the hash, so it misses
        "$cc ${flags/gfx90a/gfx942} /tmp/k.hip -o /tmp/k3.o; ! cmp -s /tmp/k1.o /tmp/k3.o\n"
        "ccache --print-stats\n"
    )
    with throwaway(
        docker_client,
        debian_rocm_image.tag,
        ["-c", script],
        purpose="test-ccache",
        entrypoint=["/bin/bash"],
        environment={"HIP_CLANG_PATH": ccache.HIP_CLANG_WRAPPERS},
    ) as box:
        done = box.run(timeout=300)
    out, err = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    assert done.exit_code == 0, out + err
    assert ccache.parse_stats(out) == ccache.CacheStats(hits=1, misses=2), out


def test_a_build_s_stats_log_names_each_missed_compile(debian_rocm_image: Any, docker_client: Any) -> None:
    """The statistics script a build runs after cibuildwheel, on a real ccache's real stats log: the
    counters of this build only, and the input file of each compile that missed (a hit is not named)."""
    log = "/tmp/cache/buildkit-stats-test.log"
    script = (
        "set -e; cd /tmp; printf 'int f(void){return 1;}\\n' > a.c\n"
        "printf 'int g(void){return 2;}\\n' > b.c\n"
        "ccache gcc -c a.c; ccache gcc -c a.c; ccache gcc -c /tmp/b.c\n"
        + ccache._LOG_STATS_SCRIPT
        + f"\ntest ! -e {log}\n"  # read and removed
    )
    with throwaway(
        docker_client,
        debian_rocm_image.tag,
        ["-c", script],
        purpose="test-ccache",
        entrypoint=["/bin/sh"],
        environment={"CCACHE_DIR": "/tmp/cache", "CCACHE_STATSLOG": log},
    ) as box:
        done = box.run(timeout=300)
    out, err = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    assert done.exit_code == 0, out + err
    stats = ccache.parse_stats(out)
    assert stats == ccache.CacheStats(hits=1, misses=2), out
    assert stats.missed == ("a.c", "/tmp/b.c"), out


def test_manylinux_hip_clang_wrappers_run_the_hip_launcher_cached_or_not(
    debian_rocm_image: Any, docker_client: Any
) -> None:
    """The image's wrappers exec ``$BUILDKIT_HIP_LAUNCHER`` (the staged launcher, as every build sets
    it): an uncached compile, a ccache miss and a ccache hit of a HIP file without ``-cuid`` are the
    same bytes, compiled with the launcher's ``-cuid`` (as ccache's log shows the command; clang 17
    emits no ``__hip_cuid_`` symbol yet, clang 22 does: tests/docker/test_hip_cuid_e2e.py's builder)."""
    launcher = "/tmp/hip-launcher"
    script = (
        "set -e; mkdir -p /opt/rocm/llvm/bin; "
        "for t in /usr/lib/llvm-17/bin/*; do ln -s $t /opt/rocm/llvm/bin/; done\n"
        + _wrapper_lines()
        + f"\ncat > {launcher} <<'LAUNCHER'\n{ccache.launcher_script()}LAUNCHER\nchmod +x {launcher}\n"
        "export CCACHE_DIR=/tmp/cache CCACHE_COMPILERCHECK=content CCACHE_LOGFILE=/tmp/ccache.log\n"
        "cd /tmp; printf '#include <hip/hip_runtime.h>\\n__global__ void k(int *p) { *p = 1; }\\n' > k.hip\n"
        "cc=$HIP_CLANG_PATH/clang++; flags='-x hip --offload-arch=gfx90a -c -O2 --rocm-path=/usr'\n"
        "$cc $flags k.hip -o k.o; cp k.o plain.o\n"
        f"{ccache.CCACHE_SWITCH}=1 $cc $flags k.hip -o k.o; cp k.o miss.o\n"
        f"{ccache.CCACHE_SWITCH}=1 $cc $flags k.hip -o k.o; cp k.o hit.o\n"
        "cmp plain.o miss.o; cmp plain.o hit.o\n"
        "grep -o -- '-cuid=[0-9a-z]*' /tmp/ccache.log | sort -u\n"
        "ccache --print-stats\n"
    )
    with throwaway(
        docker_client,
        debian_rocm_image.tag,
        ["-c", script],
        purpose="test-ccache",
        entrypoint=["/bin/bash"],
        environment={"HIP_CLANG_PATH": ccache.HIP_CLANG_WRAPPERS, ccache.LAUNCHER_VARIABLE: launcher},
    ) as box:
        done = box.run(timeout=300)
    out, err = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    assert done.exit_code == 0, out + err
    assert ccache.parse_stats(out) == ccache.CacheStats(hits=1, misses=1), out
    # the launcher's -cuid: the sha256 of the arguments the wrapper got, without the output file
    hashed = ["-x", "hip", "--offload-arch=gfx90a", "-c", "-O2", "--rocm-path=/usr", "k.hip"]
    cuid = hashlib.sha256(b"".join(a.encode() + b"\0" for a in hashed)).hexdigest()[:16]
    assert [line for line in out.splitlines() if line.startswith("-cuid=")] == [f"-cuid={cuid}"], out
