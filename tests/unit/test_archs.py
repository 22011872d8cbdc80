"""Target ids (buildkit/targets.py) and arch resolution (buildkit/plan/archs.py)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from buildkit import rocm
from buildkit.errors import ArchError
from buildkit.plan.archs import host_enumerator, resolve
from buildkit.targets import (
    TargetId,
    known_processors,
    parse_target_id,
    processor_suggestions,
    split_arch_list,
)

NO_ENV: dict[str, str] = {}


def no_gpu() -> list[str]:
    return []


def calls_forbidden() -> list[str]:
    raise AssertionError("rocm_agent_enumerator must not run when a higher-precedence source is set")


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("gfx90a", "gfx90a"),
        ("gfx90a:xnack-", "gfx90a:xnack-"),
        ("gfx90a:xnack-:sramecc+", "gfx90a:sramecc+:xnack-"),
        ("GFX942", "gfx942"),
        ("gfx1201", "gfx1201"),
        ("gfx9-4-generic:xnack+", "gfx9-4-generic:xnack+"),
        (" gfx906:sramecc- ", "gfx906:sramecc-"),
    ],
)
def test_parse_target_id_canonicalises(text: str, canonical: str) -> None:
    assert str(parse_target_id(text)) == canonical


def test_target_id_parts() -> None:
    assert parse_target_id("gfx90a:xnack-") == TargetId("gfx90a", ("xnack-",))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sm_80", "expected an AMDGPU processor"),
        ("gfx", "expected an AMDGPU processor"),
        ("gfx90a;rm -rf", "expected an AMDGPU processor"),
        ("gfx90a:xnack", "must look like xnack+"),
        ("gfx90a:wavefrontsize64+", "not a target-ID feature"),
        ("gfx1100:xnack-", "gfx1100 does not support the xnack feature"),
        ("gfx900:sramecc+", "gfx900 does not support the sramecc feature"),
        ("gfx90a:xnack+:xnack-", "feature xnack given twice"),
    ],
)
def test_parse_target_id_rejects_garbage_naming_it(text: str, message: str) -> None:
    with pytest.raises(ArchError) as info:
        parse_target_id(text)
    assert repr(text.strip()) in str(info.value) or text in str(info.value)
    assert message in str(info.value)


def test_split_arch_list_accepts_the_common_separators() -> None:
    assert split_arch_list(" gfx908;gfx90a, gfx942\ngfx1100  ") == ["gfx908", "gfx90a", "gfx942", "gfx1100"]
    assert split_arch_list(";;") == []


def test_the_issue_example_drops_gfx950_on_6_4() -> None:
    env = {"PYTORCH_ROCM_ARCH": "gfx908;gfx90a;gfx942;gfx950"}
    result = resolve(rocm="6.4", env=env, enumerator=calls_forbidden)
    assert [str(t) for t in result.kept] == ["gfx908", "gfx90a", "gfx942"]
    assert [(d.arch, d.reason) for d in result.dropped] == [
        ("gfx950", "dropped: needs ROCm >= 7.0, pinned 6.4")
    ]
    assert result.source == "PYTORCH_ROCM_ARCH"
    assert "gfx950: dropped: needs ROCm >= 7.0, pinned 6.4" in result.trail


def test_same_request_on_7_0_keeps_gfx950() -> None:
    result = resolve(rocm="7.0", cli_archs="gfx908;gfx90a;gfx942;gfx950", env=NO_ENV, enumerator=no_gpu)
    assert result.pytorch_rocm_arch() == "gfx908;gfx90a;gfx942;gfx950"
    assert result.dropped == ()


def test_amd_5_7_drops_gfx942_with_its_reason() -> None:
    result = resolve(rocm="5.7", cli_archs="gfx90a gfx942", env=NO_ENV, enumerator=no_gpu)
    (dropped,) = result.dropped
    assert dropped.arch == "gfx942"
    assert dropped.reason.startswith("dropped: needs ROCm >= 6.0, pinned 5.7 (")


def test_arch_no_release_supports() -> None:
    result = resolve(rocm="6.4", cli_archs="gfx1032;gfx90a", env=NO_ENV, enumerator=no_gpu)
    assert [str(d) for d in result.dropped] == ["gfx1032: dropped: not supported by ROCm 6.4"]


ENV_ALL = {"PYTORCH_ROCM_ARCH": "gfx942", "GPU_ARCHS": "gfx1100"}


@pytest.mark.parametrize(
    ("kwargs", "env", "enumerator", "source", "kept"),
    [
        ({"cli_archs": "gfx908"}, ENV_ALL, calls_forbidden, "--archs", ["gfx908"]),
        ({"recipe_archs": ["gfx90a"]}, ENV_ALL, calls_forbidden, "recipe", ["gfx90a"]),
        ({}, ENV_ALL, calls_forbidden, "PYTORCH_ROCM_ARCH", ["gfx942"]),
        ({}, {"GPU_ARCHS": "gfx1100"}, calls_forbidden, "GPU_ARCHS", ["gfx1100"]),
        ({}, NO_ENV, lambda: ["gfx000", "gfx90a", "gfx90a"], "rocm_agent_enumerator", ["gfx90a"]),
        ({}, {"PYTORCH_ROCM_ARCH": " ", "GPU_ARCHS": "gfx1030"}, calls_forbidden, "GPU_ARCHS", ["gfx1030"]),
        ({"cli_archs": "gfx908", "recipe_archs": ["gfx90a"]}, NO_ENV, calls_forbidden, "--archs", ["gfx908"]),
    ],
)
def test_source_precedence(
    kwargs: dict[str, object],
    env: dict[str, str],
    enumerator: Callable[[], list[str]],
    source: str,
    kept: list[str],
) -> None:
    result = resolve(rocm="6.4", env=env, enumerator=enumerator, **kwargs)  # type: ignore[arg-type]
    assert result.source == source
    assert [str(t) for t in result.kept] == kept


def test_enumerator_gfx000_is_ignored_and_noted() -> None:
    result = resolve(rocm="6.4", env=NO_ENV, enumerator=lambda: ["gfx000", "gfx942"])
    assert any("gfx000 (the CPU agent) ignored" in line for line in result.trail)


def test_no_source_at_all_is_an_arch_error() -> None:
    with pytest.raises(ArchError, match="no GPU arch requested: pass --archs"):
        resolve(rocm="6.4", env=NO_ENV, enumerator=lambda: ["gfx000"])


def test_env_defaults_to_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTORCH_ROCM_ARCH", "gfx90a")
    monkeypatch.delenv("GPU_ARCHS", raising=False)
    assert resolve(rocm="6.4", enumerator=calls_forbidden).pytorch_rocm_arch() == "gfx90a"


def test_normalise_dedupes_and_sorts() -> None:
    result = resolve(
        rocm="7.0", cli_archs="gfx1100;gfx942;gfx908;GFX908;gfx90a", env=NO_ENV, enumerator=no_gpu
    )
    assert result.pytorch_rocm_arch() == "gfx908;gfx90a;gfx942;gfx1100"
    assert any("listed more than once" in line for line in result.trail)


def test_xnack_variants_are_kept_and_bare_duplicate_dropped() -> None:
    result = resolve(
        rocm="6.4", cli_archs="gfx90a;gfx90a:xnack-;gfx90a:xnack+", env=NO_ENV, enumerator=no_gpu
    )
    assert result.gpu_archs() == "gfx90a:xnack+;gfx90a:xnack-"
    (dropped,) = result.dropped
    assert dropped.arch == "gfx90a" and "clang rejects" in dropped.reason


def test_conflicting_feature_sets_are_an_error() -> None:
    with pytest.raises(ArchError, match="conflicting target IDs for gfx90a"):
        resolve(rocm="6.4", cli_archs="gfx90a:xnack-;gfx90a:sramecc+", env=NO_ENV, enumerator=no_gpu)


def test_garbage_names_its_source() -> None:
    with pytest.raises(ArchError, match=r"invalid GPU arch 'cuda'.*\(from GPU_ARCHS\)"):
        resolve(rocm="6.4", env={"GPU_ARCHS": "gfx90a;cuda"}, enumerator=no_gpu)


def test_allow_list() -> None:
    result = resolve(
        rocm="7.0",
        cli_archs="gfx90a:xnack-;gfx942;gfx1100",
        allow=["gfx90a", "gfx942"],
        env=NO_ENV,
        enumerator=no_gpu,
    )
    assert result.pytorch_rocm_arch() == "gfx90a:xnack-;gfx942"
    assert [str(d) for d in result.dropped] == [
        "gfx1100: dropped: not in the recipe's allow-list (gfx90a, gfx942)"
    ]
    with pytest.raises(ArchError, match="allowed by the recipe: gfx90a:xnack-"):
        resolve(rocm="7.0", cli_archs="gfx90a:xnack+", allow=["gfx90a:xnack-"], env=NO_ENV, enumerator=no_gpu)


def test_empty_result_names_what_was_asked_and_what_is_supported() -> None:
    with pytest.raises(ArchError) as info:
        resolve(rocm="6.4", cli_archs="gfx950", env=NO_ENV, enumerator=no_gpu)
    text = str(info.value)
    assert "asked gfx950 (from --archs)" in text
    assert "needs ROCm >= 7.0, pinned 6.4" in text
    assert "Supported: gfx900, gfx906, gfx908, gfx90a, gfx942" in text


def test_toolchain_replaces_the_release_list_and_is_named() -> None:
    trixie = rocm.get_toolchain("debian-trixie")
    result = resolve(
        rocm="5.7",
        cli_archs="gfx908;gfx90a;gfx942;gfx1100;gfx950",
        toolchain_archs=trixie.archs,
        toolchain=trixie.id,
        env=NO_ENV,
        enumerator=no_gpu,
    )
    assert result.pytorch_rocm_arch() == "gfx908;gfx90a;gfx942;gfx1100"
    assert [str(d) for d in result.dropped] == [
        "gfx950: dropped: not compilable by toolchain debian-trixie (ROCm 5.7)"
    ]


def test_toolchain_of_a_release_without_amd_data() -> None:
    bookworm = rocm.get_toolchain("debian-bookworm")
    result = resolve(
        rocm=bookworm.rocm,
        cli_archs="gfx90a;gfx942",
        toolchain_archs=bookworm.archs,
        toolchain=bookworm.id,
        env=NO_ENV,
        enumerator=no_gpu,
    )
    assert result.rocm == "5.2"
    assert [d.arch for d in result.dropped] == ["gfx942"]


def test_unknown_release_without_toolchain() -> None:
    with pytest.raises(rocm.UnknownRelease):
        resolve(rocm="5.1", cli_archs="gfx90a", env=NO_ENV, enumerator=no_gpu)


def test_outputs() -> None:
    result = resolve(rocm="6.4", cli_archs="gfx942;gfx90a:xnack-", env=NO_ENV, enumerator=no_gpu)
    assert result.offload_arch_flags() == ["--offload-arch=gfx90a:xnack-", "--offload-arch=gfx942"]
    assert result.cmake_hip_architectures() == "gfx90a:xnack-;gfx942"
    data = result.to_json()
    assert data["kept"] == ["gfx90a:xnack-", "gfx942"]
    assert data["PYTORCH_ROCM_ARCH"] == data["GPU_ARCHS"] == "gfx90a:xnack-;gfx942"
    assert data["rocm"] == "6.4" and data["source"] == "--archs" and data["dropped"] == []


def _fake_enumerator(bin_dir: Path, body: str) -> None:
    exe = bin_dir / "rocm_agent_enumerator"
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)


def test_host_enumerator_runs_the_real_program_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No AMD GPU on this machine: a stand-in script plays rocm_agent_enumerator; the subprocess is real.
    _fake_enumerator(tmp_path, "printf 'gfx000\\ngfx90a\\n'")
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ.get("PATH", ""))
    assert host_enumerator() == ["gfx000", "gfx90a"]
    assert resolve(rocm="6.4", env=NO_ENV).pytorch_rocm_arch() == "gfx90a"


def test_host_enumerator_failing_or_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert host_enumerator() == []
    _fake_enumerator(tmp_path, "exit 3")
    assert host_enumerator() == []


# ---------------------------------------------------------------- processors LLVM knows


@pytest.mark.parametrize(
    ("text", "suggestions"),
    [
        ("gfx905", "did you mean gfx950, gfx90a or gfx908?"),
        ("gfx1300", "did you mean gfx1200, gfx1100 or gfx1030?"),
    ],
)
def test_unknown_processor_is_an_arch_error_with_suggestions(text: str, suggestions: str) -> None:
    with pytest.raises(ArchError) as info:
        parse_target_id(text)
    assert str(info.value) == f"invalid GPU arch {text!r}: {text} is not an AMDGPU processor; {suggestions}"
    assert info.value.exit_code == 4


@pytest.mark.parametrize("name", ["gfx1152", "gfx940", "gfx12-generic", "gfx600"])
def test_processors_llvm_knows_beyond_the_rocm_data_parse(name: str) -> None:
    assert str(parse_target_id(name)) == name


def test_every_processor_in_the_rocm_data_is_one_llvm_defines() -> None:
    """The releases, toolchains and target-ID features name only processors of LLVM's
    EF_AMDGPU_MACH table (a typo such as gfx9050 in the data would fail here)."""
    from buildkit.targets import MACH_NAMES

    named = {a for r in rocm.releases() for a in (*r.official, *r.archs)}
    named |= {rocm.processor_of(t) for r in rocm.releases() for t in r.library_targets}
    named |= {a for t in rocm.toolchains() for a in t.archs}
    named |= {p for ps in rocm.feature_processors().values() for p in ps}
    assert named - set(MACH_NAMES.values()) == set()
    assert named <= known_processors()


def test_unknown_processor_from_the_environment_names_its_source() -> None:
    with pytest.raises(
        ArchError, match=r"gfx905 is not an AMDGPU processor; did you mean .*\(from GPU_ARCHS\)"
    ):
        resolve(rocm="7.0", env={"GPU_ARCHS": "gfx942;gfx905"}, enumerator=no_gpu)


def test_suggestions_prefer_processors_some_release_supports() -> None:
    # gfx90c (an APU no release supports) is as close to gfx90b as gfx90a is
    assert processor_suggestions("gfx90b")[0] in {a for r in rocm.releases() for a in r.archs}


# ---------------------------------------------------------------- arch variables that lose


def test_gpu_archs_ignored_under_pytorch_rocm_arch_is_explained_and_warned() -> None:
    env = {"PYTORCH_ROCM_ARCH": "gfx942;gfx950", "GPU_ARCHS": "gfx90a"}
    result = resolve(rocm="7.2", env=env, enumerator=calls_forbidden)
    assert result.source == "PYTORCH_ROCM_ARCH"
    assert "source GPU_ARCHS=gfx90a: set but ignored (PYTORCH_ROCM_ARCH takes precedence)" in result.trail
    assert result.warnings == (
        "GPU_ARCHS=gfx90a: set but ignored (PYTORCH_ROCM_ARCH takes precedence: gfx942;gfx950)",
    )
    assert result.to_json()["warnings"] == list(result.warnings)


def test_same_list_spelled_differently_is_explained_but_not_warned() -> None:
    env = {"PYTORCH_ROCM_ARCH": "gfx942;gfx950", "GPU_ARCHS": "GFX950, gfx942"}
    result = resolve(rocm="7.2", env=env, enumerator=calls_forbidden)
    assert any(line.startswith("source GPU_ARCHS=GFX950;gfx942: set but ignored") for line in result.trail)
    assert result.warnings == ()


def test_recipe_list_overriding_both_variables_warns_for_each() -> None:
    env = {"PYTORCH_ROCM_ARCH": "gfx90a", "GPU_ARCHS": "gfx1100", "UNRELATED": "gfx908"}
    result = resolve(rocm="7.0", recipe_archs=["gfx942"], env=env, enumerator=calls_forbidden)
    assert result.warnings == (
        "PYTORCH_ROCM_ARCH=gfx90a: set but ignored (the recipe's archs.list takes precedence: gfx942)",
        "GPU_ARCHS=gfx1100: set but ignored (the recipe's archs.list takes precedence: gfx942)",
    )
    cli = resolve(rocm="7.0", cli_archs="gfx942", env={"GPU_ARCHS": "gfx1100"}, enumerator=calls_forbidden)
    assert cli.warnings == ("GPU_ARCHS=gfx1100: set but ignored (--archs takes precedence: gfx942)",)


def test_empty_or_absent_variables_are_not_warned() -> None:
    result = resolve(rocm="7.0", cli_archs="gfx942", env={"GPU_ARCHS": " "}, enumerator=calls_forbidden)
    assert result.warnings == ()
    assert not [line for line in result.trail if "ignored (" in line]


def test_unverified_release_data_is_in_the_trail() -> None:
    result = resolve(rocm="7.2", cli_archs="gfx942", env=NO_ENV, enumerator=no_gpu)
    (text,) = rocm.get_release("7.2").unverified
    assert f"ROCm 7.2 data marked unverified: {text}" in result.trail
    plain = resolve(rocm="6.4", cli_archs="gfx942", env=NO_ENV, enumerator=no_gpu)
    assert not [line for line in plain.trail if "unverified" in line]
