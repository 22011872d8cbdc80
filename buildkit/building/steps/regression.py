"""The regression check: the gated wheel against the last release on the recipe's index
(:func:`buildkit.compare.baseline.compare_with_last_release`); a refusal for ``quarantine``."""

from __future__ import annotations

from typing import TextIO

from buildkit.building.gating import waived_lines
from buildkit.building.steps.state import Refusal, Run
from buildkit.compare.baseline import compare_with_last_release


def applies(run: Run) -> bool:
    return run.refusal is None


def perform(run: Run, log: TextIO) -> None:
    wheel, gated = run.built()
    result = run.result
    run.step = "the regression check"
    regression = compare_with_last_release(run.job, wheel, workdir=run.work / "baseline")
    if regression is None:
        return
    regression = run.regression = regression.waived(run.config.waivers, recipe=run.recipe.display_path)
    log.write(f"regression check against {regression.compared_with or 'no earlier release'}\n")
    waived = [f for f in regression.findings if f.waived is not None]
    result.waived += len(waived)
    result.waivers += waived_lines(waived)
    if not regression.passed:
        result.status = "gate-failed"
        result.gate = "FAIL"
        failing = [f for f in regression.findings if f.fails]
        result.errors += len(failing)
        lines = "\n".join(f"  ERROR [{f.rule}] {f.message}" for f in failing)
        message = f"{run.job.id}: {wheel.name} regresses against the last release\n{lines}"
        run.refusal = Refusal(wheel, gated, message, regression=regression)
