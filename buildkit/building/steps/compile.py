"""Compile: cibuildwheel builds (and repairs, in its container) the staged source through the compiler
cache; the one wheel it made, and what its output says."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from buildkit.building import buildsystem, ccache, cibw, cmake_log, requirements, runner
from buildkit.building.progress import Phases
from buildkit.building.steps.state import STEP_CIBUILDWHEEL, Run, log_since
from buildkit.docker_engine import container_labels, keep_containers
from buildkit.errors import BuildFailed, HostIsaRefused
from buildkit.recipe.sections import host_isa

#: how the launcher (hip_launcher.sh) starts a refusal in the build's log
HOST_ISA_REFUSAL = "buildkit: host ISA: refused "


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
        _explain_failure(exc, log_since(log, start), settings.network)
        raise
    run.result.timings["cibuildwheel"] = time.monotonic() - t0
    run.result.not_found = cmake_log.not_found(log_since(log, start))
    run.result.host_isa = _host_isa(run, raw_out)
    if settings.ccache_volume is not None:
        _read_cache_stats(run, settings, log)
    wheels = sorted(raw_out.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildFailed(f"expected one wheel from cibuildwheel, found {[w.name for w in wheels]}")
    run.wheel = wheels[0]


def _explain_failure(exc: BuildFailed, text: str, network: bool) -> None:
    """Raise the failure of cibuildwheel named: the launcher's host ISA refusal (exit 19, its line
    naming the flag, the file and the command), or, in a hermetic build, what was missing offline."""
    refusal = next((line for line in text.splitlines() if HOST_ISA_REFUSAL in line), None)
    if refusal is not None:
        raise HostIsaRefused(f"{exc}\n  {refusal[refusal.index(HOST_ISA_REFUSAL) :]}") from None
    hint = None if network else requirements.explain_offline_failure(text)
    if hint is not None:
        raise BuildFailed(f"{exc}\n  hint: {hint}") from None


def _host_isa(run: Run, raw_out: Path) -> dict[str, Any] | None:
    """The manifest's ``host_isa`` (:func:`host_isa.summary`) from the launcher's log, which
    cibuildwheel copied out of the build container beside the wheel; None when the job's layout runs
    no launcher (an image buildkit did not make)."""
    if not ccache.uses_launcher(run.job):
        return None
    path = raw_out / host_isa.LOG_NAME
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else None
    return host_isa.summary(text, cibw.host_isa_level(run.job))


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
