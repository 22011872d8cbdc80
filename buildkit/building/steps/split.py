"""The split: the recipe's ``wheel.split: per-target`` (:func:`buildkit.split.split_wheel`), the host
first; a refusal for ``quarantine`` when an output fails its gate."""

from __future__ import annotations

import time
from typing import TextIO

from buildkit.building.gating import gated_of
from buildkit.building.steps.state import Output, Refusal, Run
from buildkit.errors import GateFailed
from buildkit.gate.config import gate_key
from buildkit.split import SplitResult, output_config, split_wheel


def applies(run: Run) -> bool:
    return run.refusal is None and run.recipe.wheel.split == "per-target"


def perform(run: Run, log: TextIO) -> None:
    wheel, gated = run.built()
    run.step = "splitting the wheel per GPU target"
    t0 = time.monotonic()
    try:
        result = split_wheel(wheel, run.work / "split", config=run.config)
    except GateFailed:  # the input, gated again by the split: the job's gate passed it, so not expected
        run.result.status = "gate-failed"
        raise
    run.result.timings["split"] = time.monotonic() - t0
    for line in _lines(result):
        log.write(line + "\n")
    bundles = [b.member for b in result.bundles]
    for o in result.outputs:
        used = output_config(run.config, target=o.target, bundles=bool(bundles))
        origin = {"filename": wheel.name, "sha256": gated.sha256}
        record = {
            "role": o.role,
            "target": o.target,
            "distribution": o.distribution,
            "from": origin,
            "bundles": bundles,
        }
        run.outputs.append(Output(o.path, gated_of(o.verdict), gate_key(used), record))
    if not result.passed:
        failing = next(out for out in run.outputs if not out.gated.passed)
        run.result.status = "gate-failed"
        refused = f"{run.job.id}: the gate refused {failing.wheel.name}, split from {wheel.name}"
        message = f"{refused}\n{failing.gated.summary}"
        target = failing.split["target"] if failing.split else None
        run.refusal = Refusal(failing.wheel, failing.gated, message, device_target=target)


def _lines(result: SplitResult) -> list[str]:
    lines = [f"split {result.source.name} per GPU target:"]
    lines += [
        f"  {o.target or 'host'}: {o.path.name} ({o.size} bytes, {o.code_objects} code objects)"
        for o in result.outputs
    ]
    lines += [
        f"  kept in the host wheel: {b.member} ({', '.join(b.targets)} inside offload bundles)"
        for b in result.bundles
    ]
    return lines
