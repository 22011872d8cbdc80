"""``buildkit build``: every job of a plan, each one cibuildwheel run in a pinned builder image, gated.

:func:`build_plan` checks ``--out`` and ``--log-dir``, sweeps what killed builds left there, fetches
the source once, checks its version rule against the jobs' versions
(:func:`buildkit.plan.source_version.check_source_version`) and runs its pre-build checks, refuses a
job its image cannot serve before building anything, prepares one builder image per (profile, ROCm
release) and builds the jobs one after the other (:func:`buildkit.build.job.build_one`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from buildkit.build import Echo
from buildkit.build.job import BuildOptions, JobResult, build_one
from buildkit.build.output import check_writable
from buildkit.build.remote_cache import channel, parse_remote
from buildkit.build.staging import fetch_source, run_prebuild_checks, sweep_debris
from buildkit.docker_engine import ENGINE_ERRORS, connect, engine_failed
from buildkit.errors import RecipeError
from buildkit.image import rocm_build_args
from buildkit.image.builder import ensure_builder
from buildkit.image.probe import Contract, check_builder
from buildkit.plan.models import Plan
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
) -> list[JobResult]:
    jobs = [plan.job(j) for j in dict.fromkeys(job_ids)] if job_ids else list(plan.jobs)
    if not jobs:
        raise RecipeError("the plan has no job to build", file=recipe.display_path)
    remote = parse_remote(options.ccache_remote) if options.ccache_remote and options.use_cache else None
    check_writable(options.out_dir, "--out")
    check_writable(options.log_dir, "--log-dir")
    sweep_debris(options.out_dir, echo)
    results: list[JobResult] = []
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="buildkit-src-"))
        source = fetch_source(recipe, Path(tmp), echo)
        # before any image or compiler: a version the source fixes and the plan's label cannot carry
        checked_plan = check_source_version(plan, source, jobs)
        for note in checked_plan.notes[len(plan.notes) :]:
            echo(f"note: {note}")
        checked = run_prebuild_checks(recipe, source)
        for path in checked:
            echo(f"pre-build check: {path.relative_to(source)} ok (gfx column, unique keys)")
        if client is None:
            client = connect()
        images: dict[str, Any] = {}
        for job in jobs:  # refuse a job its image cannot serve before building anything
            if recipe.image.profile:
                rocm_build_args(recipe.image.profile, job.rocm)
        for job in jobs:
            key = job.rocm
            if key not in images:  # one image per ROCm release: a 7.2 job never builds on 6.4
                served = [j for j in jobs if j.rocm == job.rocm]
                try:
                    images[key] = ensure_builder(
                        recipe.image,
                        job.rocm,
                        recipe_dir=recipe.path.parent,
                        recipe_name=recipe.name,
                        client=client,
                        progress=echo,
                        # the image keeps the GPU kernel libraries of these archs only
                        archs=[str(a) for j in served for a in j.archs.kept],
                    )
                    contract = Contract.of(
                        (j.cp_tag for j in served),
                        (str(a) for j in served for a in j.archs.kept),
                        recipe.hooks.build_frontend,
                    )
                    check_builder(client, images[key].tag, images[key].id, contract, progress=echo)
                except ENGINE_ERRORS as exc:
                    raise engine_failed(exc, during=f"preparing the builder image of {job.id}") from None
            image = images[key]
            if remote is not None and options.cache_channel is None and not recipe.network:
                try:  # the relay runs the builder image's python3; removed when the build ends
                    opened = stack.enter_context(channel(client, image.tag, remote))
                except ENGINE_ERRORS as exc:
                    during = "opening the channel to the compiler-cache store"
                    raise engine_failed(exc, during=during) from None
                options = dataclasses.replace(options, cache_channel=opened)
                echo(
                    f"compiler cache: {remote.url} through the relay's {opened.url} (volume {opened.volume})"
                )
            echo(f"[{job.id}] building in {image.tag} for {job.archs.pytorch_rocm_arch()}")
            result = build_one(
                recipe, job, options, client=client, image=image, source=source, echo=echo, verbose=verbose
            )
            results.append(result)
            first = result.message.splitlines()[0] if result.message else ""
            echo(f"[{job.id}] {result.status} in {result.seconds:.1f}s {first}")
            if result.status not in ("passed", "up-to-date"):
                echo(result.message)
                echo(f"    log: {result.log}")
    return results
