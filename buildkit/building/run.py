"""``buildkit build``: every job of a plan, each one cibuildwheel run in a pinned builder image, gated.

:func:`build_plan` fetches the source once and refuses a job its image cannot serve before building
anything, then builds the jobs (:func:`buildkit.building.job.build_one`)."""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from buildkit.building import Echo, runner
from buildkit.building.job import BuildOptions, JobResult, build_one
from buildkit.building.output import check_writable
from buildkit.building.progress import LiveBoard
from buildkit.building.remote_cache import Remote, channel, parse_remote
from buildkit.building.staging import fetch_source, run_prebuild_checks, sweep_debris
from buildkit.docker_engine import ENGINE_ERRORS, connect, engine_failed
from buildkit.errors import Interrupted, RecipeError
from buildkit.image import rocm_build_args
from buildkit.image.builder import ensure_builder
from buildkit.image.contract import spec_contract
from buildkit.image.probe import Contract, check_builder
from buildkit.plan.models import Job, Plan
from buildkit.plan.source_version import check_source_version
from buildkit.recipe import Recipe


def build_plan(
    recipe: Recipe,
    plan: Plan,
    job_ids: Sequence[str],
    options: BuildOptions,
    *,
    echo: Echo,
    verbose: bool = False,
    client: Any = None,
    parallel: int = 1,
    board: LiveBoard | None = None,
) -> list[JobResult]:
    """Build ``job_ids`` (default: every job) of ``plan``, up to ``parallel`` at once (threads; the
    caller shares the cores out through ``options.parallel_jobs``); the results in plan order.
    ``board`` (a terminal): each job's phase shown live, from its builder image to its gate."""
    jobs = [plan.job(j) for j in dict.fromkeys(job_ids)] if job_ids else list(plan.jobs)
    if not jobs:
        raise RecipeError("the plan has no job to build", file=recipe.display_path)
    if board is not None:
        board.expect([job.id for job in jobs])
    remote = parse_remote(options.ccache_remote) if options.ccache_remote and options.use_cache else None
    check_writable(options.out_dir, "--out")
    check_writable(options.log_dir, "--log-dir")
    sweep_debris(options.out_dir, echo)
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="buildkit-src-"))
        source = _checked_source(recipe, plan, jobs, Path(tmp), echo)
        client = client if client is not None else connect()
        for job in jobs:  # refuse a job its image cannot serve before building anything
            if recipe.image.profile_data:
                rocm_build_args(recipe.image.profile_data, job.rocm)
        builds = _Builds(recipe, jobs, options, remote, client, source, stack, echo, verbose, board)
        if parallel <= 1 or len(jobs) == 1:
            return [builds.build(job, builds.prepare(job), echo) for job in jobs]
        prepared = []
        for job in jobs:  # every image before any job
            prepared.append((job, builds.prepare(job)))
            if board is not None:
                board.wait(job.id)
        return _side_by_side(prepared, builds.build, parallel, echo)


def _checked_source(recipe: Recipe, plan: Plan, jobs: list[Job], folder: Path, echo: Echo) -> Path:
    """The recipe's source fetched into ``folder``, checked before any image or compiler: a version the
    source fixes and the plan's label cannot carry, and the recipe's pre-build checks."""
    source = fetch_source(recipe, folder, echo)
    checked_plan = check_source_version(plan, source, jobs)
    for note in checked_plan.notes[len(plan.notes) :]:
        echo(f"note: {note}")
    for path in run_prebuild_checks(recipe, source):
        echo(f"pre-build check: {path.relative_to(source)} ok (gfx column, unique keys)")
    return source


@dataclasses.dataclass
class _Builds:
    """The jobs of one ``build_plan``: their builder images, prepared once per ROCm release, the
    channel to the remote compiler cache, opened once (closed with ``stack``), and each job built."""

    recipe: Recipe
    jobs: list[Job]
    options: BuildOptions
    remote: Remote | None
    client: Any
    source: Path
    stack: contextlib.ExitStack
    echo: Echo
    verbose: bool
    board: LiveBoard | None
    images: dict[str, Any] = dataclasses.field(default_factory=dict)

    def prepare(self, job: Job) -> Any:
        """The builder image of ``job`` (one per ROCm release: a 7.2 job never builds on 6.4), and
        the channel to the remote compiler cache once."""
        if self.board is not None:
            self.board.phase(job.id, "image")
        if job.rocm not in self.images:
            try:
                self.images[job.rocm] = self._builder(job.rocm)
            except ENGINE_ERRORS as exc:
                raise engine_failed(exc, during=f"preparing the builder image of {job.id}") from None
        image = self.images[job.rocm]
        options, remote = self.options, self.remote
        if remote is not None and options.cache_channel is None and not self.recipe.network:
            try:  # the relay runs the builder image's python3; removed when the build ends
                opened = self.stack.enter_context(channel(self.client, image.tag, remote))
            except ENGINE_ERRORS as exc:
                raise engine_failed(exc, during="opening the channel to the compiler-cache store") from None
            self.options = dataclasses.replace(options, cache_channel=opened)
            self.echo(f"compiler cache: {remote.url} through {opened.url} (volume {opened.volume})")
        return image

    def _builder(self, rocm: str) -> Any:
        """The builder image of the jobs of ROCm ``rocm``, built or reused, its contract checked."""
        recipe, served = self.recipe, [j for j in self.jobs if j.rocm == rocm]
        archs = [str(a) for j in served for a in j.archs.kept]  # the image keeps these GPU kernel libraries
        image = ensure_builder(
            recipe.image,
            rocm,
            recipe_dir=recipe.path.parent,
            recipe_name=recipe.name,
            client=self.client,
            progress=self.echo,
            archs=archs,
        )
        contract = Contract.of(
            (j.cp_tag for j in served), archs, recipe.hooks.build_frontend, spec_contract(recipe.image, rocm)
        )
        check_builder(self.client, image.tag, image.id, contract, progress=self.echo)
        return image

    def build(self, job: Job, image: Any, say: Echo) -> JobResult:
        say(f"[{job.id}] building in {image.tag} for {job.archs.pytorch_rocm_arch()}")
        try:
            result = build_one(
                self.recipe,
                job,
                self.options,
                client=self.client,
                image=image,
                source=self.source,
                echo=say,
                verbose=self.verbose,
                board=self.board,
            )
        finally:
            if self.board is not None:
                self.board.done(job.id)
        first = result.message.splitlines()[0] if result.message else ""
        say(f"[{job.id}] {result.status} in {result.seconds:.1f}s {first}")
        if result.status not in ("passed", "up-to-date"):
            say(result.message)
            say(f"    log: {result.log}")
        return result


def _prefixed(job: Job, echo: Echo, lock: threading.Lock) -> Echo:
    """``echo`` for one of several jobs side by side: whole lines, each naming its job."""
    tag = f"[{job.id}]"

    def say(line: str) -> None:
        text = "\n".join(part if part.startswith(tag) else f"{tag} {part}" for part in line.split("\n"))
        with lock:
            echo(text)

    return say


def _side_by_side(
    prepared: list[tuple[Job, Any]],
    build: Callable[[Job, Any, Echo], JobResult],
    parallel: int,
    echo: Echo,
) -> list[JobResult]:
    """The jobs on ``parallel`` threads; the results in plan order. Ctrl-C (or the first job raising)
    stops every running cibuildwheel (``runner.cancel``: each removes its container) and waits for
    every job to clean up before the error goes on."""
    lock = threading.Lock()
    runner.reset()
    pool = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="buildkit-job")
    try:
        futures = [pool.submit(build, job, image, _prefixed(job, echo, lock)) for job, image in prepared]
        return [future.result() for future in futures]
    except KeyboardInterrupt:
        runner.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        raise Interrupted(
            "interrupted: every running job was stopped and cleaned up; no partial output was left"
        ) from None
    except BaseException:
        runner.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
