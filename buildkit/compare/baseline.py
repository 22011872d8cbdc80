"""Run the no-regression rule (:mod:`buildkit.gate.rules.regression`) for a job's wheel: find the
newest earlier compatible release on the recipe's index (:func:`buildkit.compare.diff.diff_against_index`),
diff the wheel against it, and turn what regressed into findings. ``build`` calls it after the gate.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from buildkit.compare.diff import Baseline, WheelDiff, diff_against_index
from buildkit.gate.findings import Finding
from buildkit.gate.rules import AFTER_GATE, waive
from buildkit.gate.rules.regression import REGRESSION
from buildkit.gatespec import Waiver
from buildkit.plan.models import Job
from buildkit.records import json_shape


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


@json_shape("index_url", "baseline", "passed", "findings")
@dataclass(frozen=True)
class RegressionCheck:
    """The outcome of the rule for one wheel: the index, the release it was compared with (``baseline``;
    ``baseline.file`` None on a first release), the diff (None on a first release) and the findings."""

    index_url: str
    baseline: Baseline
    diff: WheelDiff | None
    findings: tuple[Finding, ...]

    @property
    def passed(self) -> bool:
        """No regression finding, other than those a recipe's waiver accepted."""
        return not any(f.fails for f in self.findings)

    def waived(self, waivers: Sequence[Waiver], *, recipe: str | None = None) -> RegressionCheck:
        """This check with the ``regression`` waivers among ``waivers`` applied to its findings
        (:func:`buildkit.gate.rules.waive`: one ``waiver-unused`` error per waiver matching none)."""
        mine = [w for w in waivers if w.rule in AFTER_GATE]
        if not mine:
            return self
        return replace(self, findings=tuple(waive(self.findings, mine, recipe=recipe)))

    @property
    def compared_with(self) -> str | None:
        """File name of the release compared with, None on a first release."""
        return None if self.baseline.file is None else self.baseline.file.filename


def compare_with_last_release(
    job: Job, wheel_path: Path, *, workdir: Path | None = None
) -> RegressionCheck | None:
    """Run the rule for ``wheel_path`` built by ``job``; None when the recipe sets no such rule.

    The baseline is downloaded into ``workdir`` (default: a temporary directory removed afterwards).
    """
    url = job.regression_baseline
    if url is None:
        return None
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="buildkit-regression-") as tmp:
            return compare_with_last_release(job, wheel_path, workdir=Path(tmp))
    workdir.mkdir(parents=True, exist_ok=True)
    baseline, diff = diff_against_index(url, wheel_path, exclude_globs=job.exclude_globs, workdir=workdir)
    findings: tuple[Finding, ...] = ()
    if diff is not None and baseline.file is not None:
        findings = tuple(findings_from_diff(diff, baseline.file.filename))
    return RegressionCheck(url, baseline, diff, findings)


def check_regression(job: Job, wheel_path: Path, *, workdir: Path | None = None) -> list[Finding]:
    """The rule's findings for ``wheel_path`` (empty: no rule, a first release, or no regression)."""
    check = compare_with_last_release(job, wheel_path, workdir=workdir)
    return [] if check is None else list(check.findings)
