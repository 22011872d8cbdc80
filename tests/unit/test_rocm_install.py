"""How the manylinux_2_28-rocm image installs each ROCm release (buildkit/rocm/install.yaml): the exact
repository URLs and package lists, against the sources each row cites, and the Dockerfile that consumes
them. AMD's repositories cannot be reached here: the URLs are compared with the text of AMD's install
pages and PyTorch's install_rocm.sh (quoted below), and the Dockerfile's repo-file step is run by bash
on this machine, not by dnf.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from buildkit import image as images
from buildkit import rocm
from buildkit.errors import UsageError
from buildkit.rocm import UnknownRelease
from buildkit.rocm.install import el8_install, el8_installs, gpg_key, package_sets, repo_directory

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "manylinux_2_28-rocm.Dockerfile"
PROFILE = "manylinux_2_28-rocm"

#: release -> (ROCm repository, graphics repository), as the cited pages write them:
#:  7.2: AMD's rendered Oracle Linux page (latest, 2026-04-22), EL 8 tab, verbatim;
#:  7.1: package-manager-rhel.rst's 7.x template, rocm/el{{ os_major }}/|rocm_version|/main and
#:       graphics/|rocm_version|/el/{{ os_major }}/main/x86_64/, with 8 and 7.1.1;
#:  7.0: the 7.0_rc1 page's RHEL 8.10 tab (rocm/el8/7.0_rc1/main, graphics/7.0_rc1/rhel/8.10/main/x86_64/)
#:       with 7.0.2;
#:  6.4: the 6.x rhel.rst template, rocm/rhel{{ os_release }}/|rocm_version|/main and
#:       amdgpu/|rocm_version|/rhel/{{ os_version }}/main/x86_64/, with 8, 8.10 and 6.4.3.
EXPECTED_URLS = {
    "6.4": (
        "https://repo.radeon.com/rocm/rhel8/6.4.3/main",
        "https://repo.radeon.com/amdgpu/6.4.3/rhel/8.10/main/x86_64/",
    ),
    "7.0": (
        "https://repo.radeon.com/rocm/el8/7.0.2/main",
        "https://repo.radeon.com/graphics/7.0.2/rhel/8.10/main/x86_64/",
    ),
    "7.1": (
        "https://repo.radeon.com/rocm/el8/7.1.1/main",
        "https://repo.radeon.com/graphics/7.1.1/el/8/main/x86_64/",
    ),
    "7.2": (
        "https://repo.radeon.com/rocm/el8/7.2.2/main",
        "https://repo.radeon.com/graphics/7.2.1/el/8/main/x86_64/",
    ),
}

#: what every image installs, in order: the HIP compiler; the headers ATen/hip/HIPContext.h pulls in
#: (the hipified aten/src/ATen/cuda/CUDAContextLight.h: cusparse.h, cublas_v2.h, cublasLt.h, and
#: hipsolver/hipsolver.h under USE_ROCM); the BLAS/SOLVER/SPARSE backends, RAND, CUB/PRIM, Thrust, FFT, RCCL
EXPECTED_PACKAGES = [
    "hip-devel",
    "hipcc",
    "rocm-llvm",
    "rocm-device-libs",
    "rocm-core",
    "rocminfo",
    "hipblas-devel",
    "hipblaslt-devel",
    "hipsparse-devel",
    "hipsolver-devel",
    "rocblas-devel",
    "rocsolver-devel",
    "rocsparse-devel",
    "hiprand-devel",
    "rocrand-devel",
    "hipcub-devel",
    "rocprim-devel",
    "rocthrust-devel",
    "hipfft-devel",
    "rocfft-devel",
    "rccl-devel",
]


def _built_releases() -> list[str]:
    """The releases the production image is built for: 6.4 and every legacy 7.x in releases.yaml (TheRock's
    7.14 and 10.0 are another stream, with other packages)."""
    return [
        r.version
        for r in rocm.releases()
        if r.stream == "legacy" and (r.version == "6.4" or rocm.version_key(r.version).major >= 7)
    ]


def test_every_production_release_has_install_data() -> None:
    assert (
        _built_releases() == [i.rocm for i in el8_installs()] == sorted(EXPECTED_URLS, key=rocm.version_key)
    )


@pytest.mark.parametrize(
    ("version", "directory"),
    [
        ("7.1.0", "7.1"),
        ("7.2.0", "7.2"),
        ("7.0.2", "7.0.2"),
        ("6.4.0", "6.4"),
        ("6.4.3", "6.4.3"),
        ("7.10.0", "7.10"),
    ],
)
def test_repository_directories_have_no_trailing_zero(version: str, directory: str) -> None:
    assert repo_directory(version) == directory


def test_a_version_that_is_not_one_is_refused() -> None:
    with pytest.raises(ValueError, match="not a release version"):
        repo_directory("7.1_rc1")


@pytest.mark.parametrize("release", sorted(EXPECTED_URLS))
def test_the_rendered_urls_are_the_sources(release: str) -> None:
    install = el8_install(release)
    assert (install.rocm_repo, install.graphics_repo) == EXPECTED_URLS[release]
    assert not re.search(r"/\d+\.\d+\.0/", install.rocm_repo + install.graphics_repo)
    assert install.version == rocm.get_release(release).patches[-1], "the newest known patch is installed"
    major = rocm.version_key(release).major
    if major >= 7:  # AMD's ROCm 7 layout: rocm/el8/ + graphics/
        assert "/rocm/el8/" in install.rocm_repo and "/graphics/" in install.graphics_repo
    else:  # 6.x: rocm/rhel8/ + amdgpu/
        assert "/rocm/rhel8/" in install.rocm_repo and "/amdgpu/" in install.graphics_repo


@pytest.mark.parametrize("release", sorted(EXPECTED_URLS))
def test_a_row_is_verified_only_where_its_source_shows_both_urls(release: str) -> None:
    """A row without `unverified:` must cite a source that contains its two URLs verbatim."""
    install = el8_install(release)
    if install.unverified is None:
        assert install.rocm_repo in install.source and install.graphics_repo in install.source
    else:
        assert len(install.unverified) > 40  # says why


@pytest.mark.parametrize("release", sorted(EXPECTED_URLS))
def test_the_package_list_covers_what_torch_extensions_include(release: str) -> None:
    install = el8_install(release)
    assert list(install.packages()) == EXPECTED_PACKAGES
    assert list(install.packages(extra=("miopen-hip-devel", "hipblas-devel"))) == [
        *EXPECTED_PACKAGES,
        "miopen-hip-devel",
    ]
    with pytest.raises(UnknownRelease, match="unknown package set 'cuda'"):
        install.packages(("compiler", "cuda"))


def test_every_package_set_and_the_key_cite_a_source() -> None:
    for package_set in package_sets().values():
        assert package_set.source and package_set.packages
    assert gpg_key() == "https://repo.radeon.com/rocm/rocm.gpg.key"
    # the source of the key quotes it
    text = (ROOT / "buildkit" / "rocm" / "install.yaml").read_text()
    assert "gpgkey=https://repo.radeon.com/rocm/rocm.gpg.key" in text
    assert "gpgkey=http://repo.radeon.com/rocm/rocm.gpg.key" in text  # PyTorch's install_rocm.sh


def test_a_release_without_install_data_is_a_usage_error() -> None:
    with pytest.raises(UnknownRelease, match=r"no EL8 install data for ROCm 6\.1 .* installs 6\.4, 7\.0"):
        el8_install("6.1")
    with pytest.raises(UsageError):
        images.rocm_build_args(images.get_profile(PROFILE), "6.1")


# --------------------------------------------------------------------------- into the image
def _arg_defaults() -> dict[str, str]:
    text = DOCKERFILE.read_text()
    found: dict[str, str] = {}
    for match in re.finditer(r"^ARG (\w+)=(.*)$", text, re.M):
        found[match.group(1)] = shlex.split(match.group(2))[0]
    return found


@pytest.mark.parametrize("release", sorted(EXPECTED_URLS))
def test_the_build_arguments_are_the_data(release: str) -> None:
    install = el8_install(release)
    assert images.rocm_build_args(images.get_profile(PROFILE), release) == {
        "ROCM_VERSION": install.version,
        "ROCM_REPO": EXPECTED_URLS[release][0],
        "GRAPHICS_REPO": EXPECTED_URLS[release][1],
        "ROCM_GPG_KEY": "https://repo.radeon.com/rocm/rocm.gpg.key",
        "ROCM_PACKAGES": " ".join(EXPECTED_PACKAGES),
    }
    declared = images.profile_build_args(images.get_profile(PROFILE))
    assert set(images.rocm_build_args(images.get_profile(PROFILE), release, ["gfx942"])) <= set(declared)


def test_the_dockerfile_defaults_are_the_newest_release() -> None:
    """`docker build` without buildkit gets the same image as `buildkit image build --rocm <newest>`."""
    newest = el8_installs()[-1]
    defaults = _arg_defaults()
    for name, value in images.rocm_build_args(images.get_profile(PROFILE), newest.rocm).items():
        assert defaults[name] == value, name
    assert images.profile_rocm_args(images.get_profile(PROFILE), None, {}) == images.rocm_build_args(
        images.get_profile(PROFILE), newest.rocm
    )


def test_the_image_keeps_the_kernels_of_the_served_archs_only() -> None:
    args = images.rocm_build_args(
        images.get_profile(PROFILE), "7.2", ["gfx950", "gfx90a:xnack-", "gfx942", "gfx90a:xnack+"]
    )
    assert args["KEEP_GFX_ARCHS"] == "gfx90a;gfx942;gfx950"
    assert "KEEP_GFX_ARCHS" not in images.rocm_build_args(images.get_profile(PROFILE), "7.2")
    assert _arg_defaults()["KEEP_GFX_ARCHS"] == "all"
    other = images.effective_build_args(images.get_profile(PROFILE), {**args, "KEEP_GFX_ARCHS": "gfx942"})
    assert other != images.effective_build_args(images.get_profile(PROFILE), args)  # another image


def test_image_build_takes_the_release_not_its_version_argument() -> None:
    with pytest.raises(UsageError, match=r"use --rocm RELEASE \(e\.g\. --rocm 7\.1\)"):
        images.profile_rocm_args(images.get_profile(PROFILE), None, {"ROCM_VERSION": "7.1.1"})
    mirrored = images.profile_rocm_args(
        images.get_profile(PROFILE), "6.4", {"ROCM_REPO": "https://mirror.example/rocm/rhel8/6.4.3/main"}
    )
    assert mirrored["ROCM_REPO"] == "https://mirror.example/rocm/rhel8/6.4.3/main"
    assert mirrored["ROCM_VERSION"] == "6.4.3"
    assert images.profile_rocm_args(images.get_profile("debian-rocm"), "5.7", {}) == {}
    with pytest.raises(UsageError, match=r"provides ROCm 5\.7 only"):
        images.profile_rocm_args(images.get_profile("debian-rocm"), "7.2", {})
    with pytest.raises(UsageError, match="drop --rocm"):
        images.profile_rocm_args(images.get_profile("debian-runtime"), "7.2", {})


def _repo_file_step() -> str:
    """The Dockerfile's `printf ... > /etc/yum.repos.d/rocm.repo` step, as a shell command."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    match = re.search(r"printf '%s\\n' (.*?) > /etc/yum\.repos\.d/rocm\.repo", text)
    assert match, "the repo file step was not found"
    return f"printf '%s\\n' {match.group(1)}"


@pytest.mark.parametrize("release", sorted(EXPECTED_URLS))
def test_the_dockerfile_writes_the_repo_file_of_the_data(release: str) -> None:
    install = el8_install(release)
    args = images.rocm_build_args(images.get_profile(PROFILE), release)
    proc = subprocess.run(
        ["bash", "-c", _repo_file_step()], env=args, capture_output=True, text=True, check=True, timeout=30
    )
    assert proc.stdout == install.repo_file()
    assert f"baseurl={EXPECTED_URLS[release][0]}\n" in proc.stdout
    assert "skip_if_unavailable=1" in proc.stdout.split("[amdgraphics]")[1]  # only the optional one
    assert "skip_if_unavailable" not in proc.stdout.split("[amdgraphics]")[0]


def test_the_dockerfile_installs_the_packages_argument_and_keeps_the_repositories() -> None:
    text = DOCKERFILE.read_text()
    assert re.search(r"dnf install -y --setopt=install_weak_deps=False ccache \$\{ROCM_PACKAGES\}", text)
    # a recipe's image.packages layer runs dnf over this image: AMD's repositories must stay registered
    assert "rm /etc/yum.repos.d/rocm.repo" not in text and "rm -f /etc/yum.repos.d" not in text
