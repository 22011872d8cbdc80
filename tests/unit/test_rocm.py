"""The ROCm knowledge data (buildkit/rocm/*.yaml) and its loader."""

from __future__ import annotations

import fnmatch

import pytest

from buildkit import rocm
from buildkit.errors import UsageError

REQUIRED = ["5.7", "6.0", "6.1", "6.2", "6.3", "6.4", "7.0", "7.1", "7.2"]


def test_every_release_from_5_7_to_7_2_is_known_and_ordered() -> None:
    versions = [r.version for r in rocm.releases()]
    for v in REQUIRED:
        assert v in versions
    assert versions == sorted(versions, key=rocm.version_key)


@pytest.mark.parametrize("version", REQUIRED)
def test_release_rows_cite_sources_and_official_targets_are_accepted(version: str) -> None:
    release = rocm.get_release(version)
    assert release.official_source and release.library_source and release.torch_source
    assert set(release.official) <= set(release.archs)
    assert not set(release.withheld) & set(release.archs)
    processors = {rocm.processor_of(t) for t in release.library_targets}
    assert set(release.archs) <= processors | set(release.official)
    assert list(release.archs) == sorted(release.archs, key=rocm.processor_sort_key)


def test_minimum_releases_of_the_known_facts() -> None:
    assert rocm.min_release_for("gfx950") == "7.0"
    assert rocm.min_release_for("gfx950:sramecc+") == "7.0"
    assert rocm.min_release_for("gfx942") == "6.0"
    assert rocm.min_release_for("gfx908") == "5.2"  # the oldest release of the data (bookworm's)
    assert rocm.min_release_for("gfx1032") is None
    assert "gfx942" in rocm.get_release("5.7").withheld
    assert "gfx950" not in rocm.get_release("6.4").archs
    assert "gfx950" in rocm.get_release("7.0").archs
    assert rocm.get_release("6.4").arch_min_release["gfx942"] == "6.0"


@pytest.mark.parametrize(
    ("text", "expected"), [("6.4", "6.4"), ("6.4.1", "6.4"), ("rocm7.2", "7.2"), ("7.0.2", "7.0")]
)
def test_get_release_accepts_patch_versions(text: str, expected: str) -> None:
    assert rocm.get_release(text).version == expected


@pytest.mark.parametrize("text", ["9.9", "5.6", "seven", ""])
def test_unknown_release_lists_the_known_ones(text: str) -> None:
    with pytest.raises(rocm.UnknownRelease) as info:
        rocm.get_release(text)
    assert isinstance(info.value, UsageError)
    assert "5.7" in str(info.value) and "7.2" in str(info.value)


def test_rocm_globs_match_versioned_and_unversioned_sonames() -> None:
    globs = rocm.exclude_globs(["rocm"], "7.2")
    for soname in [
        "libamdhip64.so.7",
        "libamdhip64.so.6",
        "libamdhip64.so",
        "librocblas.so.5",
        "librocblas.so.4",
        "libhipblas.so.3",
        "libhipblaslt.so.1",
        "libhsa-runtime64.so.1",
        "libamd_comgr.so.3",
        "libMIOpen.so.1",
        "librccl.so.1",
        "libroctx64.so.4",
        "librocprofiler-sdk.so.1",
        "librocprofiler64.so.2",
        "librocm_smi64.so.7",
        "libamd_smi.so.26",
        "libhiprtc.so.7",
        "librocsolver.so.0",
        "libhipsparse.so.4",
        "librocfft.so.0",
        "libhiprand.so.1",
    ]:
        assert rocm.matches(soname, globs), soname
    for soname in ["libc.so.6", "libstdc++.so.6", "libdrm_amdgpu.so.1", "libnuma.so.1", "libtorch.so"]:
        assert not rocm.matches(soname, globs), soname


def test_a_glob_never_swallows_a_sibling_library() -> None:
    assert not fnmatch.fnmatchcase("libhipblaslt.so.1", "libhipblas.so*")
    libs = rocm.library_sets()["rocm"].libraries
    for lib in libs:
        for other in libs:
            if other is not lib and not other.name.startswith(lib.name):
                assert not fnmatch.fnmatchcase(f"{other.name}.so.1", lib.glob), (lib.glob, other.name)


def test_torch_and_system_sets() -> None:
    torch = rocm.exclude_globs(["torch"])
    for soname in [
        "libtorch.so",
        "libtorch_cpu.so",
        "libtorch_hip.so",
        "libtorch_python.so",
        "libc10.so",
        "libc10_hip.so",
        "libshm.so",
        "libcaffe2_nvrtc.so",
    ]:
        assert rocm.matches(soname, torch), soname
    assert not rocm.matches("libamdhip64.so.6", torch)
    system = rocm.exclude_globs(["rocm-system"])
    assert rocm.matches("libdrm_amdgpu.so.1", system) and rocm.matches("libnuma.so.1", system)


def test_library_shipped_since_a_release_is_left_out_before() -> None:
    assert "librocroller.so*" not in rocm.exclude_globs(["rocm"], "6.4")
    assert "librocroller.so*" in rocm.exclude_globs(["rocm"], "7.0")
    assert "librocroller.so*" in rocm.exclude_globs(["rocm"])  # no release: everything


def test_unknown_set_is_refused() -> None:
    with pytest.raises(
        rocm.UnknownRelease, match=r"unknown runtime-library set 'cuda'.*rocm, rocm-system, torch"
    ):
        rocm.exclude_globs(["cuda"])


@pytest.mark.parametrize(
    ("release", "lib", "soname"),
    [
        ("6.4", "libamdhip64", "libamdhip64.so.6"),
        ("7.2", "libamdhip64", "libamdhip64.so.7"),
        ("6.0", "librocblas", "librocblas.so.4"),
        ("7.0", "librocblas", "librocblas.so.5"),
        ("5.7", "librocblas", "librocblas.so.3"),
        ("6.4", "libhipblaslt", "libhipblaslt.so.0"),
        ("7.1", "libhipblaslt", "libhipblaslt.so.1"),
        ("7.0", "libamd_comgr", "libamd_comgr.so.3"),
    ],
)
def test_expected_sonames(release: str, lib: str, soname: str) -> None:
    assert rocm.expected_sonames(release)[lib] == soname


def test_sonames_not_confirmed_are_absent_not_guessed() -> None:
    assert "librocprofiler" not in rocm.expected_sonames("6.4")
    assert "libamd_smi" not in rocm.expected_sonames("7.2")


def test_runtime_libraries_of_a_release() -> None:
    assert "librocblas.so*" in rocm.get_release("6.4").runtime_libraries


@pytest.mark.parametrize(
    ("release", "torch", "index"),
    [
        ("6.2", "2.5", "https://download.pytorch.org/whl/rocm6.2"),
        ("6.2", "2.7.1", "https://download.pytorch.org/whl/rocm6.2.4"),
        ("6.4", "2.9", "https://download.pytorch.org/whl/rocm6.4"),
        ("7.1", "2.10", "https://download.pytorch.org/whl/rocm7.1"),
        ("6.4", "2.10", None),
        ("7.2", "2.10", None),
    ],
)
def test_torch_index_for(release: str, torch: str, index: str | None) -> None:
    assert rocm.get_release(release).torch_index_for(torch) == index


def test_torch_index_is_none_where_no_index_is_confirmed() -> None:
    assert rocm.get_release("7.2").torch_index is None
    assert rocm.get_release("7.2").unverified
    assert rocm.get_release("6.4").torch_index == "https://download.pytorch.org/whl/rocm6.4"


def test_toolchains_model_debian() -> None:
    trixie = rocm.get_toolchain("debian-trixie")
    assert trixie.rocm == "5.7"
    assert {"gfx908", "gfx90a", "gfx942", "gfx1100"} <= set(trixie.archs)
    assert "gfx950" not in trixie.archs and "gfx1200" not in trixie.archs
    bookworm = rocm.get_toolchain("debian-bookworm")
    assert "gfx940" in bookworm.archs and "gfx942" not in bookworm.archs
    with pytest.raises(rocm.UnknownToolchain, match="debian-trixie"):
        rocm.get_toolchain("ubuntu")


def test_sort_key_orders_by_generation() -> None:
    names = ["gfx1201", "gfx90a", "gfx942", "gfx1030", "gfx908", "gfx9-generic", "gfx1100", "gfx950"]
    assert sorted(names, key=rocm.processor_sort_key) == [
        "gfx908",
        "gfx90a",
        "gfx942",
        "gfx950",
        "gfx9-generic",
        "gfx1030",
        "gfx1100",
        "gfx1201",
    ]


def test_loader_rejects_inconsistent_rows() -> None:
    row = {
        "version": "9.0",
        "llvm": "x",
        "official": ["gfx942"],
        "official_source": "s",
        "library_targets": ["gfx942"],
        "library_source": "s",
        "withheld": {"gfx942": "later"},
        "torch": {"pytorch_org": [], "amd": [], "source": "s"},
    }
    with pytest.raises(ValueError, match="both official and withheld"):
        rocm._release(row)
    row["withheld"] = {}
    row["torch"] = {"pytorch_org": [], "amd": []}
    with pytest.raises(ValueError, match="need a source"):
        rocm._release(row)


def test_to_json_carries_sources() -> None:
    data = rocm.get_release("6.4").to_json()
    assert data["version"] == "6.4"
    assert all(lib["source"] for lib in data["runtime_libraries"])
    assert {"index": "https://download.pytorch.org/whl/rocm6.4", "torch": ["2.8", "2.9"]} in data["torch"][
        "pytorch_org"
    ]
