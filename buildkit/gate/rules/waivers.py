"""A recipe's waivers (``gate.waive``) applied to a wheel's findings, and the ``waiver-unused`` rule.

:func:`apply` marks every finding a waiver matches (:meth:`Waiver.matches
<buildkit.gate.findings.Waiver.matches>`: same rule, library and member globs) as waived by the
first such waiver in recipe order; it no longer fails the wheel. Each waiver that matched no finding
becomes a ``waiver-unused`` error (its ``prevents`` says why).

The registry (:mod:`buildkit.gate.rules`) passes in which rules may not be waived at all (a rule's
``never_waived`` reason, e.g. ``record``: a corrupted wheel); the recipe schema already refuses such
a waiver at load time, and one that reaches the gate another way waives nothing and is reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule
from buildkit.gatespec import Waiver

WAIVER_UNUSED = Rule(
    "waiver-unused",
    ("error",),
    checks=(
        "Every waiver of the recipe's `gate.waive` (`{rule, library, file, reason}`) matches at "
        "least one finding of the wheel (same rule, the `library` and `file` fnmatch globs where "
        "given). A finding a waiver matches is shown as waived with its reason and no longer fails "
        "the wheel; `regression` waivers are judged by `build`, after the regression check."
    ),
    prevents=(
        "A stale waiver, left after the problem it was written for went away, silently accepting "
        "the next, different problem of its rule."
    ),
    never_waived="an unused waiver is removed from the recipe, not waived",
)
RULES = (WAIVER_UNUSED,)

_SHOWN = 3  # libraries / members of the rule's findings named in an unused waiver's message


def apply(
    findings: Sequence[Finding],
    waivers: Sequence[Waiver],
    *,
    recipe: str | None = None,
    never_waived: Mapping[str, str],
) -> list[Finding]:
    """``findings`` with each one a waiver matches marked waived (in place), then one
    ``waiver-unused`` error per waiver that matched none. ``recipe``: the recipe file as given,
    for the waivers' positions in messages; ``never_waived``: rule id -> why it cannot be waived."""
    used: set[int] = set()
    out: list[Finding] = []
    usable = [w for w in waivers if w.rule not in never_waived]
    for finding in findings:
        waiver = next((w for w in usable if w.matches(finding)), None)
        if waiver is None:
            out.append(finding)
            continue
        used.add(id(waiver))
        out.append(finding._replace(waived=waiver))
    for waiver in waivers:
        if id(waiver) not in used:
            out.append(WAIVER_UNUSED.error(_unused(waiver, findings, recipe, never_waived)))
    return out


def _unused(waiver: Waiver, findings: Sequence[Finding], recipe: str | None, never: Mapping[str, str]) -> str:
    """Why ``waiver`` waived nothing, and what to do: remove it, or (when its rule has findings that
    its globs miss) correct the globs, naming what those findings carry."""
    where = waiver.position(recipe)
    if waiver.rule in never:
        return f"{where}: {waiver.rule} cannot be waived ({never[waiver.rule]}); remove the waiver"
    same_rule = [f for f in findings if f.rule == waiver.rule]
    if not same_rule:
        return (
            f"{where} waives {waiver.describe()}, but this wheel has no {waiver.rule} finding: remove "
            "the waiver from the recipe (the problem it was written for is gone)"
        )
    named = []
    for field, glob in (("library", waiver.library), ("file", waiver.file)):
        if glob is None:
            continue
        values = sorted({v for f in same_rule if (v := getattr(f, field)) is not None})
        more = f" and {len(values) - _SHOWN} more" if len(values) > _SHOWN else ""
        named.append(f"{field} {', '.join(values[:_SHOWN])}{more}" if values else f"no {field}")
    return (
        f"{where} waives {waiver.describe()}, but none of the wheel's {len(same_rule)} {waiver.rule} "
        f"finding(s) matches it (they name {'; '.join(named)}): correct its globs, or remove the waiver"
    )
