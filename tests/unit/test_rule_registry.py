"""The rule registry (buildkit.gate.rules) is the one list of gate rules: the check report schema's
rule enum, the recipe schema's ``gate.waive[].rule`` enum and never-waived map, and the table of
docs/GATE-RULES.md are generated from it (BUILDKIT_REGEN_GOLDEN=1 rewrites them), every finding is
made through a registered Rule, and what a rule declares holds."""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest

from buildkit.gate import findings as findings_mod
from buildkit.gate.rule import Rule
from buildkit.gate.rules import FAMILIES, NEVER_WAIVED, RULE_IDS, RULES, rules_table

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "buildkit" / "schema" / "check-report.schema.json"
RECIPE_SCHEMA = REPO / "buildkit" / "schema" / "recipe.schema.json"
DOC = REPO / "docs" / "GATE-RULES.md"
REGEN = os.environ.get("BUILDKIT_REGEN_GOLDEN") == "1"
BEGIN, END = (
    "<!-- rules:begin (generated from buildkit/gate/rules; BUILDKIT_REGEN_GOLDEN=1) -->",
    "<!-- rules:end -->",
)
_ENUM = re.compile(r'("rule": \{"type": "string",\n(\s*))("enum": \[[^\]]*\],\n\s*)?')
#: the waiver's rule in the recipe schema: its enum and never-waived map, each on one line
_WAIVE_RULE = re.compile(r'("enum": )\[[^\]]*\](,\n\s*"x-never-waived": )\{[^}]*\}')


def _schema_enum(text: str) -> list[str]:
    rule = json.loads(text)["$defs"]["verdict"]["properties"]["findings"]["items"]["properties"]["rule"]
    return list(rule.get("enum", []))


def test_rule_ids_are_unique_and_each_family_runs_or_says_why_not() -> None:
    assert len(RULE_IDS) == len(set(RULE_IDS))
    assert all(isinstance(r, Rule) and r.severities and r.checks and r.prevents for r in RULES)
    # waivers: applied by evaluate to the other families' findings; regression: run by build
    assert [f.name for f in FAMILIES if f.check is None] == ["waivers", "regression"]


def test_the_report_schema_enumerates_the_registered_rule_ids() -> None:
    text = SCHEMA.read_text(encoding="utf-8")
    if REGEN:
        enum = json.dumps(list(RULE_IDS))
        text = _ENUM.sub(lambda m: f'{m.group(1)}"enum": {enum},\n{m.group(2)}', text, count=1)
        SCHEMA.write_text(text, encoding="utf-8")
    assert _schema_enum(text) == list(RULE_IDS), "regenerate with BUILDKIT_REGEN_GOLDEN=1"


def _waive_rule(text: str) -> dict[str, object]:
    gate = json.loads(text)["properties"]["gate"]["properties"]
    rule: dict[str, object] = gate["waive"]["items"]["properties"]["rule"]
    return rule


def test_the_recipe_schema_waives_registered_rules_and_refuses_the_never_waived() -> None:
    text = RECIPE_SCHEMA.read_text(encoding="utf-8")
    if REGEN:
        enum, never = json.dumps(list(RULE_IDS)), json.dumps(NEVER_WAIVED)
        text, n = _WAIVE_RULE.subn(lambda m: f"{m.group(1)}{enum}{m.group(2)}{never}", text, count=1)
        assert n == 1
        RECIPE_SCHEMA.write_text(text, encoding="utf-8")
    rule = _waive_rule(text)
    assert rule["enum"] == list(RULE_IDS), "regenerate with BUILDKIT_REGEN_GOLDEN=1"
    assert rule["x-never-waived"] == NEVER_WAIVED, "regenerate with BUILDKIT_REGEN_GOLDEN=1"
    # what is never waived: a corrupt wheel, a wheel that is not the job's, an unusable file name,
    # a device wheel with code of another target, metadata pip reads otherwise than the gate, links,
    # and the waiver rule itself
    assert set(NEVER_WAIVED) == {
        "record",
        "core-metadata",
        "symlink-member",
        "wheel-name",
        "job-identity",
        "waiver-unused",
        "required-member",
        "device-wheel",
    }


def test_the_rules_table_of_the_docs_is_the_registry() -> None:
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    if REGEN:
        text = text[:start] + "\n" + rules_table() + text[end:]
        DOC.write_text(text, encoding="utf-8")
        start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    assert text[start:end].strip() == rules_table().strip(), "regenerate with BUILDKIT_REGEN_GOLDEN=1"


def test_every_finding_is_made_through_a_rule() -> None:
    """No module but buildkit/gate/rule.py constructs a gate Finding itself (a string id could be
    one the registry does not know)."""
    makers = []
    for path in sorted((REPO / "buildkit").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "buildkit.gate.findings"
            for alias in node.names
            if alias.name == "Finding"
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in imported:
                makers.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert makers == [f"buildkit/gate/rule.py:{_rule_call_line()}"]


def _rule_call_line() -> int:
    tree = ast.parse((REPO / "buildkit" / "gate" / "rule.py").read_text(encoding="utf-8"))
    return next(
        n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "Finding"
    )


def test_a_rule_refuses_a_severity_it_does_not_declare() -> None:
    size = next(r for r in RULES if r.id == "wheel-tags")
    assert size.severities == ("warning",)
    with pytest.raises(ValueError, match="wheel-tags declares warning, not error"):
        size.error("x")


def test_symbol_labels_name_registered_rules() -> None:
    assert set(findings_mod.SYMBOL_LABELS) <= set(RULE_IDS)
