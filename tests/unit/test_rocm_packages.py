"""The manylinux_2_28-rocm image's package names and versions against AMD's published metadata, as far
as stored public copies show it (issue 39 part 3): the image cannot be built here (quay.io and
repo.radeon.com are unreachable), so its ROCM_PACKAGES are held to the names of AMD's package table
(install.yaml ``published``: ROCm/rocm-install-on-linux docs/reference/package-manager-integration.rst,
Ubuntu's ``-dev`` spelling, ``-devel`` on RPM systems by the table's own note), and the package versions
seen for 7.2 to the release they name."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from buildkit.rocm import get_release
from buildkit.rocm.install import (
    el8_install,
    package_sets,
    published_names,
    published_runtime,
    published_versions,
)

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "manylinux_2_28-rocm.Dockerfile"
INSTALL_YAML = ROOT / "buildkit" / "rocm" / "install.yaml"


def _dockerfile_packages() -> list[str]:
    match = re.search(r"^ARG ROCM_PACKAGES=(.*)$", DOCKERFILE.read_text(), re.M)
    assert match, "ARG ROCM_PACKAGES not found"
    return shlex.split(match.group(1))[0].split()


def _unpublished(rpms: list[str]) -> list[str]:
    """The RPM names whose name in AMD's table (``-devel`` written ``-dev``) is not in the table; a
    ``-dev`` name is Ubuntu's spelling, never an RPM's."""
    names = set(published_names())
    return [rpm for rpm in rpms if rpm.endswith("-dev") or re.sub(r"-devel$", "-dev", rpm) not in names]


def test_the_dockerfile_installs_only_packages_amd_publishes() -> None:
    packages = _dockerfile_packages()
    assert len(packages) == 21 and "hip-devel" in packages and "rocm-llvm" in packages
    assert _unpublished(packages) == []


def test_every_package_set_is_published_and_a_name_amd_does_not_use_is_caught() -> None:
    for package_set in package_sets().values():
        assert _unpublished(list(package_set.packages)) == [], package_set.name
    # names that look right but are not AMD's: the Ubuntu spelling on EL, Fedora's, a versioned one
    wrong = ["hip-dev", "rocm-hip-devel", "hipblas7.2-devel", "rocblas-dev"]
    assert _unpublished(wrong) == wrong


def test_the_table_source_says_rpm_names_end_in_devel() -> None:
    text = INSTALL_YAML.read_text()
    source = text.split("amd_packages: &amd_packages >-", 1)[1].split("\n  gafime_723", 1)[0]
    flat = " ".join(source.split())
    assert "package-manager-integration.rst" in flat
    assert "On RPM-based systems like RHEL, these packages use a different naming convention and " in flat
    assert "typically end with -devel instead." in flat


def test_every_runtime_package_is_in_the_table() -> None:
    assert set(published_runtime().values()) <= set(published_names())
    assert published_runtime()["libamdhip64"] == "hip-runtime-amd"


def _release_field(patch: str) -> str:
    """AMD's release number in a package version: 7.2.3 -> 70203 (the table: 50400 is ROCm 5.4.0)."""
    major, minor, *rest = (int(x) for x in patch.split("."))
    return f"{major}{minor:02d}{(rest or [0])[0]:02d}"


def test_the_versions_seen_for_7_2_belong_to_7_2_and_to_an_installed_package() -> None:
    rows = published_versions("7.2")
    assert rows, "no version of 7.2 recorded"
    installed = set(el8_install("7.2").packages())
    for row in rows:
        assert row.release in get_release("7.2").patches or row.release.startswith("7.2."), row
        assert row.package in installed, row
        assert row.file.startswith(f"{row.package}{row.release}"), row  # AMD's versioned name
        if row.version is not None:  # a full file name: name, version, release field, el8
            expected = f"{row.package}{row.release}-{row.version}.{_release_field(row.release)}-"
            assert row.file.startswith(expected) and ".el8." in row.file, row
        assert row.source.startswith("third party, not AMD:") or "rocm-install-on-linux" in row.source
    assert _release_field("7.2.3") == "70203" and _release_field("5.4") == "50400"


@pytest.mark.parametrize("rocm", ["7.2", "rocm7.2", "7.2.2"])
def test_versions_are_found_by_any_spelling_of_the_release(rocm: str) -> None:
    assert published_versions(rocm) == published_versions("7.2")
