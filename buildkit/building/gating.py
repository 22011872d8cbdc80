"""The gate as ``build`` uses it: the job's gate configuration's key, and the verdict on a wheel.

``build`` gates a job's wheel with :meth:`GateConfig.from_recipe_job
<buildkit.gate.config.GateConfig.from_recipe_job>` (``check --recipe R --job ID`` uses the same,
the recipe's waivers included); :func:`gate_key` is its plain-data form for the inputs key (waivers
included: changing one changes the key), :func:`gate_wheel` runs the gate (:mod:`buildkit.gate`) on
a wheel and keeps what ``build`` needs of the verdict (:class:`Gated`): the counts, the reports (the
text and JSON ``buildkit check`` gives, kept beside a refused wheel) and a line per waiver used."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from buildkit.building.wheel_gate import python_abi_of, torch_abi_for, torch_stable_of
from buildkit.compare.torch_exports import load_torch_exports
from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.gate.findings import Finding
from buildkit.gate.report import render_all, render_human, to_json, verdict_to_json
from buildkit.gate.verdict import Verdict
from buildkit.inspect import inspect_wheel
from buildkit.records import to_data

#: the last field :class:`GateConfig` had when builds first recorded this key: a field declared after
#: it is in the key only when set (not None), so that a new setting leaves the keys of the builds made
#: before it, and their up-to-date wheels, valid (GateConfig's fields are declared in order, a new
#: one last)
KEYED_UP_TO = "required"
#: the fields in the key only when set
SINCE_KEYED: tuple[str, ...] = GateConfig._fields[GateConfig._fields.index(KEYED_UP_TO) + 1 :]


def gate_key(config: GateConfig) -> dict[str, Any]:
    """The gate configuration as plain JSON data (keys sorted) for
    :func:`~buildkit.building.key.inputs_key`, without the recipe's path as typed: its sha256 stays, so
    the same rules give the same key from any folder; a field declared after :data:`KEYED_UP_TO` only
    when it is set."""
    data: dict[str, Any] = json.loads(json.dumps(to_data(config), sort_keys=True, default=str))
    data.pop("recipe", None)
    for added in SINCE_KEYED:  # keys of builds before the field existed stay valid
        if data.get(added) is None:
            data.pop(added, None)
    return data


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
    """One line per waiver among ``findings``' waivers, in recipe order: what it waives, how many
    findings, and its reason."""
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
    report = inspect_wheel(wheel)
    torch_abi = torch = None
    if config.torch_abi:  # a torch wheel or folder: build injects no image reader
        torch = load_torch_exports(config.torch_abi)
        torch_abi = torch_abi_for(wheel, report, torch)
    verdict = evaluate(
        report,
        config,
        torch_abi=torch_abi,
        python_abi=python_abi_of(wheel, report, config),
        torch_stable=torch_stable_of(wheel, report, config, torch),
    )
    return gated_of(verdict)


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
