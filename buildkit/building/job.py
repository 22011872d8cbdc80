"""One job: its phases in order (:data:`STEPS`), the error it ends with and the clean-up;
:func:`build_one` is the one path of ``buildkit build`` and ``buildkit verify``.

A failed or gate-refused job removes the previous ``<out>/<job-id>/`` (unless it was built from
exactly these inputs); an interrupted job (Ctrl-C, SIGTERM) or a lost Docker engine leaves it as it
was. No job leaves a container behind: every one carries the job's ``io.rocm-buildkit.run`` label
and is removed by it; when the engine stops answering, the error says how to clean up."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, TextIO

from buildkit.building import Echo
from buildkit.building.output import drop_stale_output
from buildkit.building.progress import Board
from buildkit.building.staging import staging_folder
from buildkit.building.steps import (
    compile,
    gate,
    quarantine,
    record,
    regression,
    repair,
    requirements,
    reuse,
    split,
    stage,
)
from buildkit.building.steps.state import STEP_CIBUILDWHEEL, BuildOptions, JobResult, Run
from buildkit.docker_engine import ENGINE_ERRORS, PRUNE_HINT, engine_failed, remove_run_containers, run_filter
from buildkit.errors import BuildkitError, DockerUnavailable, Interrupted, RecipeError
from buildkit.plan.models import Job
from buildkit.recipe import Recipe

__all__ = ["STEPS", "BuildOptions", "JobResult", "build_one"]


class Step(Protocol):
    """A phase of a job: a module of :mod:`buildkit.building.steps`."""

    def applies(self, run: Run) -> bool: ...

    def perform(self, run: Run, log: TextIO) -> None: ...


#: the phases of a job, in order: the one place the order is written
STEPS: tuple[Step, ...] = (
    stage,
    reuse,
    requirements,
    compile,
    repair,
    gate,
    regression,
    split,
    quarantine,
    record,
)


def build_one(
    recipe: Recipe,
    job: Job,
    options: BuildOptions,
    *,
    client: Any,
    image: Any,
    source: Path,
    echo: Echo,
    verbose: bool = False,
    interrupted: str | None = None,
    board: Board | None = None,
) -> JobResult:
    """Build, repair, gate and publish-to-``out`` one job; never leaves partial output (the module's
    docstring). Ctrl-C becomes :class:`Interrupted`; a lost engine :class:`DockerUnavailable` naming the
    endpoint and the step."""
    started = time.monotonic()
    log_path = options.log_dir / f"{job.id}.log"
    result = JobResult(job=job.id, status="build-failed", log=log_path)
    work = staging_folder(options.out_dir, job)
    run = Run(recipe, job, options, client, image, source, work, echo, verbose, result, board=board)
    cleaned: bool | None = None
    try:
        with _log_file(log_path) as log:
            for step in STEPS:
                if not run.done and step.applies(run):
                    step.perform(run, log)
    except KeyboardInterrupt:
        # Ctrl-C/SIGTERM: an Interrupted (exit 130, a message, no traceback); the finally below
        # still removes the job's staging folder and containers first
        result.status = "interrupted"
        message = (
            interrupted or f"interrupted during {job.id}: no partial output was left in {options.out_dir}"
        )
        raise Interrupted(message) from None
    except ENGINE_ERRORS as exc:
        cleaned = remove_run_containers(client, run.build_id)
        raise _engine_lost(exc, run, cleaned) from None
    except (DockerUnavailable, RecipeError):  # a recipe error is the recipe's, not this job's (exit 3)
        raise
    except BuildkitError as exc:
        lost = _engine_error(client) if run.step == STEP_CIBUILDWHEEL else None
        if lost is not None:  # cibuildwheel failed because the engine went away
            cleaned = remove_run_containers(client, run.build_id)
            raise _engine_lost(lost, run, cleaned) from None
        _failed(run, exc)
    finally:
        result.seconds = time.monotonic() - started
        shutil.rmtree(run.work, ignore_errors=True)
        if cleaned is None:
            remove_run_containers(client, run.build_id)
    return result


def _failed(run: Run, exc: BuildkitError) -> None:
    """The job failed with ``exc``: said in its result and log; its previous output removed unless it
    was built from these inputs (a build failure) or the refusal is the gate's."""
    result = run.result
    result.message = str(exc)
    result.exit_code = exc.exit_code
    if result.log is not None:
        with contextlib.suppress(OSError), result.log.open("a", encoding="utf-8") as log:
            log.write(f"\nERROR: {exc}\n")
    keep = run.key if result.status == "build-failed" else None
    result.removed = drop_stale_output(run.dest, run.job, run.echo, keep_key=keep)


def _engine_error(client: Any) -> BaseException | None:
    """The error of a ping when the engine no longer answers, else None."""
    try:
        client.ping()
    except ENGINE_ERRORS as exc:
        return exc
    except Exception:
        return None
    return None


def _engine_lost(exc: BaseException, run: Run, cleaned: bool) -> DockerUnavailable:
    """The engine stopped answering (or refused) during ``run.step``; ``cleaned``: the job's
    containers were removed (else the hint says how, by label)."""
    hint = ""
    if not cleaned:
        hint = (
            "containers of this build may be left behind; once the engine answers, remove them with "
            f"{PRUNE_HINT} (all of buildkit's) or "
            f"`docker rm -f $(docker ps -aq --filter {run_filter(run.build_id)})`"
        )
    return engine_failed(exc, during=f"{run.step} of {run.job.id}", hint=hint)


@contextlib.contextmanager
def _log_file(path: Path) -> Iterator[TextIO]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", errors="surrogateescape") as fh:
        yield fh
