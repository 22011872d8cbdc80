"""Run the no-regression rule (:mod:`buildkit.gate.rules.regression`) for a job's wheel: find the
newest earlier compatible release on the recipe's index (:func:`buildkit.gate.diff.diff_against_index`),
diff the wheel against it, and turn what regressed into findings. ``build`` calls it after the gate.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from buildkit.gate.diff import Baseline, WheelDiff, diff_against_index
from buildkit.gate.findings import Finding, Waiver
from buildkit.gate.rules import AFTER_GATE, waive
from buildkit.gate.rules.regression import findings_from_diff
from buildkit.plan.models import Job


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

    def to_json(self) -> dict[str, Any]:
        """For the manifest: where the baseline came from and what regressed (not the whole diff)."""
        return {
            "index_url": self.index_url,
            "baseline": self.baseline.to_json(),
            "passed": self.passed,
            "findings": [f.to_json() for f in self.findings],
        }


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
