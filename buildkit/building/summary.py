"""The summary ``buildkit build`` prints after its jobs (:func:`render_summary`), and its JSON."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from buildkit.building.job import JobResult
from buildkit.building.quarantine import shown as _shown
from buildkit.records import to_data
from buildkit.tables import table_lines

#: a job's status on a terminal
_STATUS_COLOURS = {
    "passed": "green",
    "up-to-date": "green",
    "gate-failed": "red",
    "build-failed": "red",
    "interrupted": "yellow",
}


def _verdict_cell(r: JobResult) -> str:
    if r.gate is None:
        return "not run"
    counts = f"{r.errors} error{'s' * (r.errors != 1)}"
    if r.warnings:
        counts += f", {r.warnings} warning{'s' * (r.warnings != 1)}"
    if r.waived:
        counts += f", {r.waived} waived"
    return f"{r.gate} ({counts})"


def render_summary(
    results: Sequence[JobResult],
    *,
    recipe: str | None = None,
    out_dir: Path | None = None,
    cwd: Path | None = None,
    styled: bool = False,
) -> str:
    """Per job: status, time, gate verdict, where its files are (a refused wheel: how to examine it), the
    compiler cache's hit rate and each waiver used; next steps when a job passed and ``recipe`` is given.
    ``styled`` (a terminal): the header bold, the statuses coloured."""
    here = cwd or Path.cwd()
    rows = [("job", "status", "time", "gate")]
    rows += [(r.job, r.status, f"{r.seconds:.1f}s", _verdict_cell(r)) for r in results]
    table = table_lines(rows, styled=styled, colours=_STATUS_COLOURS)
    lines = [table[0]]
    smoke: list[str] = []
    for r, row in zip(results, table[1:], strict=True):
        lines.append(row)
        if r.wheel is not None and r.manifest is not None:
            lines.append(f"  wheel     {_shown(r.wheel, here)}")
            lines.append(f"  manifest  {_shown(r.manifest, here)}")
            if recipe is not None:
                smoke.append(
                    f"  buildkit smoke {shlex.quote(_shown(r.wheel, here))} --recipe {shlex.quote(recipe)}"
                )
        if r.compiler_cache is not None:
            lines.append(f"  ccache    {r.compiler_cache.describe()}")
        if r.refused is not None:
            lines.append(f"  refused   {_shown(r.refused, here)} (kept apart, never published)")
            if r.examine is not None:
                lines.append(f"  examine   {r.examine}")
        lines += [f"  waived    {line}" for line in r.waivers]
        # an optional package the build went without (cmake_log): never only a line of the job log
        lines += [f"  not found {line} (CMake; built without it)" for line in r.not_found]
        if r.removed is not None:
            lines.append(f"  removed   {_shown(r.removed, here)} (the previous wheel, now stale)")
        if r.log is not None:
            lines.append(f"  log       {_shown(r.log, here)}")
    if smoke and out_dir is not None and recipe is not None:
        out = shlex.quote(_shown(out_dir, here))
        lines += ["next steps:", *smoke, f"  buildkit publish {out} --recipe {shlex.quote(recipe)} --dry-run"]
    return "\n".join(lines)


def summary_json(results: Sequence[JobResult]) -> dict[str, Any]:
    """What ``buildkit build --json`` prints (``buildkit/schema/build.schema.json``): per job its status,
    time, gate verdict and counts, and the paths of its wheel, manifest, log and refused wheel."""

    def path(p: Path | None) -> str | None:
        return str(p) if p is not None else None

    jobs = [
        {
            "job": r.job,
            "status": r.status,
            "seconds": round(r.seconds, 3),
            "gate": r.gate,
            "errors": r.errors,
            "warnings": r.warnings,
            "waived": r.waived,
            "waivers": list(r.waivers),
            "wheel": path(r.wheel),
            "manifest": path(r.manifest),
            "log": path(r.log),
            "refused": path(r.refused),
            "examine": r.examine,
            "compiler_cache": to_data(r.compiler_cache),
            "message": r.message,
        }
        for r in results
    ]
    passed = all(r.status in ("passed", "up-to-date") for r in results)
    return {"schema": "rocm-buildkit/build", "schema_version": 1, "ok": passed, "jobs": jobs}
