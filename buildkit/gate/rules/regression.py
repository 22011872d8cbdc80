"""The gate rule "no regression against the last release" (recipe ``gate.no_regression_against``).

A job whose recipe names a PEP 503 simple index (:attr:`buildkit.plan.Job.regression_baseline`)
compares each new wheel with the newest earlier release of the same project and compatible tags
there (:func:`buildkit.gate.diff.diff_against_index`: the ``#sha256=`` fragment is verified, the job's
repair exclude globs apply). Every regression the diff finds becomes a gate
:class:`~buildkit.gate.findings.Finding` with rule ``"regression"`` and severity ``"error"``, naming what
regressed in its fields:

* a symbol version above what the last release needed: ``library`` ``libc.so.6``, ``symbol``
  ``GLIBC_2.34``, ``file`` the member needing it;
* a less compatible manylinux tag: ``symbol`` the new tag;
* a platform tag of the file name no new tag covers: ``symbol`` the lost tag;
* a library newly external (neither whitelisted, grafted nor excluded): ``library``;
* gfx targets removed from an object (``file``) or gone from the wheel: ``symbol`` the target id(s).

The rule runs after the gate, where the index can be read: :mod:`buildkit.gate.baseline` finds the
baseline and calls :func:`findings_from_diff`. No earlier compatible release (a first release) is no
regression: nothing is reported. An index that
cannot be read is a :class:`~buildkit.errors.UsageError` (exit 2) and a baseline whose bytes do not
match the index's hash a :class:`~buildkit.errors.WheelReadError` (exit 6): the rule could not be
evaluated, so the caller must not treat the wheel as passing it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule

if TYPE_CHECKING:
    from buildkit.gate.diff import WheelDiff

REGRESSION = Rule(
    "regression",
    ("error",),
    checks=(
        "Only in `build`, when the recipe sets `gate.no_regression_against` (a PEP 503 index): "
        "against the newest earlier compatible release there, no higher symbol version, no less "
        "compatible manylinux tag, no platform tag lost, no newly external library, no gfx target"
        " removed."
    ),
    prevents=(
        "Users who could install the last release losing it: pip falls back to an older release "
        "or the sdist, the new one fails with `GLIBC_x not found` or a missing library, or a GPU "
        "that worked gets `hipErrorNoBinaryForGpu`."
    ),
)
RULES = (REGRESSION,)


def findings_from_diff(diff: WheelDiff, baseline_name: str) -> list[Finding]:
    """One error finding per regression of ``diff`` (in the order of :attr:`WheelDiff.regressions`)."""
    since = f"since {baseline_name}"
    out: list[Finding] = []

    def add(message: str, **where: str | None) -> None:
        out.append(REGRESSION.error(message, **where))

    if diff.policy_regression:
        add(
            f"the wheel is less compatible than the last release: manylinux tag "
            f"{diff.old_policy} -> {diff.new_policy} {since}",
            symbol=diff.new_policy,
        )
    for s in diff.symbols:
        if s.regression and s.new is not None:
            add(
                f"{s.library} {s.prefix} {s.old or 'not needed'} -> {s.new} {since} (needed by {s.files[0]})",
                file=s.files[0] if s.files else None,
                library=s.library,
                symbol=f"{s.prefix}_{s.new}",
            )
    for tag in diff.tags_uncovered:
        add(f"platform tag {tag} no longer provided {since} (no new tag covers it)", symbol=tag)
    for lib in diff.libraries:
        if lib.regression:
            was = "new" if lib.old is None else f"was {lib.old}"
            add(f"external library {lib.library} ({was}) {since}", library=lib.library)
    per_object: set[str] = set()
    for g in diff.gfx:
        if g.regression:
            per_object.update(g.removed)
            add(
                f"{g.file}: gfx target(s) {', '.join(g.removed)} removed {since}",
                file=g.file,
                symbol=",".join(g.removed),
            )
    for target in diff.gfx_removed:
        if target not in per_object:
            add(f"gfx target {target} gone from the wheel {since}", symbol=target)
    return out
