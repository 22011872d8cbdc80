"""The human report says what the wheel was gated against (the ``gated as:`` line pasted on release
PRs), sizes in readable units, and labels each finding's ``symbol`` field by what it holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from buildkit.gate.config import GateConfig, JobIdentity
from buildkit.gate.findings import Finding
from buildkit.gate.report import gated_as, render_human
from buildkit.gate.verdict import Verdict
from buildkit.policy import get_policy


def verdict(
    config: GateConfig, *, size: int = 1024, findings: tuple[Finding, ...] = (), policy: str | None = None
) -> Verdict:
    return Verdict(
        wheel="demo-1.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        size=size,
        sha256="0" * 64,
        config=config,
        pure=False,
        arch="x86_64",
        overall_policy=None,
        sym_policy=None,
        lib_policy=None,
        file_tags=("manylinux_2_28_x86_64",),
        symbols=(),
        libraries=(),
        gfx=(),
        findings=findings,
        target_policy=get_policy(policy) if policy else None,
    )


def test_gated_as_a_recipe_job() -> None:
    ident = JobIdentity("cp312-rocm7.2", "1.0", "cp312", "manylinux_2_28_x86_64", "demo", "r.yaml", "ab" * 32)
    config = GateConfig(
        policy="manylinux_2_28",
        ceilings={"GLIBCXX": "3.4.22"},
        archs=("gfx942", "gfx950"),
        rocm="7.2",
        exclude_globs=("libamdhip64.so*",),
        size_limit=20 * 1024 * 1024,
        identity=ident,
    )
    assert gated_as(verdict(config, policy="manylinux_2_28")) == (
        f"job cp312-rocm7.2 of r.yaml (build sha256 {'ab' * 6}); policy manylinux_2_28, GLIBC<=2.28 "
        "GLIBCXX<=3.4.22 CXXABI<=1.3.11 GCC<=7.0.0, archs gfx942 gfx950, ROCm 7.2, 1 exclude glob(s), "
        "size warn 100.0 MiB limit 20.0 MiB"
    )


def test_gated_as_a_job_without_its_recipe_and_as_flags() -> None:
    ident = JobIdentity("cp312-rocm7.2", "1.0", "cp312", "manylinux_2_28_x86_64")
    line = gated_as(verdict(GateConfig(identity=ident, size_warn=None), policy="manylinux_2_28"))
    assert line == (
        "job cp312-rocm7.2; policy manylinux_2_28 (the file name's), GLIBC<=2.28 GLIBCXX<=3.4.24 "
        "CXXABI<=1.3.11 GCC<=7.0.0, no archs, no size budget"
    )
    assert gated_as(verdict(GateConfig(ceilings={"GLIBC": "2.17"}))) == (
        "flags; no policy, GLIBC<=2.17, no archs, size warn 100.0 MiB no limit"
    )


@pytest.mark.parametrize(("size", "shown"), [(1024, "(1.0 KiB, sha256"), (300, "(300 B, sha256")])
def test_small_wheels_are_not_zero_mib(size: int, shown: str) -> None:
    first = render_human(verdict(GateConfig(), size=size)).splitlines()[0]
    assert shown in first and "MiB" not in first


@pytest.mark.parametrize(
    ("finding", "where"),
    [
        (
            Finding("rpath", "error", "RPATH leaks the build tree", file="demo/_C.so", symbol="/build/lib"),
            "(file demo/_C.so, rpath /build/lib)",
        ),
        (
            Finding(
                "load-order",
                "warning",
                "loads late",
                file="demo/a.so",
                library="libb.so",
                symbol="demo/libb.so",
            ),
            "(file demo/a.so, library libb.so, provided by demo/libb.so)",
        ),
        (
            Finding("torch-pin", "error", "loose pin", library="torch", symbol="torch>=2.9"),
            "(library torch, requirement torch>=2.9)",
        ),
        (
            Finding(
                "ceiling", "error", "too new", file="demo/_C.so", library="libc.so.6", symbol="GLIBC_2.34"
            ),
            "(file demo/_C.so, library libc.so.6, symbol GLIBC_2.34)",
        ),
    ],
)
def test_symbol_field_is_labelled_by_what_it_holds(finding: Finding, where: str) -> None:
    lines = render_human(verdict(GateConfig(), findings=(finding,))).splitlines()
    assert lines[-1] == f"  {finding.severity.upper()} [{finding.rule}] {finding.message}  {where}"


def test_rpath_finding_from_a_real_wheel_says_rpath(tmp_path: Path) -> None:
    """An extension linked with an absolute RPATH: the integrity rule's finding, rendered."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "testwheels", Path(__file__).parents[1] / "agreement" / "testwheels.py"
    )
    assert spec is not None and spec.loader is not None
    testwheels = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("testwheels", testwheels)
    spec.loader.exec_module(testwheels)
    from buildkit.gate.evaluate import evaluate
    from buildkit.inspect import inspect_wheel

    so = testwheels.compile_shared(
        "int f(void) { return 1; }\n", tmp_path / "r.so", flags=["-Wl,-rpath,/opt/build/lib"]
    )
    wheel = testwheels.pack_wheel(tmp_path, "rp", "cp311-cp311-manylinux_2_28_x86_64", {"rp/_ext.so": so})
    text = render_human(evaluate(inspect_wheel(wheel), GateConfig()))
    (line,) = [x for x in text.splitlines() if x.startswith("  ERROR [rpath]")]
    assert line.endswith("rpath /opt/build/lib)") and "symbol" not in line
