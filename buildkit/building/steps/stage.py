"""Staging: the source copied into the job's private folder (cibuildwheel copies it to ``/project`` of
a container that gets no host mount) with what the build container runs beside it; the inputs key."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from buildkit.building import buildsystem, ccache, cibw, requirements, sdk_link
from buildkit.building.key import inputs_key, tool_versions
from buildkit.building.staging import source_date_epoch, stage_source, tree_digest
from buildkit.building.steps.state import Run
from buildkit.fsutil import atomic_write
from buildkit.gate.config import GateConfig, gate_key


def applies(run: Run) -> bool:
    return True


def perform(run: Run, log: TextIO) -> None:
    run.tell("staging")
    # a torch extension without a torch pin would build without torch: refused before anything runs
    buildsystem.check_torch_provided(run.job, run.source, run.recipe.display_path)
    staged, options = run.staged, run.options
    skip = (options.out_dir, options.log_dir, options.refused_dir)
    # a hermetic build (no network) needs no CA bundle: its index is the wheelhouse staged below
    run.with_ca = stage_source(
        run.source, staged, options.ca_bundle if run.recipe.network else None, skip=skip
    )
    for name, text, mode in _beside(run):
        (staged / ".buildkit").mkdir(exist_ok=True)
        atomic_write(staged / name, text, mode=mode)
    hermetic = not run.recipe.network
    isolation = options.build_isolation
    request = requirements.request_key(run.recipe, run.job, staged, isolation=isolation) if hermetic else None
    run.epoch = source_date_epoch(run.source, options.source_date_epoch)
    run.config = GateConfig.from_job(run.job, run.recipe)
    run.key = inputs_key(
        run.job,
        run.image.id,
        tree_digest(staged),
        run.epoch,
        isolation,
        recipe_sha256=run.recipe.build_sha256,  # a smoke: or publish: edit rebuilds nothing
        gate=gate_key(run.config),
        tools=tool_versions(),
        build_requirements=request,
    )


def _beside(run: Run) -> list[tuple[str, str, int | None]]:
    """The files staged beside the source for the build container: (path in the staged
    source, text, mode; None: ``open()``'s)."""
    files: list[tuple[str, str, int | None]] = []
    pins = cibw.constraints(run.job)
    if pins is not None:
        files.append((f".buildkit/{cibw.CONSTRAINTS_NAME}", pins, None))
    if ccache.uses_launcher(run.job):  # every HIP compile's -cuid, with or without the cache
        files.append((ccache.STAGED_LAUNCHER, ccache.launcher_script(), 0o755))
    if run.job.rocm_pip is not None:  # run after repair in the container (cibw.sdk_link_command)
        files.append((f".buildkit/{cibw.SDK_LINK_NAME}", Path(sdk_link.__file__).read_text(), None))
    return files
