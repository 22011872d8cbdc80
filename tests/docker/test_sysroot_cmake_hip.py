"""The compatibility sysroots (glibc2.31, glibc2.28) in the ROCm 7.2 builder (debian-sid-rocm), by
every compiler route a build uses: CMake's HIP language (the toolchain file), hipcc (its
``HIPCC_*_FLAGS_APPEND``) and the plain cc/c++ wrappers.

CMake identifies a HIP compiler by compiling and linking an executable with it. Under the sysroot
that link failed: libamdhip64 needs glibc symbols newer than the sysroot's 2.31
(pthread_attr_getguardsize@GLIBC_2.34) and libhsa-runtime64.so.1, which the sysroot's library folder
does not hold. CMake then reported "The HIP compiler identification is unknown", compiled ``.cu``
files without ``-x hip`` and clang refused ``--offload-arch=gfx942`` as a CUDA architecture (seen
with pywhispercpp's ggml-hip). The wrappers of docker/sysroot.sh now give a link
``--allow-shlib-undefined`` (what the ROCm libraries need is the runtime's business, as it already
is for shared libraries), and nothing to a compile.

glibc2.28 is bullseye's sysroot with zig's link stubs of glibc 2.28's libraries (docker/glibc-stubs.sh):
``exp`` binds GLIBC_2.2.5 (GLIBC_2.29 under glibc2.31, GLIBC_2.29+ without a sysroot: the control),
and ``gettid`` (glibc 2.30, declared by bullseye's headers) is a link error naming the function and the
sysroot on every route, even for a shared library, where an undefined symbol is otherwise allowed.

Real parts only: the builder image and the environment a build sets (``cibw.sysroot_environment`` of
a planned job). The container has no network and no host mount: the sources go in with
``put_archive``.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from buildkit import image as images
from buildkit import profiles
from buildkit.building import cibw
from buildkit.plan.expansion import expand
from buildkit.recipe import parse_recipe

pytestmark = pytest.mark.docker

POLICY = {"glibc2.31": "manylinux_2_31", "glibc2.28": "manylinux_2_28"}
CEILING = {"glibc2.31": (2, 31), "glibc2.28": (2, 28)}
CMAKELISTS = """\
cmake_minimum_required(VERSION 3.21)
project(sysroothip LANGUAGES C CXX)
enable_language(HIP)
message(STATUS "HIP compiler id: [${CMAKE_HIP_COMPILER_ID}]")
add_library(kern SHARED kern.cu)
set_source_files_properties(kern.cu PROPERTIES LANGUAGE HIP)
add_executable(probe probe.c)
if(WITH_TID)
  add_library(tid SHARED tid.cpp)
endif()
if(WITH_OPENMP)
  find_package(OpenMP REQUIRED COMPONENTS CXX)
  message(STATUS "OpenMP CXX: [${OpenMP_CXX_FLAGS}] [${OpenMP_CXX_LIB_NAMES}]")
  add_library(threads SHARED threads.cpp)
  target_link_libraries(threads PRIVATE OpenMP::OpenMP_CXX)
endif()
"""
KERNEL = """\
#include <hip/hip_runtime.h>
#include <cmath>
#include <string>
__global__ void add_one(float* x) { x[threadIdx.x] += 1.0f; }
extern "C" int launch(float* x, const char* n) {
  hipLaunchKernelGGL(add_one, dim3(1), dim3(std::stoi(n)), 0, 0, x);
  return hipGetLastError() == hipSuccess ? 0 : 1;
}
extern "C" double grow(double x) { return std::exp(x) + std::log(x) + std::pow(x, x); }
"""
PROBE = "int main(void) { return 0; }\n"
TID = """\
#include <unistd.h>
extern "C" int tid(void) { return (int)gettid(); }
"""
THREADS = """\
#include <omp.h>
extern "C" int threads(int size) {
  int n = 0;
#pragma omp parallel for reduction(+ : n) schedule(dynamic)
  for (int i = 0; i < size; ++i) n += i % 3;
  return n + omp_get_max_threads();
}
"""


def _tar(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"src/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _build_environment(sysroot: str, tmp: Path) -> dict[str, str]:
    """What a build of a 7.2 job with ``manylinux.sysroot: SYSROOT`` sets for its compilers."""
    recipe = parse_recipe(
        f"name: demo\nsource: {{path: .}}\nversion: {{base: '1'}}\npython: ['3.13']\nrocm: ['7.2']\n"
        f"archs: {{list: [gfx942]}}\nmanylinux: {{policy: {POLICY[sysroot]}, sysroot: {sysroot}}}\n"
        "image: debian-sid-rocm\n",
        path=tmp / "r.yaml",
    )
    job = expand(recipe, env={}, enumerator=lambda: []).jobs[0]
    env = cibw.sysroot_environment(job, "/usr")
    env["PATH"] = env["PATH"].replace("$PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


@pytest.fixture(scope="module")
def image(docker_client: Any) -> str:
    try:
        docker_client.images.get("debian:sid-slim")
    except Exception:
        pytest.fail("base image debian:sid-slim missing: ci/install-docker.sh seeds it", pytrace=False)
    profile = profiles.get_profile("debian-sid-rocm")
    ref = images.ensure_image(
        profile, build_args=profile.release_build_args("7.2"), client=docker_client, progress=print
    )
    return str(ref.tag)


@pytest.fixture(scope="module", params=["glibc2.31", "glibc2.28"])
def container(
    request: pytest.FixtureRequest, image: str, docker_client: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Any, str]]:
    sysroot = request.param
    box = docker_client.containers.create(
        image,
        command=["sleep", "infinity"],
        network_disabled=True,
        working_dir="/",
        environment={
            **_build_environment(sysroot, tmp_path_factory.mktemp(sysroot)),
            "ROCM_PATH": "/usr",
            "HIP_PLATFORM": "amd",
        },
    )
    try:
        box.start()
        files = {
            "CMakeLists.txt": CMAKELISTS,
            "kern.cu": KERNEL,
            "probe.c": PROBE,
            "tid.cpp": TID,
            "threads.cpp": THREADS,
        }
        assert box.put_archive("/", _tar(files))
        yield box, sysroot
    finally:
        box.remove(force=True)


def _exec(box: Any, script: str) -> tuple[int, str]:
    result = box.exec_run(["bash", "-c", script])
    return result.exit_code, result.output.decode(errors="replace")


def _run(box: Any, script: str) -> str:
    code, output = _exec(box, script)
    assert code == 0, output[-6000:]
    return output


def _max_version(listing: str, prefix: str) -> tuple[int, ...]:
    """The highest ``PREFIX_x.y.z`` version in readelf's listing, () when there is none."""
    found = [word.split("_", 1)[1] for word in listing.split() if word.split("_", 1)[0] == prefix]
    return max((tuple(int(part) for part in v.split(".")) for v in found), default=())


def _versions(box: Any, path: str) -> str:
    return _run(box, f"readelf -V --wide {path} | grep -o 'GLIBC[A-Z]*_[0-9][0-9.]*' | sort -u")


def test_cmake_identifies_the_hip_compiler_and_links_under_the_sysroot(container: tuple[Any, str]) -> None:
    box, sysroot = container
    configured = _run(box, "cmake -S /src -B /build -DCMAKE_HIP_ARCHITECTURES=gfx942 2>&1")
    assert "HIP compiler id: [Clang]" in configured, configured[-4000:]
    assert "identification is unknown" not in configured
    built = _run(box, "cmake --build /build -v 2>&1")
    assert "-x hip" in built and f"--sysroot=/opt/buildkit/sysroots/{sysroot}" in built, built[-4000:]
    # the library links the HIP runtime and needs nothing newer than the sysroot's glibc/libstdc++
    dynamic = _run(box, "readelf -d /build/libkern.so")
    assert "[libamdhip64.so.7]" in dynamic, dynamic
    versions = _versions(box, "/build/libkern.so")
    glibc = _max_version(versions, "GLIBC")
    glibcxx = _max_version(versions, "GLIBCXX")
    assert (2, 2) <= glibc <= CEILING[sysroot], versions
    assert (3, 4) <= glibcxx <= ((3, 4, 24) if sysroot == "glibc2.28" else (3, 4, 28)), versions
    # exp/log/pow: a new version from glibc 2.29 on; glibc 2.28's ABI binds the old one
    exp = _run(box, "readelf --dyn-syms --wide /build/libkern.so | grep -o ' exp@GLIBC_[0-9.]*'").strip()
    assert exp == ("exp@GLIBC_2.2.5" if sysroot == "glibc2.28" else "exp@GLIBC_2.29"), exp


def test_compiles_get_no_linker_arguments(container: tuple[Any, str]) -> None:
    """A compile through a wrapper gets neither ``-L`` nor ``-Wl,`` (clang would warn that it does
    not use them, and ``-Werror`` builds would fail)."""
    box, sysroot = container
    bindir = f"/opt/buildkit/sysroots/{sysroot}/bin"
    out = _run(box, f"{bindir}/cc -Werror -c -x c /src/probe.c -o /tmp/p.o 2>&1 && echo compiled")
    assert "compiled" in out and "unused" not in out, out
    out = _run(
        box,
        f"{bindir}/clang++ -Werror -x hip --offload-arch=gfx942 -c /src/kern.cu -o /tmp/k.o 2>&1 && echo ok",
    )
    assert "ok" in out and "unused" not in out, out


def test_a_function_newer_than_the_sysroot_is_a_link_error_on_every_route(container: tuple[Any, str]) -> None:
    """``gettid`` (glibc 2.30): under glibc2.28 the c++ wrapper, hipcc and CMake each fail the link of a
    shared library calling it, naming the function, its glibc and the sysroot; under glibc2.31 it links
    and needs GLIBC_2.30 (the control: the same source, the same routes)."""
    box, sysroot = container
    routes = {
        "c++": "c++ -shared -fPIC /src/tid.cpp -o /tmp/libtid-cxx.so",
        "hipcc": "hipcc -shared -fPIC --offload-arch=gfx942 -x hip /src/tid.cpp -o /tmp/libtid-hipcc.so",
        "cmake": "cmake -S /src -B /build-tid -DWITH_TID=ON -DCMAKE_HIP_ARCHITECTURES=gfx942 >/dev/null"
        " && cmake --build /build-tid --target tid",
    }
    for route, command in routes.items():
        code, output = _exec(box, f"{command} 2>&1")
        if sysroot == "glibc2.28":
            assert code != 0, (route, output[-3000:])
            named = "gettid is glibc 2.30's (GLIBC_2.30): the sysroot glibc2.28 links against glibc 2.28"
            assert named in output, (route, output[-3000:])
        else:
            assert code == 0, (route, output[-3000:])
    if sysroot == "glibc2.31":
        assert "GLIBC_2.30" in _versions(box, "/tmp/libtid-cxx.so")


def test_libstdcxx_keeps_to_what_the_sysroot_glibc_has(container: tuple[Any, str]) -> None:
    """std::condition_variable's wait_until on the steady clock: GCC 10's headers call
    pthread_cond_clockwait (glibc 2.30) when configured on glibc >= 2.30; under glibc2.28 they fall back
    to pthread_cond_timedwait, as a GCC configured on glibc 2.28 does, and the library links."""
    box, sysroot = container
    source = (
        "#include <chrono>\\n#include <condition_variable>\\n#include <mutex>\\n"
        "std::mutex m; std::condition_variable cv;\\n"
        'extern \\"C\\" int wait_a_bit() { std::unique_lock<std::mutex> l(m);\\n'
        "  return cv.wait_for(l, std::chrono::milliseconds(1)) == std::cv_status::timeout; }\\n"
    )
    _run(box, f'printf "{source}" > /tmp/cv.cpp && c++ -shared -fPIC /tmp/cv.cpp -o /tmp/libcv.so')
    symbols = _run(box, "readelf --dyn-syms --wide /tmp/libcv.so")
    clockwait = "pthread_cond_clockwait" in symbols
    assert clockwait == (sysroot == "glibc2.31"), symbols


def test_cmake_finds_openmp_under_the_sysroot(container: tuple[Any, str]) -> None:
    """find_package(OpenMP) under the sysroot: clang's -fopenmp needs LLVM's libomp (it generates no
    code for GCC's libgomp), which no sysroot held, so CMake found no OpenMP and a project's CPU backend
    was built without threads, a warning in the job log the only trace (seen with a third-party
    scikit-build-core project). Each sysroot now holds LLVM 21's libomp built for manylinux_2_28
    (cmeel-libomp, sysroot-openmp.txt): found, linked, within the sysroot's glibc (libomp.so itself needs
    GLIBC_2.14 at most: auditwheel grafts it), and every OpenMP entry point clang 22 emits is in it."""
    box, sysroot = container
    configured = _run(
        box, "cmake -S /src -B /build-omp -DWITH_OPENMP=ON -DCMAKE_HIP_ARCHITECTURES=gfx942 2>&1"
    )
    assert "Found OpenMP_CXX: -fopenmp=libomp" in configured, configured[-3000:]
    assert "OpenMP CXX: [-fopenmp=libomp] [omp" in configured, configured[-3000:]
    _run(box, "cmake --build /build-omp --target threads 2>&1")
    assert "[libomp.so]" in _run(box, "readelf -d /build-omp/libthreads.so")
    assert _max_version(_versions(box, "/build-omp/libthreads.so"), "GLIBC") <= CEILING[sysroot]
    libomp = f"/opt/buildkit/sysroots/{sysroot}/usr/lib/x86_64-linux-gnu/libomp.so"
    assert _max_version(_versions(box, libomp), "GLIBC") <= (2, 14)
    wanted = _run(box, "readelf --dyn-syms --wide /build-omp/libthreads.so | awk '$7 == \"UND\" {print $8}'")
    listing = _run(box, f"nm -D --defined-only {libomp}")
    defined = {line.split()[-1].split("@")[0] for line in listing.splitlines() if line.strip()}
    needed = {w.split("@")[0] for w in wanted.split() if w.startswith(("__kmpc", "omp_"))}
    assert "__kmpc_dispatch_deinit" in needed and needed <= defined, needed - defined
