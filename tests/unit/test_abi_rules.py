"""buildkit.gate.rules.abi: auditwheel's blacklist, pyfpe and x86 ISA rules on ElfInfo data, with the
policies of the installed auditwheel (buildkit.policy)."""

from __future__ import annotations

import pytest

from buildkit.gate.rules.abi import (
    AbiPolicies,
    abi_policies,
    blacklisted,
    check_abi,
    held_to,
    isa_level,
)
from buildkit.inspect import ElfInfo
from buildkit.policy import Policy, get_policy, linux_policy, policies


def elf(member: str = "pkg/_ext.so", *, needed: tuple[str, ...] = ("libc.so.6",), **kw: object) -> ElfInfo:
    base = ElfInfo(member, "x86_64", 64, None, needed, (), (), {})
    return base._replace(**kw)  # type: ignore[arg-type]


def pol(name: str) -> Policy:
    return get_policy(name)


def zlib_user(isa: int | None = None) -> ElfInfo:
    return elf(needed=("libc.so.6", "libz.so.1"), undefined_of_interest=("uncompress2",), x86_isa_needed=isa)


def test_uncompress2_is_blacklisted_up_to_manylinux_2_31() -> None:
    # the premise, read from auditwheel's policy file: 2_31 blacklists it, 2_34 does not
    assert "uncompress2" in pol("manylinux_2_31").blacklist["libz.so.1"]
    assert "uncompress2" not in pol("manylinux_2_34").blacklist["libz.so.1"]
    assert blacklisted(zlib_user(), pol("manylinux_2_28")) == [("libz.so.1", "uncompress2")]
    assert blacklisted(zlib_user(), pol("manylinux_2_34")) == []


def test_blacklist_needs_the_library_in_dt_needed() -> None:
    no_libz = elf(undefined_of_interest=("uncompress2",))  # e.g. zlib linked statically
    assert blacklisted(no_libz, pol("manylinux_2_28")) == []
    assert abi_policies([no_libz], "x86_64").blacklist == policies("x86_64")[0]


def test_blacklist_finding_and_tag() -> None:
    verdict = check_abi([zlib_user()], "x86_64", held=[pol("manylinux_2_28"), pol("manylinux2014")])
    (finding,) = verdict.findings
    assert (finding.rule, finding.severity, finding.file, finding.library, finding.symbol) == (
        "blacklist",
        "error",
        "pkg/_ext.so",
        "libz.so.1",
        "uncompress2",
    )
    assert "manylinux_2_17, manylinux_2_28" in finding.message and "manylinux_2_34_x86_64" in finding.message
    assert verdict.policies.blacklist.name == "manylinux_2_34"
    assert verdict.policies.overall.name == "manylinux_2_34"
    assert verdict.policies.lowered_by() == ("blacklist",)
    assert check_abi([zlib_user()], "x86_64", held=[pol("manylinux_2_34")]).findings == ()


def test_weak_or_absent_reference_is_clean() -> None:
    clean = elf(needed=("libz.so.1",))  # the inspection lists no undefined name of interest
    verdict = check_abi([clean], "x86_64", held=[pol("manylinux_2_17")])
    assert verdict.findings == () and verdict.policies.lowered_by() == ()
    assert verdict.policies.overall == policies("x86_64")[0]


def test_wildcard_blacklists_every_user_of_the_library() -> None:
    strict = pol("manylinux_2_28")._replace(blacklist={"libfoo.so.1": frozenset({"*"})})
    user = elf(needed=("libfoo.so.1",))
    (finding,) = check_abi([user], "x86_64", held=[strict], candidates=[strict, linux_policy()]).findings
    assert finding.symbol == "*" and "needs libfoo.so.1" in finding.message


def test_pyfpe() -> None:
    fpe = elf(undefined_of_interest=("PyFPE_jbuf",))
    verdict = check_abi([elf("pkg/ok.so"), fpe], "x86_64", held=[pol("manylinux_2_28")])
    (finding,) = verdict.findings
    assert (finding.rule, finding.file, finding.symbol) == ("pyfpe", "pkg/_ext.so", "PyFPE_jbuf")
    assert verdict.policies.pyfpe.name == "linux" and verdict.policies.lowered_by() == ("pyfpe",)


@pytest.mark.parametrize(
    ("mask", "level"),
    [
        (None, None),
        (0b1, None),
        (0b11, "x86-64-v2"),
        (0b111, "x86-64-v3"),
        (0b10, "x86-64-v2"),
        (0b1000, "x86-64-v4"),
        (0b1111, "x86-64-v4"),
        (0x10, "unknown ISA bits 0x10"),
    ],
)
def test_isa_levels(mask: int | None, level: str | None) -> None:
    assert isa_level(mask) == level


def test_x86_isa_above_baseline() -> None:
    v3 = elf(x86_isa_needed=0b111)
    verdict = check_abi([v3], "x86_64", held=[pol("manylinux_2_28")])
    (finding,) = verdict.findings
    assert (finding.rule, finding.symbol) == ("x86-isa", "x86-64-v3")
    assert "0x7" in finding.message and "manylinux_2_28" in finding.message
    assert verdict.policies.isa.name == "linux" and verdict.policies.overall.name == "linux"
    baseline = check_abi([elf(x86_isa_needed=0b1)], "x86_64", held=[pol("manylinux_2_28")])
    assert baseline.findings == () and baseline.policies.lowered_by() == ()


def test_isa_applies_to_x86_64_only() -> None:
    arm = elf(x86_isa_needed=0b111)._replace(machine="aarch64")
    verdict = check_abi([arm], "aarch64", held=[get_policy("manylinux_2_28", "aarch64")])
    assert verdict.findings == () and verdict.policies.isa == policies("aarch64")[0]


def test_nothing_held_lowers_the_tag_without_errors() -> None:
    both = zlib_user(isa=0b111)
    verdict = check_abi([both], "x86_64", held=[None, linux_policy()])
    assert verdict.findings == ()
    assert verdict.policies.lowered_by() == ("blacklist", "x86-isa")
    assert verdict.policies.overall.name == "linux"


def test_held_to_merges_and_orders() -> None:
    got = held_to([pol("manylinux_2_28"), None, pol("manylinux2014"), pol("manylinux_2_28"), linux_policy()])
    assert [p.name for p in got] == ["manylinux_2_17", "manylinux_2_28"]


def test_overall_is_the_worst_rule() -> None:
    best, mid, low = policies("x86_64")[0], pol("manylinux_2_34"), linux_policy()
    assert AbiPolicies(mid, best, best, best).overall == mid
    assert AbiPolicies(mid, best, low, best).overall == low
    assert AbiPolicies(mid, best, low, best).lowered_by() == ("blacklist", "x86-isa")
