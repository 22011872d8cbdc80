"""The gate as ``build`` uses it: the verdict on a wheel.

``build`` gates with :meth:`GateConfig.from_job <buildkit.gate.config.GateConfig.from_job>`
(what ``check --recipe R --job ID`` uses; its :func:`~buildkit.gate.config.gate_key` is part of the
inputs key), and keeps what it needs of the verdict (:class:`Gated`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from buildkit.compare.torch_exports import load_torch_exports
from buildkit.gate.config import GateConfig
from buildkit.gate.findings import Finding
from buildkit.gate.report import render_all, render_human, to_json, verdict_to_json
from buildkit.gate.verdict import Verdict
from buildkit.judge import judge_wheel


@dataclass(frozen=True)
class Gated:
    """The gate's verdict on one wheel, as much of it as ``build`` needs."""

    passed: bool
    errors: int
    warnings: int
    sha256: str
    size: int
    tag: str | None
    summary: str  # the human report (errors and warnings summarised)
    details: str  # every line, for the log
    verdict: dict[str, Any]  # for the manifest
    waived: int = 0  # findings a recipe waiver accepted (not counted in errors / warnings)
    #: one line per waiver that accepted findings: ``gate.waive[0] (size): 1 finding waived: reason``
    waivers: tuple[str, ...] = ()
    report: str = ""  # what `buildkit check -v` prints for the wheel
    report_json: dict[str, Any] = field(default_factory=dict)  # what `buildkit check --json` prints


def waived_lines(findings: Iterable[Finding]) -> tuple[str, ...]:
    """One line per waiver used among ``findings``, in recipe order: what, how many findings, and why."""
    counts: dict[int, int] = {}
    waivers = {}
    for f in findings:
        if f.waived is not None:
            counts[f.waived.place] = counts.get(f.waived.place, 0) + 1
            waivers[f.waived.place] = f.waived
    lines = []
    for index in sorted(waivers):
        n, w = counts[index], waivers[index]
        lines.append(f"{w.at} ({w.describe()}): {n} finding{'s' * (n != 1)} waived: {w.reason}")
    return tuple(lines)


def gate_wheel(wheel: Path, config: GateConfig) -> Gated:
    """``wheel`` judged (:func:`buildkit.judge.judge_wheel`) against the torch ``config`` names, if
    any (a torch wheel or folder: ``build`` injects no image reader)."""
    torch = load_torch_exports(config.torch_abi) if config.torch_abi else None
    return gated_of(judge_wheel(wheel, config, torch=torch).verdict)


def gated_of(verdict: Verdict) -> Gated:
    """What ``build`` keeps of a verdict (a split's outputs are gated by :mod:`buildkit.split`)."""
    return Gated(
        passed=verdict.passed,
        errors=len(verdict.errors),
        warnings=len(verdict.warnings),
        sha256=verdict.sha256,
        size=verdict.size,
        tag=verdict.overall_tag,
        summary=render_human(verdict),
        details=render_human(verdict, verbose=True),
        verdict=verdict_to_json(verdict),
        waived=len(verdict.waived),
        waivers=waived_lines(verdict.findings),
        report=render_all([verdict], verbose=True),
        report_json=to_json([verdict]),
    )
