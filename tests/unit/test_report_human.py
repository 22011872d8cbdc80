"""The human report of ``buildkit check`` stays short on wheels with thousands of GPU code objects:
gfx objects summarised, findings capped per rule, ``-v``/``--verbose`` (and ``--json``) list everything."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from buildkit.cli.check import check
from buildkit.gate.config import GateConfig
from buildkit.gate.findings import Finding
from buildkit.gate.report import (
    FINDINGS_SHOWN,
    GFX_EXAMPLES,
    GFX_GROUPS_MAX,
    GFX_LIST_MAX,
    render_all,
    render_human,
)
from buildkit.gate.verdict import GfxObject, Verdict
from tests.helpers.offload_bundle import amdgpu_header
from tests.helpers.wheel_zip import write_wheel

E_FLAGS = {"gfx90a": 0x3F, "gfx942": 0x4C, "gfx950": 0x4F}


def verdict(gfx: Sequence[GfxObject] = (), findings: Sequence[Finding] = ()) -> Verdict:
    return Verdict(
        wheel="demo-1.0-py3-none-any.whl",
        size=1024,
        sha256="0" * 64,
        config=GateConfig(),
        pure=True,
        arch=None,
        overall_policy=None,
        sym_policy=None,
        lib_policy=None,
        file_tags=("any",),
        symbols=(),
        libraries=(),
        gfx=tuple(gfx),
        findings=tuple(findings),
    )


def gfx_section(text: str) -> list[str]:
    """The lines under ``gfx targets:`` (indented by 4 or more)."""
    lines = text.splitlines()
    start = lines.index("  gfx targets:") + 1
    end = start
    while end < len(lines) and lines[end].startswith("    "):
        end += 1
    return lines[start:end]


def code_objects(n: int, target: str, prefix: str = "k") -> list[GfxObject]:
    return [GfxObject(f"demo/{prefix}{i:03d}.hsaco", "code-object", (target,)) for i in range(n)]


def bundles(n: int, targets: tuple[str, ...], prefix: str = "ext") -> list[GfxObject]:
    return [GfxObject(f"demo/{prefix}{i:03d}.so", "bundle", targets) for i in range(n)]


# --------------------------------------------------------------------------- gfx targets
@pytest.mark.parametrize("n", [1, GFX_LIST_MAX])
def test_few_objects_keep_one_line_per_object(n: int) -> None:
    gfx = [*bundles(n // 2, ("gfx942", "gfx950")), *code_objects(n - n // 2, "gfx90a")]
    out = render_human(verdict(gfx))
    assert gfx_section(out) == [f"    {g.file} [{g.kind}]: {' '.join(g.targets)}" for g in gfx]
    assert "more" not in out


def test_many_objects_are_summarised_with_counts_and_examples() -> None:
    gfx = [
        *bundles(10, ("gfx942", "gfx950")),
        *code_objects(12, "gfx942", "a"),
        *code_objects(8, "gfx950", "b"),
    ]
    section = gfx_section(render_human(verdict(gfx)))
    assert section == [
        "    30 objects (bundle x10, code-object x20): gfx942 x22, gfx950 x18",
        "    12 [code-object]: gfx942",
        *(f"      demo/a{i:03d}.hsaco" for i in range(GFX_EXAMPLES)),
        f"      ... {12 - GFX_EXAMPLES} more (-v lists every object, --json too)",
        "    10 [bundle]: gfx942 gfx950",
        *(f"      demo/ext{i:03d}.so" for i in range(GFX_EXAMPLES)),
        f"      ... {10 - GFX_EXAMPLES} more (-v lists every object, --json too)",
        "    8 [code-object]: gfx950",
        *(f"      demo/b{i:03d}.hsaco" for i in range(GFX_EXAMPLES)),
        f"      ... {8 - GFX_EXAMPLES} more (-v lists every object, --json too)",
    ]


def test_one_object_past_the_limit_is_summarised_and_targets_sort_by_processor() -> None:
    gfx = [
        *code_objects(GFX_LIST_MAX, "gfx1100", "n"),
        GfxObject("demo/old.hsaco", "code-object", ("gfx90a",)),
    ]
    section = gfx_section(render_human(verdict(gfx)))
    # gfx90a (9.0.10) before gfx1100 (11.0.0), whatever the text order
    assert (
        section[0]
        == f"    {GFX_LIST_MAX + 1} objects (code-object x{GFX_LIST_MAX + 1}): gfx90a x1, gfx1100 x12"
    )
    assert "    1 [code-object]: gfx90a" in section and "      demo/old.hsaco" in section
    assert not any(line.startswith("    demo/") for line in section)


def test_target_sets_beyond_the_group_limit_are_counted_on_one_line() -> None:
    extra = 3
    sets = [(f"gfx9{i:02d}",) for i in range(GFX_GROUPS_MAX + extra)]
    # group i has GFX_GROUPS_MAX + extra - i objects: largest first, the smallest `extra` go last
    gfx = [
        GfxObject(f"demo/s{i}_{j}.hsaco", "code-object", targets)
        for i, targets in enumerate(sets)
        for j in range(len(sets) - i)
    ]
    section = gfx_section(render_human(verdict(gfx)))
    headers = [line for line in section if line.startswith("    ") and not line.startswith("      ")]
    assert len(headers) == 1 + GFX_GROUPS_MAX + 1
    hidden = sum(range(1, extra + 1))
    assert headers[-1] == (
        f"    ... {extra} more (kind, targets) group(s) of {hidden} object(s) "
        "(-v lists every object, --json too)"
    )
    # the totals line still names every target
    assert all(f"{targets[0]} x" in headers[0] for targets in sets)


def test_verbose_lists_every_object() -> None:
    gfx = [*bundles(20, ("gfx942",)), *code_objects(17, "gfx950")]
    section = gfx_section(render_human(verdict(gfx), verbose=True))
    assert section == [f"    {g.file} [{g.kind}]: {' '.join(g.targets)}" for g in gfx]


# --------------------------------------------------------------------------- findings
def pure_warning(i: int) -> Finding:
    path = f"demo/k{i:03d}.hsaco"
    return Finding(
        "pure-wheel",
        "warning",
        f"{path} is a standalone GPU code object (gfx942) in a py3-none-any wheel",
        file=path,
        symbol="gfx942",
    )


def arch_error(i: int) -> Finding:
    return Finding(
        "gfx-arch",
        "error",
        f"demo/e{i:03d}.so lacks code for requested arch gfx950",
        file=f"demo/e{i:03d}.so",
    )


def mixed_findings() -> list[Finding]:
    """40 pure-wheel warnings, 25 gfx-arch errors (interleaved) and one size warning in the middle."""
    out: list[Finding] = []
    for i in range(40):
        out.append(pure_warning(i))
        if i < 25:
            out.append(arch_error(i))
        if i == 10:
            out.append(Finding("size", "warning", "wheel is 120.0 MiB, above 100 MiB"))
    return out


def finding_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("  WARNING ", "  ERROR ", "  ... and "))]


def test_findings_are_grouped_by_rule_and_capped() -> None:
    findings = mixed_findings()
    out = render_human(verdict(findings=findings))
    assert "  verdict: FAIL (25 error(s), 41 warning(s))" in out.splitlines()
    lines = finding_lines(out)
    warn, err = FINDINGS_SHOWN["warning"], FINDINGS_SHOWN["error"]
    assert [line.split("]")[0] for line in lines] == [
        *["  WARNING [pure-wheel"] * warn,
        f"  ... and {40 - warn} more pure-wheel warning(s) (-v lists all, --json too)",
        *["  ERROR [gfx-arch"] * err,
        f"  ... and {25 - err} more gfx-arch error(s) (-v lists all, --json too)",
        "  WARNING [size",
    ]
    # the first ones of each rule are those shown
    assert lines[0].startswith("  WARNING [pure-wheel] demo/k000.hsaco ")
    assert lines[warn + 1].startswith("  ERROR [gfx-arch] demo/e000.so ")
    assert lines[warn + err].startswith(f"  ERROR [gfx-arch] demo/e{err - 1:03d}.so ")


def test_verbose_lists_every_finding_in_rule_groups() -> None:
    findings = mixed_findings()
    lines = finding_lines(render_all([verdict(findings=findings)], verbose=True))
    assert len(lines) == len(findings)
    assert not [line for line in lines if line.startswith("  ... and ")]
    grouped = [f for rule in ("pure-wheel", "gfx-arch", "size") for f in findings if f.rule == rule]
    assert [line.split("  (")[0] for line in lines] == [
        f"  {f.severity.upper()} [{f.rule}] {f.message}" for f in grouped
    ]


def test_a_rule_at_its_cap_is_not_cut() -> None:
    cap = FINDINGS_SHOWN["warning"]
    lines = finding_lines(render_human(verdict(findings=[pure_warning(i) for i in range(cap)])))
    assert len(lines) == cap and "more" not in "".join(lines)


@pytest.mark.parametrize(
    ("finding", "where"),
    [
        # the message names the member: no file in the parenthesis, the symbol stays
        (pure_warning(7), "  (symbol gfx942)"),
        # the member's path only as a prefix of another path: the file stays
        (Finding("rpath", "error", "needs demo/a.so.1 at run time", file="demo/a.so"), "  (file demo/a.so)"),
        # a member named in the message before a full stop
        (
            Finding("record", "error", "RECORD lists demo/x.py.", file="demo/x.py", library="libz.so.1"),
            "  (library libz.so.1)",
        ),
        (
            Finding(
                "ceiling",
                "error",
                "requires GLIBC_2.34",
                file="demo/_C.so",
                library="libc.so.6",
                symbol="GLIBC_2.34",
            ),
            "  (file demo/_C.so, library libc.so.6, symbol GLIBC_2.34)",
        ),
        (Finding("record", "error", "names demo/x.py and nothing else", file="demo/x.py"), ""),
    ],
)
def test_parenthesis_omits_the_file_only_when_the_message_names_it(finding: Finding, where: str) -> None:
    (line,) = finding_lines(render_human(verdict(findings=[finding])))
    assert line == f"  {finding.severity.upper()} [{finding.rule}] {finding.message}{where}"


# --------------------------------------------------------------------------- through the CLI
@pytest.fixture
def many_code_objects(tmp_path: Path) -> Path:
    """A py3-none-any wheel with 30 standalone code objects (each a pure-wheel warning)."""
    members = {"demo/__init__.py": b""}
    for i in range(30):
        target = "gfx942" if i % 3 else "gfx950"
        members[f"demo/kernels/{target}/k{i:02d}.co"] = amdgpu_header(E_FLAGS[target])
    return write_wheel(tmp_path / "demo-1.0-py3-none-any.whl", members, tag="py3-none-any")


def test_cli_summarises_and_verbose_lists_all(many_code_objects: Path) -> None:
    runner = CliRunner()
    short = runner.invoke(check, [str(many_code_objects)])
    assert short.exit_code == 0, short.output
    assert "  verdict: PASS (0 error(s), 30 warning(s))" in short.output
    assert "    30 objects (code-object x30): gfx942 x20, gfx950 x10" in short.output
    assert "    20 [code-object]: gfx942" in short.output and "    10 [code-object]: gfx950" in short.output
    warn = FINDINGS_SHOWN["warning"]
    assert (
        len([line for line in short.output.splitlines() if line.startswith("  WARNING [pure-wheel]")]) == warn
    )
    assert f"  ... and {30 - warn} more pure-wheel warning(s) (-v lists all, --json too)" in short.output

    for flag in ("-v", "--verbose"):
        full = runner.invoke(check, [flag, str(many_code_objects)])
        assert full.exit_code == 0, full.output
        lines = full.output.splitlines()
        assert len([line for line in lines if line.startswith("  WARNING [pure-wheel]")]) == 30
        assert len([line for line in lines if line.endswith(".co [code-object]: gfx942")]) == 20
        assert " more " not in full.output
        assert len(lines) > len(short.output.splitlines()) + 30

    doc = json.loads(runner.invoke(check, ["--json", str(many_code_objects)]).output)
    (wheel,) = doc["wheels"]
    assert len(wheel["gfx"]) == 30 and len(wheel["findings"]) == 30
