"""CMake's HIP language under the compatibility sysroot, in the ROCm 7.2 builder (debian-sid-rocm).

CMake identifies a HIP compiler by compiling and linking an executable with it. Under the sysroot
that link failed: libamdhip64 needs glibc symbols newer than the sysroot's 2.31
(pthread_attr_getguardsize@GLIBC_2.34) and libhsa-runtime64.so.1, which the sysroot's library folder
does not hold. CMake then reported "The HIP compiler identification is unknown", compiled ``.cu``
files without ``-x hip`` and clang refused ``--offload-arch=gfx942`` as a CUDA architecture (seen
with pywhispercpp's ggml-hip). The wrappers of docker/sysroot.sh now give a link
``--allow-shlib-undefined`` (what the ROCm libraries need is the runtime's business, as it already
is for shared libraries), and nothing to a compile.

Real parts only: the builder image and the sysroot's toolchain file, as a build gets them
(``CMAKE_TOOLCHAIN_FILE`` and the wrappers first on ``PATH``: buildkit/build/cibw.py). The
container has no network and no host mount: the project goes in with ``put_archive``.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from typing import Any

import pytest

from buildkit import image as images
from buildkit import profiles

pytestmark = pytest.mark.docker

SYSROOT = "/opt/buildkit/sysroots/glibc2.31"
CMAKELISTS = """\
cmake_minimum_required(VERSION 3.21)
project(sysroothip LANGUAGES C CXX)
enable_language(HIP)
message(STATUS "HIP compiler id: [${CMAKE_HIP_COMPILER_ID}]")
add_library(kern SHARED kern.cu)
set_source_files_properties(kern.cu PROPERTIES LANGUAGE HIP)
add_executable(probe probe.c)
"""
KERNEL = """\
#include <hip/hip_runtime.h>
#include <string>
__global__ void add_one(float* x) { x[threadIdx.x] += 1.0f; }
extern "C" int launch(float* x, const char* n) {
  hipLaunchKernelGGL(add_one, dim3(1), dim3(std::stoi(n)), 0, 0, x);
  return hipGetLastError() == hipSuccess ? 0 : 1;
}
"""
PROBE = "int main(void) { return 0; }\n"


def _tar(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"src/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture(scope="module")
def container(docker_client: Any) -> Iterator[Any]:
    try:
        docker_client.images.get("debian:sid-slim")
    except Exception:
        pytest.fail("base image debian:sid-slim missing: ci/install-docker.sh seeds it", pytrace=False)
    profile = profiles.get_profile("debian-sid-rocm")
    ref = images.ensure_image(
        "debian-sid-rocm", build_args=profile.release_build_args("7.2"), client=docker_client, progress=print
    )
    box = docker_client.containers.create(
        str(ref.tag),
        command=["sleep", "infinity"],
        network_disabled=True,
        working_dir="/",
        environment={
            "CMAKE_TOOLCHAIN_FILE": f"{SYSROOT}/toolchain.cmake",
            "PATH": f"{SYSROOT}/bin:/usr/local/bin:/usr/bin:/bin",
            "ROCM_PATH": "/usr",
            "HIP_PLATFORM": "amd",
        },
    )
    try:
        box.start()
        assert box.put_archive("/", _tar({"CMakeLists.txt": CMAKELISTS, "kern.cu": KERNEL, "probe.c": PROBE}))
        yield box
    finally:
        box.remove(force=True)


def _run(box: Any, script: str) -> str:
    result = box.exec_run(["bash", "-c", script])
    output = result.output.decode(errors="replace")
    assert result.exit_code == 0, output[-6000:]
    return output


def _max_version(listing: str, prefix: str) -> tuple[int, ...]:
    """The highest ``PREFIX_x.y.z`` version in readelf's listing, () when there is none."""
    found = [word.split("_", 1)[1] for word in listing.split() if word.split("_", 1)[0] == prefix]
    return max((tuple(int(part) for part in v.split(".")) for v in found), default=())


def test_cmake_identifies_the_hip_compiler_and_links_under_the_sysroot(container: Any) -> None:
    configured = _run(container, "cmake -S /src -B /build -DCMAKE_HIP_ARCHITECTURES=gfx942 2>&1")
    assert "HIP compiler id: [Clang]" in configured, configured[-4000:]
    assert "identification is unknown" not in configured
    built = _run(container, "cmake --build /build -v 2>&1")
    assert "-x hip" in built, built[-4000:]
    # the library links the HIP runtime and needs nothing newer than the sysroot's glibc/libstdc++
    dynamic = _run(container, "readelf -d /build/libkern.so")
    assert "[libamdhip64.so.7]" in dynamic, dynamic
    versions = _run(container, "readelf -V --wide /build/libkern.so | grep -o 'GLIBC[A-Z]*_[0-9][0-9.]*'")
    glibc = _max_version(versions, "GLIBC")
    glibcxx = _max_version(versions, "GLIBCXX")
    assert (2, 2) <= glibc <= (2, 31), versions
    assert (3, 4) <= glibcxx <= (3, 4, 28), versions


def test_compiles_get_no_linker_arguments(container: Any) -> None:
    """A compile through a wrapper gets neither ``-L`` nor ``-Wl,`` (clang would warn that it does
    not use them, and ``-Werror`` builds would fail)."""
    out = _run(container, f"{SYSROOT}/bin/cc -Werror -c -x c /src/probe.c -o /tmp/p.o 2>&1 && echo compiled")
    assert "compiled" in out and "unused" not in out, out
    out = _run(
        container,
        f"{SYSROOT}/bin/clang++ -Werror -x hip --offload-arch=gfx942 -c /src/kern.cu -o /tmp/k.o 2>&1"
        " && echo ok",
    )
    assert "ok" in out and "unused" not in out, out
