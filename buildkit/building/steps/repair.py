"""Repair, on the host: the wheel checked for the plan's version, retagged to the recipe's claim
(:mod:`buildkit.building.retag`) and given its SBOM (:mod:`buildkit.building.sbom`)."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from packaging.utils import parse_wheel_filename

from buildkit.building import retag, sbom
from buildkit.building.steps.record import torch_record
from buildkit.building.steps.state import Run
from buildkit.errors import BuildFailed
from buildkit.plan.models import Job


def applies(run: Run) -> bool:
    return True


def perform(run: Run, log: TextIO) -> None:
    assert run.wheel is not None
    _check_version(run.wheel, run.job)
    wheel = run.wheel = retag.to_claim(run.wheel, run.job, log)
    run.step = "writing the SBOM of the excluded runtime libraries"
    torch = torch_record(run.job, run.lock)
    needed = sbom.attach(
        wheel,
        run.job.exclude_globs,
        rocm=run.job.rocm,
        torch_version=(torch or {}).get("version") or run.job.torch,
        epoch=run.epoch,
    )
    log.write(f"SBOM: {len(needed)} excluded runtime librar{'y' if len(needed) == 1 else 'ies'} listed\n")


def _check_version(wheel: Path, job: Job) -> None:
    _name, version, _build, _tags = parse_wheel_filename(wheel.name)
    if str(version) != job.version:
        raise BuildFailed(
            f"{wheel.name}: the package built version {version}, the plan says {job.version}; "
            "make its build read BUILDKIT_VERSION (or SETUPTOOLS_SCM_PRETEND_VERSION)"
        )
