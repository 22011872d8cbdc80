"""Cold, cached and ``--no-cache`` builds of a HIP project without ``-cuid`` give the same wheel bytes.

clang names each HIP translation unit (``__hip_cuid_<hex>`` in host and device code) from a hash of
the command line it runs (``-fuse-cuid=hash``), and ccache runs clang with the arguments in its own
order, so an object compiled through ccache differed from an uncached compile's, and ``buildkit
verify`` (an uncached rebuild) from the cached build, for every project that does not pass ``-cuid``
itself: whisper.cpp's ggml (CMake's HIP language), any hipcc-driven setup.py. The build now sends
every HIP compile through its launcher (buildkit/building/hip_launcher.sh), which adds a ``-cuid`` of
the arguments as the project gave them, before ccache, in every build.

Real parts only: the debian-sid-rocm 7.2 builder (hipcc 7.2.4 on clang 22, ccache 4.14, cmake) and
its glibc2.31 sysroot, cibuildwheel, a fresh cache volume. The project is a setuptools build that
compiles one extension with CMake's HIP language (a ``.cu`` file set to ``LANGUAGE HIP``, as ggml
does) and one with ``/usr/bin/hipcc`` by full path; neither passes ``-cuid``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from buildkit import image as images
from buildkit.building import ccache
from buildkit.building.cibw import ccache_volume
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe
from tests.helpers.build_run import build_job

pytestmark = [pytest.mark.docker, pytest.mark.slow]

JOB = "cp313-rocm7.2"

SETUP_PY = r'''
import os
import shutil
import subprocess
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class HipBuildExt(build_ext):
    """_cmake: CMake's HIP language; _hipcc: /usr/bin/hipcc by full path. No -cuid anywhere."""

    def build_extension(self, ext):
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        archs = os.environ["PYTORCH_ROCM_ARCH"]
        include = sysconfig.get_paths()["include"]
        if ext.name == "cuidproj._cmake":
            build = os.path.join(self.build_temp, "cmake")
            subprocess.check_call(
                ["cmake", "-S", "cmake", "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                 f"-DCMAKE_HIP_ARCHITECTURES={archs}", f"-DPY_INCLUDE={include}"]
            )
            subprocess.check_call(["cmake", "--build", build, "--verbose"])
            shutil.copyfile(os.path.join(build, "_cmake.so"), target)
            return
        os.makedirs(self.build_temp, exist_ok=True)
        obj = os.path.join(self.build_temp, "kernels.o")
        offload = [f"--offload-arch={a}" for a in archs.split(";")]
        subprocess.check_call(
            ["/usr/bin/hipcc", "-c", "-fPIC", "-O2", *offload, "-I" + include, ext.sources[0], "-o", obj]
        )
        subprocess.check_call(["/usr/bin/hipcc", "-shared", "-fPIC", *offload, obj, "-o", target])


setup(
    name="cuidproj",
    version=os.environ.get("BUILDKIT_VERSION", "0.0.0"),
    packages=["cuidproj"],
    ext_modules=[
        Extension("cuidproj._cmake", ["cmake/kern.cu"]),
        Extension("cuidproj._hipcc", ["src/kernels.hip"]),
    ],
    cmdclass={"build_ext": HipBuildExt},
)
'''
PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"
"""
CMAKELISTS = """\
cmake_minimum_required(VERSION 3.21)
project(cuidcmake LANGUAGES C CXX HIP)
# configure probes, in a scratch folder named anew at every configure: never cached (the launcher)
include(CheckCSourceCompiles)
check_c_source_compiles("int main(void) { return 0; }" CUID_HAVE_C)
find_package(Threads REQUIRED)
add_library(_cmake MODULE kern.cu)
set_source_files_properties(kern.cu PROPERTIES LANGUAGE HIP)
target_include_directories(_cmake PRIVATE ${PY_INCLUDE})
set_target_properties(_cmake PROPERTIES PREFIX "" SUFFIX ".so")
"""


def _module(name: str) -> str:
    return (
        "#include <Python.h>\n#include <hip/hip_runtime.h>\n"
        "__global__ void scale(float *x, float f) { x[threadIdx.x] *= f; }\n"
        "static PyMethodDef methods[] = {{nullptr, nullptr, 0, nullptr}};\n"
        f'static struct PyModuleDef module = {{PyModuleDef_HEAD_INIT, "{name}", nullptr, -1, methods}};\n'
        f'extern "C" PyMODINIT_FUNC PyInit_{name}(void) {{ return PyModule_Create(&module); }}\n'
    )


def _project(root: Path) -> Path:
    for folder in ("cmake", "src", "cuidproj"):
        (root / folder).mkdir(parents=True)
    (root / "cuidproj" / "__init__.py").write_text("")
    (root / "setup.py").write_text(SETUP_PY)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "cmake" / "CMakeLists.txt").write_text(CMAKELISTS)
    (root / "cmake" / "kern.cu").write_text(_module("_cmake"))
    (root / "src" / "kernels.hip").write_text(_module("_hipcc"))
    return root


def _recipe(tmp_path: Path, source: Path) -> Path:
    recipe = {
        "name": "cuidproj",
        "source": {"path": str(source)},
        "version": {"base": "1.0.0", "local": "rocm{rocm}"},
        "python": ["3.13"],
        "rocm": ["7.2"],
        # an arch list of its own: a cache volume no other build shares (pywhispercpp's is gfx942)
        "archs": {"list": ["gfx90a"]},
        "manylinux": {"policy": "manylinux_2_31", "sysroot": "glibc2.31"},
        "repair": {"exclude": {"sets": ["rocm"]}},
        "image": "debian-sid-rocm",
    }
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path


def _build(tmp_path: Path, recipe: Path, *flags: str) -> tuple[dict[str, Any], str]:
    built = build_job(tmp_path, recipe, JOB, *flags, timeout=2400)
    return built.manifest, built.log


def test_cold_cached_and_uncached_builds_of_a_hip_project_without_cuid_are_the_same_bytes(
    tmp_path: Path, docker_client: Any
) -> None:
    try:
        docker_client.images.get("debian:sid-slim")
    except Exception:
        pytest.fail("base image debian:sid-slim missing: ci/install-docker.sh seeds it", pytrace=False)
    image = images.ensure_image(
        images.get_profile("debian-sid-rocm"),
        build_args=images.rocm_build_args(images.get_profile("debian-sid-rocm"), "7.2"),
        client=docker_client,
    )
    source = _project(tmp_path / "cuidproj")
    recipe = _recipe(tmp_path, source)
    job = expand(load_recipe(recipe), env={}).job(JOB)
    volume = ccache_volume(job, image.tag)
    with contextlib.suppress(Exception):
        docker_client.volumes.get(volume).remove(force=True)
    try:
        cold, log = _build(tmp_path, recipe)
        # CMake ran its HIP compile through the launcher, hipcc its clang through the wrappers
        assert f"{ccache.HIP_LAUNCHER} " in log and "-x hip" in log, log[-6000:]
        misses = cold["compiler_cache"]["misses"]
        assert misses >= 2 and cold["compiler_cache"]["hits"] == 0, cold["compiler_cache"]

        # the same inputs: every compile hits (the configure probes are not counted: not cached)
        warm, _ = _build(tmp_path, recipe, "--force")
        assert warm["compiler_cache"] == {"hits": misses, "misses": 0, "hit_rate": 1.0}, warm[
            "compiler_cache"
        ]

        uncached, log = _build(tmp_path, recipe, "--force", "--no-cache")
        assert uncached["compiler_cache"] is None
        assert f"{ccache.HIP_LAUNCHER} " in log  # HIP compiles still go through the launcher
        assert cold["wheel"]["sha256"] == warm["wheel"]["sha256"] == uncached["wheel"]["sha256"], (
            cold["wheel"]["sha256"],
            warm["wheel"]["sha256"],
            uncached["wheel"]["sha256"],
        )
    finally:
        with contextlib.suppress(Exception):
            docker_client.volumes.get(volume).remove(force=True)
