"""The contract probe on a real image lacking a ROCm library (issue 39 part 3): a tiny image built here
from debian:trixie-slim (no network: one RUN making a ROCm prefix with libamdhip64.so.7 and without
rocBLAS), probed in a throwaway container with the manylinux_2_28-rocm contract for ROCm 7.2; the gap
names the SONAME and AMD's package. The image is removed at the end."""

from __future__ import annotations

import io
import os
from typing import Any

import docker.errors
import pytest

from buildkit.image.contract import image_contract
from buildkit.image.probe import Contract, problems, run_probe
from buildkit.profiles import get_profile

pytestmark = pytest.mark.docker

BASE = "debian:trixie-slim"  # the debian-rocm profile's base: in the engine wherever that image is built
TINY = f"""\
FROM {BASE}
RUN mkdir -p /opt/rocm/lib /opt/rocm/bin \\
 && : > /opt/rocm/lib/libamdhip64.so.7
ENV ROCM_PATH=/opt/rocm
"""


def test_a_real_image_without_rocblas_is_refused_naming_the_soname_and_package(docker_client: Any) -> None:
    try:
        docker_client.images.get(BASE)
    except docker.errors.ImageNotFound:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{BASE} is not in the engine")
        pytest.skip(f"{BASE} is not in the engine")
    tag = f"rocm-buildkit-test/contract-tiny:{os.getpid()}"
    docker_client.images.build(fileobj=io.BytesIO(TINY.encode()), tag=tag, rm=True, network_mode="none")
    try:
        image = image_contract(
            get_profile("manylinux_2_28-rocm"), "7.2", ["hip-devel", "hipcc", "rocblas-devel"]
        )
        contract = Contract.of(["cp312"], ["gfx942"], image=image)
        found = run_probe(docker_client, tag, contract)
        gaps = problems(found, contract)
    finally:
        docker_client.images.remove(tag, force=True)
    assert found["lib:libamdhip64.so.7"] == ("ok", "/opt/rocm/lib/libamdhip64.so.7")
    folders = " or ".join(image.libdirs)
    assert f"librocblas.so.5 (librocblas of ROCm 7.2) in {folders}: install rocblas" in gaps
    assert "a HIP compiler: hipcc on PATH or in $ROCM_PATH/bin (/opt/rocm/bin/hipcc: install hipcc)" in gaps
    assert not any("libamdhip64" in gap for gap in gaps), gaps
