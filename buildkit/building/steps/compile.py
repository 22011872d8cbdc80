"""Compile: cibuildwheel builds (and repairs, in its container) the staged source with the job's
options, through the compiler cache; its output read for the CMake packages not found and the cache's
statistics; the one wheel it made."""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

from buildkit.building import buildsystem, ccache, cibw, cmake_log, requirements, runner
from buildkit.building.progress import Phases
from buildkit.building.steps.state import STEP_CIBUILDWHEEL, Run, log_since
from buildkit.docker_engine import container_labels, keep_containers
from buildkit.errors import BuildFailed


def applies(run: Run) -> bool:
    return True


def perform(run: Run, log: TextIO) -> None:
    settings = _settings(run)
    if settings.build_isolation:
        _add_build_requires(run, log)
    options = cibw.cibuildwheel_options(run.job, settings)
    for line in cibw.describe(options):
        log.write(line + "\n")
    env = cibw.subprocess_environment(os.environ, options)
    env["SOURCE_DATE_EPOCH"] = str(run.epoch)
    if keep_containers():  # BUILDKIT_DEBUG_KEEP_CONTAINER: cibuildwheel keeps its container too
        env["CIBW_DEBUG_KEEP_CONTAINER"] = "1"
    raw_out = run.work / "wheelhouse"
    run.step = STEP_CIBUILDWHEEL
    t0 = time.monotonic()
    log.flush()
    start = log.tell()
    try:
        phases = Phases(run.job.id, run.echo, interactive=sys.stderr.isatty(), board=run.board)
        runner.run_cibuildwheel(
            run.staged, raw_out, env, log, run.echo, verbose=run.verbose, phases=phases.feed
        )
    except BuildFailed as exc:
        hint = None if settings.network else requirements.explain_offline_failure(log_since(log, start))
        if hint is None:
            raise
        raise BuildFailed(f"{exc}\n  hint: {hint}") from None
    run.result.timings["cibuildwheel"] = time.monotonic() - t0
    run.result.not_found = cmake_log.not_found(log_since(log, start))
    if settings.ccache_volume is not None:
        _read_cache_stats(run, settings, log)
    wheels = sorted(raw_out.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildFailed(f"expected one wheel from cibuildwheel, found {[w.name for w in wheels]}")
    run.wheel = wheels[0]


def _settings(run: Run) -> cibw.CibwSettings:
    """The job's cibuildwheel settings: its image, the compiler cache's volume and remote storage
    (directly with the network, else through the relay's socket), its container labels."""
    options = run.options
    volume = cibw.ccache_volume(run.job, run.image.tag) if options.use_cache else None
    remote, socket_volume = None, None
    if volume is not None and options.ccache_remote:
        if run.recipe.network:  # the container has the network: the store directly
            remote = options.ccache_remote
        elif options.cache_channel is not None:
            remote, socket_volume = options.cache_channel.url, options.cache_channel.volume
    return cibw.CibwSettings(
        image=run.image.tag,
        source_date_epoch=run.epoch,
        ccache_volume=volume,
        with_ca_bundle=run.with_ca,
        build_isolation=options.build_isolation,
        parallel_jobs=options.parallel_jobs,
        labels=container_labels("cibuildwheel", run.build_id),
        network=run.recipe.network,
        cache_socket_volume=socket_volume,
        stats_log=ccache.stats_log(run.build_id) if volume is not None else None,
        ccache_remote=remote,
    )


def _add_build_requires(run: Run, log: TextIO) -> None:
    """The torch pin and build_requires join [build-system] requires (after the resolution, which
    lists them with their own origins)."""
    _, data = buildsystem.read_pyproject(run.staged)
    env = requirements.marker_environment(run.job)
    extras = buildsystem.extra_requires(run.job, buildsystem.project_requires(data), env)
    if buildsystem.add_build_requires(run.staged, extras):
        log.write("added to [build-system] requires: " + ", ".join(e.requirement for e in extras) + "\n")


def _read_cache_stats(run: Run, settings: cibw.CibwSettings, log: TextIO) -> None:
    run.step = "reading the compiler-cache statistics"
    volume = settings.ccache_volume
    assert volume is not None
    stats = ccache.read_stats(run.client, run.image.tag, volume, run_id=run.build_id, log=settings.stats_log)
    run.result.compiler_cache = stats
    log.write(f"compiler cache ({volume}): {stats.describe() if stats else 'no statistics'}\n")
    for name in stats.missed if stats else ():
        log.write(f"{ccache.MISSED_LOG_LINE}{name}\n")
