"""Waivers (a recipe's ``gate.waive``): a matched finding is kept, shown as waived with its reason,
and no longer fails the wheel; a waiver that matches nothing is a ``waiver-unused`` error naming its
position and the fix; rules that are never waived are refused at recipe load (the malformed-recipe
corpus, tests/data/recipes/bad/gate_waive_*.yaml, has the messages).

The wheels are real: the reference job's wheel built with the host's gcc (tests/unit/test_check_cli.py),
gated with copies of recipes/reference-trixie.yaml, through ``buildkit check --recipe R --job ID`` and the
gate's functions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from buildkit.building.gating import gate_wheel
from buildkit.gate.config import GateConfig, gate_key
from buildkit.gate.findings import Finding
from buildkit.gate.rules import NEVER_WAIVED, waive
from buildkit.gate.rules.size import SIZE
from buildkit.gatespec import Waiver
from buildkit.plan.expansion import expand
from buildkit.recipe import Recipe, load_recipe
from tests.unit.test_check_cli import REF_JOB, REFERENCE, job_wheel, reference_job, run, run_json

REPO = Path(__file__).resolve().parents[2]
REASON = "the HIP runtime comes with the ROCm install"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _recipe, job = reference_job()
    return job_wheel(tmp_path_factory.mktemp("waived"), version=job.version)


def recipe_copy(tmp: Path, gate: str, *, exclude_rocm: bool = True, limit: str = "20MiB") -> Path:
    """recipes/reference-trixie.yaml with its source made absolute, ``gate:`` YAML appended, optionally
    without the rocm exclusion set (then libamdhip64.so.5 is an external library) and another limit."""
    text = REFERENCE.read_text(encoding="utf-8").replace("../csrc", str(REPO / "csrc"))
    if not exclude_rocm:
        start, end = text.index("repair:"), text.index("env:")
        text = text[:start] + text[end:]
    text = text.replace("limit: 20MiB", f"limit: {limit}")
    path = tmp / "recipe.yaml"
    path.write_text(text + gate, encoding="utf-8")
    return path


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def job_of(recipe: Recipe) -> Any:
    return expand(recipe, env={}).job(REF_JOB)


# --------------------------------------------------------------------------- matching
def test_a_waiver_matches_its_rule_and_the_globs_it_gives() -> None:
    f = Finding("rocm-soname", "error", "m", file="pkg/_C.so", library="libamdhip64.so.6")
    assert Waiver("rocm-soname", "r").matches(f)
    assert Waiver("rocm-soname", "r", library="libamdhip64.so.*").matches(f)
    assert Waiver("rocm-soname", "r", library="libamdhip64.so.*", file="pkg/*.so").matches(f)
    assert Waiver("rocm-soname", "r", file="*").matches(f)  # '*' crosses '/'
    assert not Waiver("rocm-soname", "r", library="libamdhip64.so.7").matches(f)
    assert not Waiver("rocm-soname", "r", library="LIBAMDHIP64.so.*").matches(f)  # case counts
    assert not Waiver("external-library", "r", library="libamdhip64.so.*").matches(f)
    # a glob on a field the finding does not have never matches
    assert not Waiver("size", "r", file="*").matches(Finding("size", "error", "too big"))


def test_waive_keeps_findings_in_place_and_reports_each_unused_waiver() -> None:
    a = SIZE.error("wheel is 2 MiB, above the limit of 1 MiB")
    b = Finding("rpath", "warning", "under /opt/rocm", file="pkg/_C.so", symbol="/opt/rocm/lib")
    used = Waiver("size", "the index allows it", place=0, line=40, column=7)
    unused = Waiver("rpath", "stale", file="other/*.so", place=1, line=42, column=7)
    out = waive([a, b], [used, unused], recipe="r.yaml")
    assert out[0] == Finding(a.rule, a.severity, a.message, waived=used) and not out[0].fails
    assert out[1] == b  # not matched: untouched
    assert [f.rule for f in out] == ["size", "rpath", "waiver-unused"]
    assert out[2].fails
    assert out[2].message == (
        "gate.waive[1] (r.yaml:42:7) waives rpath, file other/*.so, but none of the wheel's 1 rpath "
        "finding(s) matches it (they name file pkg/_C.so): correct its globs, or remove the waiver"
    )
    # a never-waived rule reaching the gate another way than a recipe waives nothing, and says why
    record = Finding("record", "error", "hash mismatch", file="pkg/x.py")
    out = waive([record], [Waiver("record", "x")])
    assert out[0] == record and out[0].fails
    assert (
        out[1].message
        == f"gate.waive[0]: record cannot be waived ({NEVER_WAIVED['record']}); remove the waiver"
    )


# --------------------------------------------------------------------------- check --recipe --job
def test_waived_findings_pass_the_wheel_and_every_report_shows_them(
    capsys: pytest.CaptureFixture[str], wheel: Path, tmp_path: Path
) -> None:
    """Without the rocm exclusion set, libamdhip64.so.5 is external: an external-library and a
    platform-tag error. Both waived (one glob each): PASS, both kept and shown with the reason."""
    recipe = recipe_copy(
        tmp_path,
        "gate:\n  waive:\n"
        f"    - rule: external-library\n      library: libamdhip64.so.*\n      reason: {REASON}\n"
        f"    - {{rule: platform-tag, library: libamdhip64.so.5, reason: '{REASON}'}}\n",
        exclude_rocm=False,
    )
    code, out, err = run(capsys, str(wheel), "--recipe", str(recipe), "--job", REF_JOB)
    assert code == 0, out + err
    assert "  verdict: PASS (0 error(s), 0 warning(s), 2 waived)" in out
    assert ", 2 waiver(s), size warn" in out  # the gated-as line
    first, second = line_of(recipe, "- rule: external-library"), line_of(recipe, "- {rule: platform-tag")
    waived = [line for line in out.splitlines() if line.startswith("  WAIVED ")]
    assert [w.split("]")[0] for w in waived] == ["  WAIVED [platform-tag", "  WAIVED [external-library"]
    assert waived[0].endswith(f"  waived by gate.waive[1] ({recipe}:{second}:7): {REASON}")
    assert waived[1].endswith(f"  waived by gate.waive[0] ({recipe}:{first}:7): {REASON}")
    assert "libamdhip64.so.5" in waived[1]
    assert "ERROR" not in out

    code, doc = run_json(capsys, str(wheel), "--recipe", str(recipe), "--job", REF_JOB)  # schema-valid
    w = doc["wheels"][0]
    assert code == 0 and w["passed"] is True and doc["passed"] is True
    assert [(f["rule"], f["severity"], f["waived"]["at"]) for f in w["findings"]] == [
        ("platform-tag", "error", "gate.waive[1]"),
        ("external-library", "error", "gate.waive[0]"),
    ]
    assert w["findings"][1]["waived"] == {
        "rule": "external-library",
        "library": "libamdhip64.so.*",
        "file": None,
        "reason": REASON,
        "at": "gate.waive[0]",
        "line": first,
        "column": 7,
    }
    assert [x["at"] for x in w["config"]["waivers"]] == ["gate.waive[0]", "gate.waive[1]"]

    # the same wheel and recipe without the waivers: those two errors fail it
    plain = recipe_copy(tmp_path, "", exclude_rocm=False)
    code, doc = run_json(capsys, str(wheel), "--recipe", str(plain), "--job", REF_JOB)
    assert code == 7
    assert [(f["rule"], f["waived"]) for f in doc["wheels"][0]["findings"]] == [
        ("platform-tag", None),
        ("external-library", None),
    ]


def test_an_unused_waiver_fails_the_wheel_naming_its_position_and_the_fix(
    capsys: pytest.CaptureFixture[str], wheel: Path, tmp_path: Path
) -> None:
    recipe = recipe_copy(
        tmp_path,
        "gate:\n  waive:\n    - rule: rocm-soname\n      library: libfoo.so.1\n"
        "      reason: libfoo keeps its 5.x SONAME\n",
    )
    code, out, _ = run(capsys, str(wheel), "--recipe", str(recipe), "--job", REF_JOB)
    assert code == 7
    assert "  verdict: FAIL (1 error(s), 0 warning(s))" in out
    line = line_of(recipe, "- rule: rocm-soname")
    assert (
        f"  ERROR [waiver-unused] gate.waive[0] ({recipe}:{line}:7) waives rocm-soname, library "
        "libfoo.so.1, but this wheel has no rocm-soname finding: remove the waiver from the recipe "
        "(the problem it was written for is gone)"
    ) in out.splitlines()


def test_a_waiver_whose_glob_misses_names_what_the_findings_carry(
    capsys: pytest.CaptureFixture[str], wheel: Path, tmp_path: Path
) -> None:
    recipe = recipe_copy(
        tmp_path,
        f"gate:\n  waive:\n    - {{rule: external-library, library: libamdhip64.so.6, reason: '{REASON}'}}\n",
        exclude_rocm=False,
    )
    code, doc = run_json(capsys, str(wheel), "--recipe", str(recipe), "--job", REF_JOB)
    findings = doc["wheels"][0]["findings"]
    assert code == 7
    assert [(f["rule"], f["waived"]) for f in findings] == [
        ("platform-tag", None),
        ("external-library", None),
        ("waiver-unused", None),
    ]
    assert findings[2]["message"].endswith(
        "waives external-library, library libamdhip64.so.6, but none of the wheel's 1 external-library "
        "finding(s) matches it (they name library libamdhip64.so.5): correct its globs, or remove the waiver"
    )


def test_a_regression_waiver_is_left_to_build(
    capsys: pytest.CaptureFixture[str], wheel: Path, tmp_path: Path
) -> None:
    """check does not run the regression rule, so a regression waiver is neither applied nor unused
    there (build judges it after its regression check)."""
    recipe = recipe_copy(
        tmp_path,
        "gate:\n  no_regression_against: https://example.invalid/simple/\n"
        "  waive:\n    - {rule: regression, reason: gfx906 is dropped in 0.2}\n",
    )
    code, doc = run_json(capsys, str(wheel), "--recipe", str(recipe), "--job", REF_JOB)
    assert code == 0 and doc["wheels"][0]["findings"] == []
    assert [w["rule"] for w in doc["wheels"][0]["config"]["waivers"]] == ["regression"]


# --------------------------------------------------------------------------- build's view
def test_build_gate_summary_and_manifest_verdict_carry_the_waived_findings(
    wheel: Path, tmp_path: Path
) -> None:
    recipe = load_recipe(
        recipe_copy(tmp_path, "gate:\n  waive:\n    - {rule: size, reason: agreed}\n", limit="1KiB")
    )
    gated = gate_wheel(wheel, GateConfig.from_job(job_of(recipe), recipe))
    assert gated.passed and (gated.errors, gated.warnings) == (0, 0)
    assert gated.waived == 1 and gated.waivers == ("gate.waive[0] (size): 1 finding waived: agreed",)
    [finding] = gated.verdict["findings"]
    assert (finding["rule"], finding["severity"], finding["waived"]["reason"]) == ("size", "error", "agreed")
    assert gated.verdict["passed"] is True


def test_the_gate_key_changes_with_the_waivers(tmp_path: Path) -> None:
    keys = []
    for gate in (
        "",
        "gate:\n  waive:\n    - {rule: size, reason: agreed}\n",
        "gate:\n  waive:\n    - {rule: size, reason: agreed with the index admins}\n",
        "gate:\n  waive:\n    - {rule: size, file: '*.so', reason: agreed}\n",
    ):
        recipe = load_recipe(recipe_copy(tmp_path, gate))
        keys.append(gate_key(GateConfig.from_job(job_of(recipe), recipe)))
    assert all(k["waivers"] for k in keys[1:]) and keys[0]["waivers"] == []
    assert len({repr(k) for k in keys}) == 4
