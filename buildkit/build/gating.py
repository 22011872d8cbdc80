"""The gate as ``build`` uses it: the job's gate configuration's key, and the verdict on a wheel.

``build`` gates a job's wheel with :meth:`GateConfig.from_recipe_job
<buildkit.gate.config.GateConfig.from_recipe_job>` (``check --recipe R --job ID`` uses the same);
:func:`gate_key` is its plain-data form for the inputs key, :func:`gate_wheel` runs the gate
(:mod:`buildkit.gate`) on a wheel and keeps what ``build`` needs of the verdict (:class:`Gated`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.gate.report import render_human, verdict_to_json
from buildkit.inspect import inspect_wheel


def gate_key(config: GateConfig) -> dict[str, Any]:
    """The gate configuration as plain JSON data (keys sorted) for
    :func:`~buildkit.build.key.inputs_key`, without the recipe's path as typed: its sha256 stays, so
    the same rules give the same key from any folder."""
    data: dict[str, Any] = json.loads(json.dumps(config.to_json(), sort_keys=True, default=str))
    data.pop("recipe", None)
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


def gate_wheel(wheel: Path, config: GateConfig) -> Gated:
    verdict = evaluate(inspect_wheel(wheel), config)
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
    )
