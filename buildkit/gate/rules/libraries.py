"""The ``external-library`` rule: every DT_NEEDED of a host ELF is grafted in the wheel (ld.so finds
it there), excluded by a rule (provided at run time: the ROCm and torch runtime), or on the target
policy's whitelist (the most compatible policy's without a target)."""

from __future__ import annotations

from collections.abc import Iterator

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.loading import compatible
from buildkit.gate.rule import Rule
from buildkit.gate.rules.integrity import carriers
from buildkit.gate.rules.tags import some

EXTERNAL_LIBRARY = Rule(
    "external-library",
    ("error",),
    checks=(
        "Every DT_NEEDED library of a host ELF is grafted in the wheel, matched by an exclude "
        "glob, or on the target policy's whitelist (the most compatible policy's without a "
        "target)."
    ),
    prevents=(
        "A library not shipped: ImportError `libfoo.so.1: cannot open shared object file` on a "
        "machine that does not have it."
    ),
)

RULES = (EXTERNAL_LIBRARY,)


def check(facts: Facts) -> Iterator[Finding]:
    """One finding per library the target policy does not allow, naming the members needing it (and
    a member carrying that name where ld.so does not find it: see the load-order warning)."""
    if not facts.judged:
        return
    target = facts.target or facts.pols[0]
    elves = facts.report.elves
    by_member = {e.member: e for e in elves}
    by_name = carriers(elves)
    for use in facts.libraries:
        if use.status in ("external", "whitelisted") and not target.allows_library(use.library):
            verb = "needs" if len(use.needed_by) == 1 else "need"
            needer = by_member[use.needed_by[0]]
            carrier = next((e.member for e in by_name.get(use.library, ()) if compatible(e, needer)), None)
            where = (
                f"not excluded by a rule, and ld.so does not find the wheel's {carrier} from "
                f"{'it' if len(use.needed_by) == 1 else 'them'} (see the load-order warning; "
                if carrier
                else "not grafted in the wheel and not excluded by a rule ("
            )
            yield EXTERNAL_LIBRARY.error(
                f"{some(use.needed_by)} {verb} {use.library}: not on the {target.name} whitelist, "
                f"{where}graft it with auditwheel repair or exclude it with --exclude/--exclude-set)",
                file=use.needed_by[0],
                library=use.library,
            )
