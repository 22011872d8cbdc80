"""Agreement with ``auditwheel show --json`` (its stable interface) on wheels built with the real
toolchain: our symbol verdict and external-library list equal auditwheel's ``sym_tag`` and
``external_libs``; the overall tag equals auditwheel's ``overall_tag`` when no exclusion rule applies."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import testwheels

from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.gate.verdict import Verdict
from buildkit.inspect import inspect_wheel

CASES = ["glibc_new", "glibcxx_new", "external_lib", "grafted", "hip_like"]


def auditwheel_show(wheel: Path) -> dict[str, Any]:
    proc = subprocess.run(["auditwheel", "show", "--json", str(wheel)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr  # show exits 0 whatever its verdict
    data: dict[str, Any] = json.loads(proc.stdout)
    assert data["version"] == 1 and data["pure"] is False
    return data


def ours(wheel: Path, config: GateConfig | None = None) -> Verdict:
    return evaluate(inspect_wheel(wheel), config or GateConfig())


@pytest.mark.parametrize("case", CASES)
def test_symbol_verdict_and_external_libraries_agree(case: str, wheels: dict[str, Path]) -> None:
    aw = auditwheel_show(wheels[case])
    v = ours(wheels[case])
    assert v.sym_tag == aw["sym_tag"]
    assert v.external_libraries() == sorted(aw["external_libs"])
    assert v.overall_tag == aw["overall_tag"]  # no exclusion rule in play
    # and the per-library versions are the ones auditwheel saw
    testwheels.assert_versions_listed(aw, v)


def test_expected_verdicts(wheels: dict[str, Path]) -> None:
    # pin what the toolchain produced, so a silent change in either tool shows up here
    assert ours(wheels["glibc_new"]).sym_tag == "manylinux_2_36_x86_64"  # arc4random@GLIBC_2.36
    assert ours(wheels["glibcxx_new"]).sym_tag == "manylinux_2_35_x86_64"  # GLIBCXX_3.4.30
    ext = ours(wheels["external_lib"])
    assert ext.external_libraries() == ["libtiny.so.1"] and ext.overall_tag == "linux_x86_64"
    graft = ours(wheels["grafted"])
    tiny = [u for u in graft.libraries if u.library.startswith("libtiny")]
    assert [u.status for u in tiny] == ["grafted"] and tiny[0].detail is not None
    assert tiny[0].detail.startswith("usetiny.libs/")
    # the grafted library's own getrandom@GLIBC_2.25 counts: no manylinux_2_25 policy, so 2_26
    assert graft.sym_tag == "manylinux_2_26_x86_64"
    assert any(s.version == "GLIBC_2.25" and ".libs/" in s.file for s in graft.symbols)


def test_file_name_lie_fails_naming_file_library_symbol(wheels: dict[str, Path]) -> None:
    v = ours(wheels["glibc_new"])  # named manylinux_2_28, needs GLIBC_2.36
    assert not v.passed
    assert ("platform-tag", "glibcnew/_ext.so", "libc.so.6", "GLIBC_2.36") in {
        (f.rule, f.file, f.library, f.symbol) for f in v.errors
    }


def test_exclusion_makes_the_external_library_pass(wheels: dict[str, Path]) -> None:
    strict = ours(wheels["external_lib"], GateConfig(policy="manylinux_2_28"))
    assert [f.library for f in strict.errors if f.rule == "external-library"] == ["libtiny.so.1"]
    loose = ours(wheels["external_lib"], GateConfig(policy="manylinux_2_28", exclude_globs=("libtiny.so*",)))
    assert loose.passed, loose.findings
    assert loose.external_libraries() == []
    assert loose.overall_tag == "manylinux_2_5_x86_64"  # differs from auditwheel on purpose: excluded


def test_hip_objects_targets(wheels: dict[str, Path]) -> None:
    v = ours(wheels["hip_like"])
    assert {g.file: g.targets for g in v.gfx} == {
        "hipk/_ext.so": ("gfx908", "gfx90a:xnack-", "gfx942"),
        "hipk/libkernels2.so": ("gfx90a", "gfx942"),
    }
    both = ours(wheels["hip_like"], GateConfig(archs=("gfx90a", "gfx942")))
    # gfx90a only as gfx90a:xnack- in _ext.so: warned (runs with xnack off only); gfx908 not requested
    assert both.passed and sorted(f.symbol or "" for f in both.warnings) == ["gfx908", "gfx90a"]
    need908 = ours(wheels["hip_like"], GateConfig(archs=("gfx908", "gfx90a")))
    assert [(f.file, f.symbol) for f in need908.errors] == [("hipk/libkernels2.so", "gfx908")]
