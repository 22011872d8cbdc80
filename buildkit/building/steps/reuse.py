"""Reuse: the job's output folder already holds the wheel(s) built from these inputs, and they still
pass the gate (run again on them: cheap next to a build, it catches rule changes the key cannot see)."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from buildkit import manifest
from buildkit.building.gating import Gated
from buildkit.building.key import up_to_date, up_to_date_wheel
from buildkit.building.steps import gate
from buildkit.building.steps.state import Run
from buildkit.split import output_config


def applies(run: Run) -> bool:
    return not run.options.force


def perform(run: Run, log: TextIO) -> None:
    """The job is done (``run.done``, its result filled in) when ``run.dest`` holds the wheel(s) of
    ``run.key`` that pass the gate; a split's outputs each with the configuration
    :func:`buildkit.split.output_config` gives it."""
    run.step = "the up-to-date check"
    assert run.key is not None
    wheels = _built_from(run.dest, run.key)
    verdicts: list[Gated] = []
    for wheel in wheels:
        recorded = manifest.read(wheel).get("split")
        used = run.config
        if isinstance(recorded, dict):
            used = output_config(used, target=recorded.get("target"), bundles=bool(recorded.get("bundles")))
        gated = gate.judge(wheel, used)
        if not gated.passed:
            log.write(f"{wheel.name} was built from the same inputs but fails the gate now: rebuilding\n")
            return
        verdicts.append(gated)
    if not wheels:
        return
    names = ", ".join(w.name for w in wheels)
    log.write(f"up to date: {names} built from the same inputs ({run.key[:12]}) and passing the gate\n")
    result = run.result
    result.note_verdict(verdicts[0])
    result.status = "up-to-date"
    result.wheel = wheels[0]
    result.message = f"{wheels[0].name} (inputs unchanged)"
    run.done = True


def _built_from(dest: Path, key: str) -> list[Path]:
    """The wheel(s) in ``dest`` built from ``key`` (a split's every output, the host first); none when
    ``dest`` holds no such wheel."""
    existing = up_to_date(dest, key)
    if existing is None:
        return []
    if not isinstance(manifest.read(existing).get("split"), dict):
        return [existing]
    outputs = [w for w in sorted(dest.glob("*.whl")) if up_to_date_wheel(w, key)]
    return sorted(outputs, key=lambda w: (manifest.read(w).get("split") or {}).get("role") != "host")
