"""Builder images on the real engine: build/reuse, the toolchain inside, HIP device code, errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from buildkit import image as images
from buildkit.image import seed

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]

KERNEL = r"""
#include <hip/hip_runtime.h>
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
extern "C" __global__ void scale(float a, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= a;
}
extern "C" int launch(float a, const float* x, float* y, int n) {
  hipLaunchKernelGGL(axpy, dim3((n + 255) / 256), dim3(256), 0, 0, a, x, y, n);
  return hipGetLastError() == hipSuccess ? 0 : 1;
}
"""


def run_in(client: Any, image: str, script: str, env: dict[str, str] | None = None) -> str:
    """Run ``bash -c script`` in a fresh container (no mounts); its output, or fail with it."""
    container = client.containers.run(
        image, ["bash", "-c", script], environment=env or {}, detach=True, network_disabled=True
    )
    try:
        status = container.wait(timeout=600)
        output: str = container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)
    assert status["StatusCode"] == 0, output
    return output


def test_image_is_built_then_reused(docker_client: Any, debian_rocm_image: images.ImageRef) -> None:
    lines: list[str] = []
    start = time.monotonic()
    again = images.ensure_image(
        images.get_profile("debian-rocm"), client=docker_client, progress=lines.append
    )
    assert time.monotonic() - start < 30
    assert again.built is False
    assert again.tag == debian_rocm_image.tag and again.id == debian_rocm_image.id
    assert any(line.startswith("reusing ") for line in lines)
    labels = docker_client.images.get(again.tag).labels
    assert labels[images.LABEL_PROFILE] == "debian-rocm"
    assert again.tag.endswith(":" + labels[images.LABEL_CONTENT])
    listed = [info for info in images.list_images(docker_client) if again.tag in info.tags]
    assert listed and listed[0].current and listed[0].profile == "debian-rocm"


def test_toolchain_inside(docker_client: Any, debian_rocm_image: images.ImageRef) -> None:
    script = "; ".join(
        [
            "set -e",
            "hipcc --version",
            "py=/opt/python/cp313-cp313/bin/python",
            "$py -c 'import build, setuptools, wheel; print(\"build\", build.__version__)'",
            "util=/opt/python/cp39-cp39/bin/python",
            "$util -c 'import build, os, sys; print(os.path.realpath(sys.prefix))'",
            "auditwheel --version",
            "patchelf --version",
            "ccache --version",
            "echo HIP_PLATFORM=$HIP_PLATFORM ROCM_PATH=$ROCM_PATH AUDITWHEEL_PLAT=$AUDITWHEEL_PLAT",
        ]
    )
    out = run_in(docker_client, debian_rocm_image.tag, script)
    assert "HIP version: 5.7" in out and "clang version 17" in out
    assert "build 1.6.1" in out
    assert "/opt/python/cp313-cp313" in out  # the cp39 utility interpreter is the cp313 venv
    assert "auditwheel 6.8.2" in out
    assert "patchelf 0.18" in out
    assert "ccache version 4" in out
    assert "HIP_PLATFORM=amd ROCM_PATH=/usr AUDITWHEEL_PLAT=manylinux_2_41_x86_64" in out


def test_auditwheel_plat_is_a_real_policy(docker_client: Any, debian_rocm_image: images.ImageRef) -> None:
    out = run_in(docker_client, debian_rocm_image.tag, "auditwheel repair --help")
    assert "manylinux_2_41_x86_64" in out


def test_hip_kernel_for_three_archs(docker_client: Any, debian_rocm_image: images.ImageRef) -> None:
    archs = ("gfx908", "gfx90a", "gfx942")
    flags = " ".join(f"--offload-arch={a}" for a in archs)
    script = (
        "set -e; mkdir -p /tmp/k && cd /tmp/k && cat > k.hip <<'EOF'\n"
        + KERNEL
        + "\nEOF\n"
        + "; ".join(
            [
                f"start=$(date +%s%N); hipcc -O2 -fPIC -shared {flags} k.hip -o libk.so",
                "echo compile_ms=$(( ($(date +%s%N) - start) / 1000000 ))",
                "readelf -S -W libk.so | grep -c hip_fatbin",
                "grep -ao 'hipv4-amdgcn-amd-amdhsa--gfx[0-9a-z]*' libk.so | sort -u",
                "readelf -d libk.so | grep NEEDED",
            ]
        )
    )
    start = time.monotonic()
    out = run_in(docker_client, debian_rocm_image.tag, script, env={"HIP_PLATFORM": "amd"})
    elapsed = time.monotonic() - start
    compile_ms = next(line for line in out.splitlines() if line.startswith("compile_ms="))
    print(f"hipcc for {', '.join(archs)}: {compile_ms}; with a fresh container: {elapsed:.1f} s")
    for arch in archs:
        assert f"hipv4-amdgcn-amd-amdhsa--{arch}" in out
    assert "libamdhip64.so" in out


def test_failed_build_reports_the_step_and_the_log(
    docker_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "docker"
    shutil.copytree(REPO / "docker", broken)
    dockerfile = broken / "debian-rocm.Dockerfile"
    dockerfile.write_text(
        "ARG BASE_IMAGE=debian:trixie-slim\nFROM ${BASE_IMAGE}\nRUN echo about to fail && exit 3\n"
    )
    monkeypatch.setenv("BUILDKIT_DOCKER_DIR", str(broken))
    log = tmp_path / "build.log"
    env = {**os.environ, "BUILDKIT_DOCKER_DIR": str(broken)}
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", "image", "build", "debian-rocm", "--log", str(log)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 9, proc.stderr
    assert "about to fail" in proc.stderr  # streamed live
    assert "returned a non-zero code: 3" in proc.stderr
    assert str(log) in proc.stderr
    assert "about to fail" in log.read_text()
    tag, _ = images.resolve_tag(docker_client, images.get_profile("debian-rocm"))
    assert not docker_client.images.list(name=tag)


def test_dead_docker_host_exits_8() -> None:
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", "image", "ls"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 8
    assert "no Docker engine answers at unix:///nonexistent/docker.sock" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_seed_keeps_an_existing_base(docker_client: Any) -> None:
    before = docker_client.images.get("debian:trixie-slim").id
    result = seed.seed_base("debian:trixie-slim", client=docker_client)
    assert result.created is False and result.id == before
