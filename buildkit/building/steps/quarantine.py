"""Quarantine: the wheel a phase refused (``run.refusal``) kept apart (:mod:`buildkit.building.quarantine`);
the job then fails (GateFailed) with where it is and how to examine it."""

from __future__ import annotations

from typing import Any, TextIO

from buildkit.building.quarantine import JSON_SUFFIX, TEXT_SUFFIX, examine_command, quarantine, shown
from buildkit.building.steps.state import Refusal, Run
from buildkit.errors import BuildFailed, GateFailed
from buildkit.records import to_data


def applies(run: Run) -> bool:
    return run.refusal is not None


def perform(run: Run, log: TextIO) -> None:
    assert run.refusal is not None
    raise GateFailed(run.refusal.message + _keep(run, run.refusal))


def _keep(run: Run, refusal: Refusal) -> str:
    """Keep the refused wheel; the lines the job's failure message ends with (where it is, how to
    examine it, or why it could not be kept)."""
    if not run.options.quarantine:
        return ""
    wheel, gated, regression = refusal.wheel, refusal.gated, refusal.regression
    dest = run.options.refused_dir / run.job.id
    index = regression.index_url if regression is not None else None
    command = examine_command(dest / wheel.name, run.recipe.display_path, run.job, regression_index=index)
    if refusal.device_target is not None:  # a device wheel of the split: gated as one
        command += f" --device-target {refusal.device_target}"
    failing = [f for f in (regression.findings if regression is not None else ()) if f.fails]
    report = gated.report
    if regression is not None:  # the gate passed it: the text report ends with what regressed
        against = regression.compared_with or "no earlier release"
        report += f"\nregression check against {against} ({regression.index_url}):\n"
        report += "\n".join(f"  ERROR [{f.rule}] {f.message}" for f in failing)
    run.step = f"keeping the refused wheel in {dest}"
    try:
        run.result.refused = quarantine(
            wheel,
            dest,
            report=report,
            report_json=gated.report_json,
            record=_record(run, refusal, command),
            echo=run.echo,
        )
    except BuildFailed as exc:
        run.echo(f"[{run.job.id}] warning: {exc}")
        return f"\n  the refused wheel could not be kept: {exc}"
    run.result.examine = command
    return f"\n  refused wheel kept in {shown(run.result.refused)} (never published)\n  examine it: {command}"


def _record(run: Run, refusal: Refusal, command: str) -> dict[str, Any]:
    """The record of why the wheel was refused, kept beside it."""
    wheel, gated, regression = refusal.wheel, refusal.gated, refusal.regression
    failing = [f for f in (regression.findings if regression is not None else ()) if f.fails]
    errors = [f"[{f.rule}] {f.message}" for f in failing] or [
        f"[{f['rule']}] {f['message']}"
        for f in gated.verdict.get("findings", [])
        if f.get("severity") == "error" and not f.get("waived")
    ]
    return {
        "wheel": {"filename": wheel.name, "sha256": gated.sha256, "size": gated.size},
        "recipe": run.recipe.record(),
        "job": to_data(run.job),
        "image": {"profile": run.job.image_profile, "tag": run.image.tag, "id": run.image.id},
        "inputs_key": run.key,
        "refused_by": "regression" if regression is not None else "gate",
        "errors": errors,
        "verdict": gated.verdict,
        "regression": to_data(regression),
        "reports": {"text": wheel.name + TEXT_SUFFIX, "json": wheel.name + JSON_SUFFIX},
        "examine": command,
        "published": "never: a refused wheel has no manifest; fix the cause and build again",
    }
