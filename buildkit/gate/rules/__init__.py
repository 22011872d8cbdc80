"""The gate's rules, one module per family, and the registry that orders them.

:data:`FAMILIES` is the registry: the order the rules run in (and their findings appear in), each
family's :class:`~buildkit.gate.rule.Rule` objects and its check. From it come :data:`RULES` (every
rule id: the check report schema's enum, the table of ``docs/GATE-RULES.md``; a test keeps both in
step). Adding a rule: a module here defining its ``Rule`` objects and ``check(facts)``, and one line
below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule
from buildkit.gate.rules import (
    abi,
    ceilings,
    device_wheel,
    duplicates,
    gfx,
    host_isa,
    identity,
    inspect,
    integrity,
    libraries,
    links,
    metadata,
    outputs,
    regression,
    rocm,
    rocm_pip,
    size,
    tags,
    torch,
    torch_abi,
    waivers,
)
from buildkit.gatespec import Waiver

Check = Callable[[Facts], Iterable[Finding]]


class Family(NamedTuple):
    """Rules checked together. ``check`` None: the family does not run with the others in
    :func:`run`: the regression rule needs the index (``build`` runs it after the gate), and the
    waiver rule judges the other families' findings (:func:`waive`, called by ``evaluate``)."""

    name: str
    rules: tuple[Rule, ...]
    check: Check | None


FAMILIES: tuple[Family, ...] = (
    Family("identity", identity.RULES, identity.check),
    Family("core-metadata", metadata.RULES, metadata.check),
    Family("links", links.RULES, links.check),
    Family("tags", tags.RULES, tags.check),
    Family("ceilings", ceilings.RULES, ceilings.check),
    Family("abi", abi.RULES, abi.check),
    Family("host-isa", host_isa.RULES, host_isa.check),
    Family("libraries", libraries.RULES, libraries.check),
    Family("inspect", inspect.RULES, inspect.check),
    Family("gfx", gfx.RULES, gfx.check),
    Family("device-wheel", device_wheel.RULES, device_wheel.check),
    Family("duplicates", duplicates.RULES, duplicates.check),
    Family("size", size.RULES, size.check),
    Family("outputs", outputs.RULES, outputs.check),
    Family("torch", torch.RULES, torch.check),
    Family("torch-abi", torch_abi.RULES, torch_abi.check),
    Family("rocm", rocm.RULES, rocm.check),
    Family("rocm-from-pip", rocm_pip.RULES, rocm_pip.check),
    Family("integrity", integrity.RULES, integrity.check),
    Family("waivers", waivers.RULES, None),
    Family("regression", regression.RULES, None),
)

RULES: tuple[Rule, ...] = tuple(rule for family in FAMILIES for rule in family.rules)
RULE_IDS: tuple[str, ...] = tuple(rule.id for rule in RULES)
#: rule id -> why a recipe may not waive its findings
NEVER_WAIVED: dict[str, str] = {rule.id: rule.never_waived for rule in RULES if rule.never_waived}
#: rules judged after the gate (``build``'s regression check): ``evaluate`` leaves their waivers to it
AFTER_GATE: frozenset[str] = frozenset(rule.id for rule in regression.RULES)


def waive(
    findings: Sequence[Finding], given: Sequence[Waiver], *, recipe: str | None = None
) -> list[Finding]:
    """``findings`` with the waivers applied and one ``waiver-unused`` error per waiver that matched
    none (:func:`buildkit.gate.rules.waivers.apply`)."""
    return waivers.apply(findings, given, recipe=recipe, never_waived=NEVER_WAIVED)


def run(facts: Facts) -> list[Finding]:
    """Every family's findings, in registry order."""
    return [finding for family in FAMILIES if family.check is not None for finding in family.check(facts)]


def rules_table() -> str:
    """The Markdown table of ``docs/GATE-RULES.md``: one row per rule, in registry order (a rule
    whose findings no recipe waiver may accept says so after its severities)."""
    rows = [
        "| rule | severity | what it checks | failure it prevents |",
        "|------|----------|----------------|---------------------|",
    ]
    for rule in RULES:
        severity = ", ".join(rule.severities) + (" (never waived)" if rule.never_waived else "")
        rows.append(f"| `{rule.id}` | {severity} | {rule.checks} | {rule.prevents} |")
    return "\n".join(rows) + "\n"
