"""Every runtime image of a ROCm release takes the release's own packages (issue 39, part 2).

A smoke entry's ``packages: [libhipblas3, libhiprand1, librocrand1, ...]`` is installed in a layer over
the runtime image. debian-sid-torch-runtime pinned only a few ROCm names to experimental, so for a 7.2
wheel apt took sid's 6.4 hipRAND/rocRAND/rocSOLVER beside experimental's 7.2 hipBLAS and failed
(``libhiprand1 : Depends: libamdhip64-6 (>= 6.1.5)``, "Unable to satisfy dependencies"). Both runtime
profiles now pin every ROCm package name to the release's suite with docker/rocm-suite.sh.

Real parts: the 7.2 runtime images and Debian's mirror (apt-get install -s: the solution apt would
install, nothing installed).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from buildkit import image as images

pytestmark = pytest.mark.docker

#: hipBLAS, hipRAND, rocRAND, hipBLASLt, rocSOLVER: the runtime packages a 7.2 wheel's smoke names
PACKAGES = ("libhipblas3", "libhiprand1", "librocrand1", "libhipblaslt1", "librocsolver0")
INST = re.compile(r"^Inst (\S+) \((\S+) (\S+)", re.MULTILINE)


@pytest.mark.parametrize("profile", ["debian-sid-rocm-runtime", "debian-sid-torch-runtime"])
def test_the_7_2_runtime_packages_install_from_the_release_suite(docker_client: Any, profile: str) -> None:
    try:
        docker_client.images.get("debian:sid-slim")
    except Exception:
        pytest.fail("base image debian:sid-slim missing: ci/install-docker.sh seeds it", pytrace=False)
    ref = images.ensure_image(
        images.get_profile(profile),
        build_args=images.rocm_build_args(images.get_profile(profile), "7.2"),
        client=docker_client,
        progress=print,
    )
    script = (
        "apt-get update -qq >/dev/null 2>&1; "
        f"apt-get install -s -y --no-install-recommends {' '.join(PACKAGES)} 2>&1"
    )
    output = docker_client.containers.run(str(ref.tag), ["bash", "-c", script], remove=True).decode()
    assert "Unable to satisfy dependencies" not in output, output[-3000:]
    installed = {name: (version, origin) for name, version, origin in INST.findall(output)}
    for package in PACKAGES:
        assert package in installed or f"{package} is already the newest version" in output, output[-3000:]
        if package in installed:
            version, origin = installed[package]
            assert origin.startswith("Debian:experimental") and version.startswith("7.2."), (package, version)
    assert not any(name.startswith("libamdhip64-6") for name in installed), installed
