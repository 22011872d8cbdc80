"""Agreement with ``auditwheel show --json`` beyond x86_64 glibc ceilings, on wheels built here with
gcc (x86_64) and clang-19 + lld (other architectures, musl): symbol versions of every prefix a
policy lists (LIBATOMIC, ZLIB, GLIBC_ABI_DT_RELR), libraries ld.so does not find inside the wheel,
PEP 600 tags auditwheel has no policy for, every architecture auditwheel knows, and musllinux.

Where the gate adds a rule auditwheel show does not have (a configured policy, the file name's
tags), the test checks the rule is consistent with auditwheel's verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import testwheels

from buildkit.gate.config import GateConfig, JobIdentity
from buildkit.gate.evaluate import evaluate
from buildkit.gate.verdict import Verdict
from buildkit.inspect import inspect_wheel
from buildkit.policy import get_policy


def ours(wheel: Path, config: GateConfig | None = None) -> Verdict:
    return evaluate(inspect_wheel(wheel), config or GateConfig())


def agree(wheel: Path, config: GateConfig | None = None) -> Verdict:
    """Our verdict, after asserting it equals auditwheel's sym_tag, overall_tag and external_libs."""
    code, aw = testwheels.auditwheel_show(wheel)
    assert code == 0 and aw["pure"] is False, aw
    v = ours(wheel, config)
    assert (v.sym_tag, v.overall_tag) == (aw["sym_tag"], aw["overall_tag"])
    assert v.external_libraries() == sorted(aw["external_libs"])
    return v


@pytest.fixture(scope="module")
def cross(toolchain: None) -> None:
    # Debian's clang-19 and lld-19 (./dev installs them): missing means a broken environment
    if not testwheels.have_cross_toolchain():
        pytest.fail("these agreement tests need clang-19 and ld.lld (apt-get install clang-19 lld-19)")


# --------------------------------------------------------------------------- every prefix, every version
@pytest.mark.parametrize(
    ("build", "policy", "version", "sym_tag"),
    [
        (testwheels.atomic16, "manylinux2014", "LIBATOMIC_1.0", "manylinux_2_24_x86_64"),
        (testwheels.zlib_new, "manylinux_2_24", "ZLIB_1.2.9", "manylinux_2_27_x86_64"),
        (testwheels.dt_relr, "manylinux_2_28", "GLIBC_ABI_DT_RELR", "manylinux_2_36_x86_64"),
    ],
)
def test_a_configured_policy_refuses_every_version_auditwheel_places_above_it(
    build: Callable[[Path], Path], policy: str, version: str, sym_tag: str, tmp_path: Path, toolchain: None
) -> None:
    wheel = build(tmp_path)
    code, aw = testwheels.auditwheel_show(wheel)
    assert code == 0 and aw["sym_tag"] == sym_tag
    assert any(version in versions for versions in aw["versioned_symbols"].values())
    v = ours(wheel, GateConfig(policy=policy))
    assert v.sym_tag == aw["sym_tag"]
    assert v.external_libraries() == sorted(aw["external_libs"])
    # what auditwheel needs a less compatible policy for, the configured one refuses (uncompress2, the
    # zlib case's ZLIB_1.2.9 symbol, is also on auditwheel's blacklist below manylinux_2_34)
    assert [(f.rule, f.symbol) for f in v.errors if f.rule != "blacklist"] == [("ceiling", version)]
    blacklisted = [f.symbol for f in v.errors if f.rule == "blacklist"]
    assert blacklisted == (["uncompress2"] if version.startswith("ZLIB") else [])
    assert v.overall_tag == aw["overall_tag"]
    assert version in {s.version for s in v.symbols}  # listed, numeric or not
    testwheels.assert_versions_listed(aw, v)
    # ... and the policy auditwheel names for the symbols lets them through
    assert not [f for f in ours(wheel, GateConfig(policy=sym_tag)).errors if f.rule == "ceiling"]


def test_a_job_wheel_repaired_to_the_fallback_policy_names_the_symbol(
    tmp_path: Path, toolchain: None
) -> None:
    """What ``build`` sees: ``auditwheel repair --plat manylinux_2_28`` refuses GLIBC_ABI_DT_RELR, the
    fallback repair tags the wheel manylinux_2_36, and the job's gate names the symbol."""
    src = testwheels.dt_relr(tmp_path)
    refused = subprocess.run(
        ["auditwheel", "repair", "--plat", "manylinux_2_28_x86_64", "-w", str(tmp_path / "a"), str(src)],
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0
    subprocess.run(
        ["auditwheel", "repair", "-w", str(tmp_path / "b"), str(src)], check=True, capture_output=True
    )
    (repaired,) = (tmp_path / "b").glob("*.whl")
    assert repaired.name.endswith("manylinux_2_36_x86_64.whl")
    ident = JobIdentity(job="cp311-job", version="1.0", python="cp311", platform_tag="manylinux_2_28_x86_64")
    v = ours(repaired, GateConfig(policy="manylinux_2_28", identity=ident))
    assert [(f.rule, f.symbol) for f in v.errors if f.rule == "ceiling"] == [("ceiling", "GLIBC_ABI_DT_RELR")]
    (mismatch,) = [f.message for f in v.errors if f.rule == "job-identity"]
    assert mismatch.endswith("the ceiling errors name the symbol versions above the policy")


# --------------------------------------------------------------------------- libraries ld.so finds
@pytest.mark.parametrize("case", ["soname_only", "unreachable"])
def test_a_library_ld_so_does_not_find_in_the_wheel_is_external(
    case: str, tmp_path: Path, toolchain: None
) -> None:
    wheel = testwheels.soname_only(tmp_path) if case == "soname_only" else testwheels.unreachable(tmp_path)
    v = agree(wheel)
    assert v.overall_tag == "linux_x86_64" and v.external_libraries() == ["libhelper.so.1"]
    assert not v.passed and "external-library" in [f.rule for f in v.errors]
    assert [f.library for f in v.warnings if f.rule == "load-order"] == ["libhelper.so.1"]


def test_a_library_the_rpath_reaches_is_grafted(tmp_path: Path, toolchain: None) -> None:
    v = agree(testwheels.unreachable(tmp_path, rpath="$ORIGIN/lib"))
    assert {u.library: (u.status, u.detail) for u in v.libraries}["libhelper.so.1"] == (
        "grafted",
        "pkg/lib/libhelper.so.1",
    )
    assert v.passed, v.findings


# --------------------------------------------------------------------------- PEP 600 tags auditwheel lacks
@pytest.mark.parametrize(
    ("tag", "warned"),
    [
        ("manylinux_2_29_x86_64", False),
        ("manylinux_2_28_x86_64.manylinux_2_29_x86_64", False),
        ("manylinux_2_42_x86_64", True),  # above every policy auditwheel has
    ],
)
def test_a_pep600_tag_without_a_policy_is_judged(
    tag: str, warned: bool, tmp_path: Path, toolchain: None
) -> None:
    v = agree(testwheels.plain_ext(tmp_path, tag))
    assert v.passed, v.findings
    assert bool([f for f in v.warnings if f.rule == "platform-tag"]) is warned


def test_check_reports_every_wheel_when_one_has_such_a_tag(tmp_path: Path, toolchain: None) -> None:
    wheels = [
        testwheels.plain_ext(tmp_path, "manylinux_2_30_x86_64", name="first"),
        testwheels.glibc_new(tmp_path),  # needs GLIBC_2.36, named manylinux_2_28: fails
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", "check", "--json", *map(str, wheels)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 7, proc.stderr  # the gate ran and a wheel failed it (not 2: usage)
    report = json.loads(proc.stdout)
    assert [(w["wheel"], w["passed"]) for w in report["wheels"]] == [
        (wheels[0].name, True),
        (wheels[1].name, False),
    ]


# --------------------------------------------------------------------------- architectures
@pytest.mark.parametrize("arch", [a for a in testwheels.CROSS if a != "mips64el"])
def test_every_architecture_auditwheel_knows_agrees(arch: str, tmp_path: Path, cross: None) -> None:
    v = agree(testwheels.cross_ext(tmp_path, arch))
    assert (v.arch, v.pure) == (arch, False)
    # newfn@GLIBC_2.34 breaks the file name's manylinux_2_17 on every architecture
    assert ("platform-tag", "GLIBC_2.34") in [(f.rule, f.symbol) for f in v.errors]
    assert "elf-machine" not in [f.rule for f in v.findings]


def test_a_policy_names_the_wheels_architecture_or_none(tmp_path: Path, cross: None) -> None:
    wheel = testwheels.cross_ext(tmp_path, "aarch64", tag="linux_aarch64")
    for policy in ("manylinux_2_34_aarch64", "manylinux_2_34"):
        v = ours(wheel, GateConfig(policy=policy))
        assert v.passed and v.target_policy is not None and v.target_policy.tag == "manylinux_2_34_aarch64"
    v = ours(wheel, GateConfig(policy="manylinux2014_aarch64"))
    assert [(f.rule, f.symbol) for f in v.errors] == [("ceiling", "GLIBC_2.34")]
    wrong = ours(wheel, GateConfig(policy="manylinux_2_34_x86_64"))
    assert [f.rule for f in wrong.errors] == ["policy"]


def test_host_code_of_a_machine_no_policy_covers_fails(tmp_path: Path, cross: None) -> None:
    wheel = testwheels.cross_ext(tmp_path, "mips64el")
    code, aw = testwheels.auditwheel_show(wheel)
    assert code != 0 and "not look like a platform wheel" in aw["error"]  # auditwheel gives no verdict
    v = ours(wheel)
    assert not v.pure and not v.passed and v.overall_tag is None
    assert [f.rule for f in v.errors] == ["elf-machine"]


# --------------------------------------------------------------------------- musllinux
@pytest.mark.parametrize("external", [False, True])
def test_a_musllinux_wheel_agrees(external: bool, tmp_path: Path, cross: None) -> None:
    v = agree(testwheels.musl_ext(tmp_path, external=external))
    assert v.libc == "musl" and v.sym_tag == "musllinux_1_2_x86_64"
    assert v.passed is not external
    assert get_policy("musllinux_1_2").allows_library("libc.musl-x86_64.so.1")


def test_a_musllinux_wheel_under_a_policy(tmp_path: Path, cross: None) -> None:
    wheel = testwheels.musl_ext(tmp_path)
    assert ours(wheel, GateConfig(policy="musllinux_1_2")).passed
    glibc = ours(wheel, GateConfig(policy="manylinux_2_28"))
    assert [f.rule for f in glibc.errors] == ["policy"]
