"""buildkit.policy: auditwheel's installed policy file, read not copied."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from buildkit.errors import UsageError
from buildkit.policy import (
    best_symbol_policy,
    get_policy,
    known_archs,
    parse_platform_tag,
    parse_policy_tag,
    policies,
    policy_for,
    policy_tag,
    split_policy_name,
    split_symbol_version,
    symbol_version_key,
    verdict_policies,
    version_tuple,
)


def _raw() -> list[dict[str, object]]:
    text = resources.files("auditwheel").joinpath("policy").joinpath("manylinux-policy.json").read_text()
    data: list[dict[str, object]] = json.loads(text)
    return data


def test_policies_match_the_installed_auditwheel_file() -> None:
    raw = {str(p["name"]) for p in _raw() if p["name"] == "linux" or "x86_64" in p["symbol_versions"]}  # type: ignore[operator]
    assert {p.name for p in policies("x86_64")} == raw
    prios = [p.priority for p in policies()]
    assert prios == sorted(prios, reverse=True)  # best (most compatible) first
    assert policies()[-1].name == "linux"


def test_manylinux_2_28_ceilings_from_the_file() -> None:
    p = get_policy("manylinux_2_28")
    assert p.tag == "manylinux_2_28_x86_64"
    # the DESIGN facts; CXXABI's table also lists TM_1, which is not a version
    assert p.ceilings() == {"GLIBC": "2.28", "GLIBCXX": "3.4.24", "CXXABI": "1.3.11", "GCC": "7.0.0"}
    assert "libstdc++.so.6" in p.whitelist and "libz.so.1" in p.whitelist
    assert "libamdhip64.so.6" not in p.whitelist


def test_version_comparison_is_numeric() -> None:
    assert version_tuple("2.9") is not None and version_tuple("2.28") is not None
    assert version_tuple("2.9") < version_tuple("2.28")  # type: ignore[operator]
    assert version_tuple("TM_1") is None and version_tuple("PRIVATE") is None
    assert split_symbol_version("GLIBCXX_3.4.29") == ("GLIBCXX", "3.4.29")
    assert symbol_version_key("GLIBC_2.2.5") == (2, 2, 5)
    assert symbol_version_key("GLIBC_PRIVATE") is None


@pytest.mark.parametrize(
    ("needs", "tag"),
    [
        (["GLIBC_2.2.5"], "manylinux_2_5_x86_64"),
        (["GLIBC_2.17", "GLIBCXX_3.4.19"], "manylinux_2_17_x86_64"),
        (["GLIBC_2.34"], "manylinux_2_34_x86_64"),
        (["GLIBC_2.28", "GLIBCXX_3.4.30"], "manylinux_2_35_x86_64"),
        (["CXXABI_1.3.13"], "manylinux_2_34_x86_64"),
        (["GLIBC_PRIVATE"], "linux_x86_64"),
        (["hip_4.2", "FOO_1.0"], "manylinux_2_5_x86_64"),  # prefixes no policy constrains
    ],
)
def test_best_symbol_policy(needs: list[str], tag: str) -> None:
    assert best_symbol_policy(needs).tag == tag


def test_disallowed_names_each_symbol_version() -> None:
    p = get_policy("manylinux_2_28")
    assert p.disallowed(["GLIBC_2.17", "GLIBC_2.34", "GLIBCXX_3.4.29", "GCC_3.0"]) == [
        "GLIBCXX_3.4.29",
        "GLIBC_2.34",
    ]


def test_aliases_and_tags() -> None:
    assert get_policy("manylinux2014").name == "manylinux_2_17"
    assert get_policy("manylinux2014_x86_64").name == "manylinux_2_17"
    assert get_policy("manylinux_2_28_x86_64").name == "manylinux_2_28"
    assert parse_platform_tag("manylinux1_x86_64") == ("manylinux_2_5", "x86_64")
    assert parse_platform_tag("manylinux_2_28_aarch64") == ("manylinux_2_28", "aarch64")
    assert parse_platform_tag("linux_x86_64") is None
    with pytest.raises(UsageError, match="known: manylinux_2_5"):
        get_policy("manylinux_9_99")


def test_musllinux_policies_substitute_the_architectures_libc_soname() -> None:
    raw = json.loads(
        resources.files("auditwheel").joinpath("policy").joinpath("musllinux-policy.json").read_text()
    )
    assert {p.name for p in policies("x86_64", "musl")} == {str(p["name"]) for p in raw}
    assert get_policy("musllinux_1_2").whitelist == {"libc.musl-x86_64.so.1", "libz.so.1"}
    assert "libc.musl-armv7.so.1" in policies("armv7l", "musl")[0].whitelist
    assert all(p.libc == "musl" and not p.ceilings() for p in policies("aarch64", "musl"))
    # musl has no symbol versions: the verdict is the newest musllinux policy, as auditwheel show's
    assert [p.name for p in verdict_policies("x86_64", "musl")] == ["musllinux_1_2", "linux"]
    assert best_symbol_policy([], "x86_64", "musl").tag == "musllinux_1_2_x86_64"
    assert parse_policy_tag("musllinux_1_2_aarch64") == ("musllinux_1_2", "aarch64", "musl")
    assert parse_policy_tag("manylinux2014_ppc64le") == ("manylinux_2_17", "ppc64le", "glibc")
    assert parse_policy_tag("linux_x86_64") is None and parse_platform_tag("musllinux_1_2_x86_64") is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("manylinux_2_28", ("manylinux_2_28", None)),
        ("manylinux2014_aarch64", ("manylinux_2_17", "aarch64")),
        ("manylinux_2_29", ("manylinux_2_29", None)),  # PEP 600, no entry in the file
        ("manylinux_2_42_ppc64le", ("manylinux_2_42", "ppc64le")),
        ("musllinux_1_2", ("musllinux_1_2", None)),
        ("linux_x86_64", ("linux", "x86_64")),
    ],
)
def test_policy_names(name: str, expected: tuple[str, str | None]) -> None:
    assert split_policy_name(name) == expected


@pytest.mark.parametrize("name", ["manylinux_2_x", "manylinux", "foolinux_1_2", "manylinux_2_28_sparc64", ""])
def test_garbage_policy_names_are_usage_errors(name: str) -> None:
    with pytest.raises(UsageError, match="musllinux_X_Y"):
        split_policy_name(name)


def test_a_pep600_name_between_two_policies_takes_the_lower_ones_rules_and_its_glibc() -> None:
    pol, note = policy_for("manylinux_2_30", "x86_64")
    lower = get_policy("manylinux_2_28")
    assert note is None and (pol.name, pol.basis, pol.tag) == (
        "manylinux_2_30",
        "manylinux_2_28",
        "manylinux_2_30_x86_64",
    )
    assert pol.ceilings() == {**lower.ceilings(), "GLIBC": "2.30"}
    assert pol.whitelist == lower.whitelist and pol.disallowed(["GLIBC_2.30", "GLIBC_2.31"]) == ["GLIBC_2.31"]
    # stricter than manylinux_2_31, looser than manylinux_2_28
    order = sorted([get_policy("manylinux_2_31"), pol, lower], key=lambda p: p.strictness)
    assert [p.name for p in order] == ["manylinux_2_31", "manylinux_2_30", "manylinux_2_28"]


def test_a_pep600_name_beyond_the_file_is_judged_by_its_edge_with_a_note() -> None:
    newest = policies("x86_64")[-2]
    pol, note = policy_for("manylinux_2_99", "x86_64")
    assert pol.basis == newest.name and pol.ceilings() == newest.ceilings()
    assert note is not None and f"judged as {newest.name}" in note
    pol, note = policy_for("manylinux_2_5", "aarch64")  # aarch64 starts at manylinux_2_17
    assert pol.basis == "manylinux_2_17" and note is not None and "GLIBC up to 2.5" in note
    assert pol.disallowed(["GLIBC_2.17"]) == ["GLIBC_2.17"]
    assert policy_for("musllinux_1_9", "x86_64")[0].basis == "musllinux_1_2"
    assert policy_for("manylinux_2_28", "x86_64") == (get_policy("manylinux_2_28"), None)


def test_known_architectures() -> None:
    assert {"x86_64", "i686", "aarch64", "ppc64le", "ppc64", "s390x", "armv7l", "riscv64"} <= known_archs()
    assert "ppc64" not in known_archs("musl")


def test_policy_tag() -> None:
    assert policy_tag("manylinux2014") == get_policy("manylinux2014").tag == "manylinux_2_17_x86_64"
    assert policy_tag("manylinux_2_29_aarch64") == "manylinux_2_29_aarch64"
    assert policy_tag("musllinux_1_2", "armv7l") == "musllinux_1_2_armv7l"
    with pytest.raises(UsageError):
        policy_tag("manylinux_two")
