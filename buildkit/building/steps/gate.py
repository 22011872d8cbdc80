"""The gate: the job's wheel judged with the recipe's configuration and this build's facts (the torch
wheel of its lock for ``torch-abi``, ROCm from pip's SDK wheels); a refusal for ``quarantine``.
:func:`judge` is the job's one call of the gate (``reuse`` judges with it too)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TextIO

from buildkit.building import requirements
from buildkit.building.gating import Gated, gate_wheel
from buildkit.building.steps.state import Refusal, Run
from buildkit.errors import BuildFailed, UsageError
from buildkit.gate.config import GateConfig
from buildkit.judge import rocm_pip
from buildkit.plan.models import Job


def judge(wheel: Path, config: GateConfig) -> Gated:
    return gate_wheel(wheel, config)


def applies(run: Run) -> bool:
    return True


def perform(run: Run, log: TextIO) -> None:
    # the gate's facts of this build (the locked torch, ROCm from pip's SDK wheels); the configuration
    # recorded for publish stays the recipe's (gate_key(config)), which publish derives again
    facts = _with_sdk(_against_locked_torch(run.config, run.job, run.lock, run.wheelhouse), run)
    wheel = run.wheel
    assert wheel is not None
    run.step = "the gate"
    run.tell("gate")
    t0 = time.monotonic()
    gated = run.gated = judge(wheel, facts)
    run.result.timings["gate"] = time.monotonic() - t0
    run.result.note_verdict(gated)
    log.write(gated.details + "\n")  # the log keeps every line
    if not gated.passed:
        run.result.status = "gate-failed"
        message = f"{run.job.id}: the gate refused {wheel.name}\n{gated.summary}"
        run.refusal = Refusal(wheel, gated, message)


def _against_locked_torch(
    config: GateConfig, job: Job, lock: requirements.Lock | None, wheelhouse: Path
) -> GateConfig:
    """A hermetic torch job's gate also runs the ``torch-abi`` rule, against the torch wheel of its
    lock: the very file its build environment installed, still in the staged wheelhouse (read
    streaming, its exports cached per sha256). A network build has no lock: ``check --torch-abi``.
    A wheel reused as up to date is gated again without it (its manifest has the build's verdict)."""
    if config.torch_abi is not None or lock is None or job.torch_requirement is None:
        return config
    torch = next((f for f in lock.files if f.name == "torch"), None)
    if torch is None:
        return config
    return config._replace(torch_abi=str(wheelhouse / torch.file))


def _with_sdk(config: GateConfig, run: Run) -> GateConfig:
    """ROCm from pip: the gate's ``rocm_pip`` facts, the SDK wheels of the build's lock (the very
    files the build installed, still in the staged wheelhouse) read by :func:`rocm_pip.gather` against
    the requirement the wheel declares. The configuration recorded in the manifest (and that
    ``publish`` runs again) is the inputs key's, without them."""
    requirement, lock = run.job.rocm_pip_requirement, run.lock
    if requirement is None or lock is None:
        return config
    wheels = [run.wheelhouse / f.file for f in lock.files if rocm_pip.is_sdk_dist(f.name)]
    try:
        sdk = rocm_pip.gather(requirement, wheels, source="the build's lock")
    except UsageError as exc:
        raise BuildFailed(f"{run.job.id}: ROCm from pip: {exc}") from None
    return config._replace(rocm_pip=sdk)
