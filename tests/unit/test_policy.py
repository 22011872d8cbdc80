"""buildkit.policy: auditwheel's installed policy file, read not copied."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from buildkit.errors import UsageError
from buildkit.policy import (
    best_symbol_policy,
    get_policy,
    parse_platform_tag,
    policies,
    split_symbol_version,
    symbol_version_key,
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
