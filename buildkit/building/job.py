"""One job: stage, build with cibuildwheel, repair, gate, record, and move into ``<out>/<job-id>/``.

:func:`build_one` is the one path of ``buildkit build`` and ``buildkit verify``. The source is
staged into a private folder inside ``<out>`` (:mod:`buildkit.building.staging`; cibuildwheel copies
it to the fixed path ``/project`` of a container that gets no host mount); the inputs key
(:mod:`buildkit.building.key`) may find the job up to date; else a hermetic job's build requirements are
downloaded on the host into the staged source (:mod:`buildkit.building.requirements`; a recipe with
``network: true`` skips that), cibuildwheel builds and repairs, the
wheel is inspected and gated (:mod:`buildkit.building.gating`) and checked against the last release,
its manifest and provenance are written beside it and all of it is moved into the job's folder
(:mod:`buildkit.building.output`). A wheel the gate or the regression check refuses is moved, with its
reports and the record of why, into the job's quarantine folder (``<out>/.refused/<job-id>/`` or
``--keep-refused DIR``: :mod:`buildkit.building.quarantine`), never into ``<out>/<job-id>/``; a job that
passes removes its superseded quarantine folder.

A failed or gate-refused job removes the previous ``<out>/<job-id>/`` (unless it was built from
exactly these inputs); an interrupted job (Ctrl-C, SIGTERM) or a lost Docker engine leaves it as it
was. No job leaves a container behind: every one carries the job's ``io.rocm-buildkit.run`` label
and is removed by it; when the engine stops answering, the error says how to clean up.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from packaging.utils import parse_wheel_filename

from buildkit import manifest
from buildkit.building import (
    Echo,
    buildsystem,
    ccache,
    cibw,
    cmake_log,
    provenance,
    requirements,
    retag,
    runner,
    sbom,
    sdk_link,
)
from buildkit.building.gating import Gated, gate_wheel, gated_of, waived_lines
from buildkit.building.key import inputs_key, tool_versions, up_to_date, up_to_date_wheel
from buildkit.building.output import drop_stale_output, publish_to_out
from buildkit.building.progress import Board, Phases
from buildkit.building.quarantine import (
    JSON_SUFFIX,
    TEXT_SUFFIX,
    examine_command,
    quarantine,
    quarantine_root,
    release,
    shown,
)
from buildkit.building.remote_cache import Channel
from buildkit.building.staging import (
    HOST_CA_BUNDLE,
    source_date_epoch,
    stage_source,
    staging_folder,
    tree_digest,
)
from buildkit.building.toolchain import job_interpreter, toolchain_versions
from buildkit.compare.baseline import RegressionCheck, compare_with_last_release
from buildkit.docker_engine import (
    ENGINE_ERRORS,
    PRUNE_HINT,
    container_labels,
    engine_failed,
    keep_containers,
    remove_run_containers,
    run_filter,
)
from buildkit.errors import (
    BuildFailed,
    BuildkitError,
    DockerUnavailable,
    GateFailed,
    Interrupted,
    RecipeError,
    UsageError,
)
from buildkit.fsutil import atomic_write
from buildkit.gate.config import GateConfig, gate_key
from buildkit.judge import rocm_pip
from buildkit.plan.models import Job
from buildkit.pyindex import redact
from buildkit.recipe import Recipe
from buildkit.records import to_data
from buildkit.split import SplitResult, output_config, split_wheel


@dataclass(frozen=True)
class BuildOptions:
    out_dir: Path
    log_dir: Path
    use_cache: bool = True
    ca_bundle: Path | None = HOST_CA_BUNDLE
    build_isolation: bool = True
    parallel_jobs: int = 2
    force: bool = False  # rebuild even when dist/<job-id>/ holds a wheel built from the same inputs
    source_date_epoch: int | None = None  # None: $SOURCE_DATE_EPOCH, else the source's last commit time
    keep_refused: Path | None = None  # where refused wheels are kept (DIR/<job-id>/); None: <out>/.refused
    quarantine: bool = True  # keep refused wheels at all (verify's throwaway rebuild does not)
    #: an air-gapped host's wheelhouse: the build requirements are resolved from it alone (no index)
    wheelhouse: Path | None = None
    #: download exactly these build requirements (``buildkit verify``: the manifest's lock), by hash
    lock: requirements.Lock | None = None
    #: ccache's remote storage (``--ccache-remote``), as given
    ccache_remote: str | None = None
    #: how the build containers reach it (set by ``build_plan`` while the relay runs)
    cache_channel: Channel | None = None

    @property
    def refused_dir(self) -> Path:
        return quarantine_root(self.out_dir, self.keep_refused)


@dataclass
class JobResult:
    job: str
    status: str  # "passed" | "up-to-date" | "gate-failed" | "build-failed" | "interrupted"
    wheel: Path | None = None
    seconds: float = 0.0
    message: str = ""
    log: Path | None = None
    timings: dict[str, float] = field(default_factory=dict)
    gate: str | None = None  # "PASS" | "FAIL"; None: the gate did not run
    errors: int = 0  # error findings of the gate and of the regression check
    warnings: int = 0
    removed: Path | None = None  # the previous output folder of the job, removed as stale
    waived: int = 0  # findings a recipe waiver accepted
    waivers: tuple[str, ...] = ()  # one line per waiver used (gating.waived_lines)
    refused: Path | None = None  # the refused wheel, kept in the job's quarantine folder
    examine: str | None = None  # the command that reproduces the refusal of ``refused``
    #: the compiles of this build as ccache counted them; None: no cache, or none read
    compiler_cache: ccache.CacheStats | None = None
    #: the exit code of the error that failed the job (13: an index could not be reached); None: none
    exit_code: int | None = None
    not_found: tuple[str, ...] = ()  # what CMake looked for and did not find (cmake_log.not_found)

    @property
    def manifest(self) -> Path | None:
        return manifest.manifest_path(self.wheel) if self.wheel is not None else None


def _engine_error(client: Any) -> BaseException | None:
    """The error of a ping when the engine no longer answers, else None."""
    try:
        client.ping()
    except ENGINE_ERRORS as exc:
        return exc
    except Exception:
        return None
    return None


def _engine_lost(exc: BaseException, run: _Run, cleaned: bool) -> DockerUnavailable:
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


_STEP_CIBUILDWHEEL = "cibuildwheel"
_STEP_PROVENANCE = "recording the build environment (provenance)"


@dataclass
class _Run:
    """One job being built: what :func:`build_one` was given, where it is (``step``, named in
    errors), its inputs ``key`` once known, and its ``result``."""

    recipe: Recipe
    job: Job
    options: BuildOptions
    client: Any
    image: Any
    source: Path
    work: Path
    echo: Echo
    verbose: bool
    result: JobResult
    step: str = "staging the source"
    key: str | None = None
    board: Board | None = None

    def tell(self, phase: str) -> None:
        """The job's phase on a terminal's board (off a terminal, cibuildwheel's phases only are printed)."""
        if self.board is not None:
            self.board.phase(self.job.id, phase)

    @property
    def build_id(self) -> str:
        """The value of the build label on every container of this job (the staging folder's name)."""
        return self.work.name.lstrip(".")

    @property
    def dest(self) -> Path:
        return self.options.out_dir / self.job.id


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
    """Build, repair, gate and publish-to-``out`` one job (the one path of `build_plan` and `verify`).

    Never leaves partial output. A failed or gate-refused job removes the job's previous output
    (unless it was built from exactly these inputs); Ctrl-C becomes :class:`Interrupted` (message
    ``interrupted``) and keeps it; an engine that stops answering becomes :class:`DockerUnavailable`
    naming the endpoint and the step, and keeps it too."""
    started = time.monotonic()
    log_path = options.log_dir / f"{job.id}.log"
    result = JobResult(job=job.id, status="build-failed", log=log_path)
    run = _Run(
        recipe,
        job,
        options,
        client,
        image,
        source,
        staging_folder(options.out_dir, job),
        echo,
        verbose,
        result,
        board=board,
    )
    cleaned: bool | None = None
    try:
        with _log_file(log_path) as log:
            _run_job(run, log)
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
        lost = _engine_error(client) if run.step == _STEP_CIBUILDWHEEL else None
        if lost is not None:  # cibuildwheel failed because the engine went away
            cleaned = remove_run_containers(client, run.build_id)
            raise _engine_lost(lost, run, cleaned) from None
        result.message = str(exc)
        result.exit_code = exc.exit_code
        with contextlib.suppress(OSError), log_path.open("a", encoding="utf-8") as log:
            log.write(f"\nERROR: {exc}\n")
        keep = run.key if result.status == "build-failed" else None
        result.removed = drop_stale_output(run.dest, job, echo, keep_key=keep)
    finally:
        result.seconds = time.monotonic() - started
        shutil.rmtree(run.work, ignore_errors=True)
        if cleaned is None:
            remove_run_containers(client, run.build_id)
    return result


def _run_job(run: _Run, log: TextIO) -> None:
    """The steps of :func:`build_one`; ``run`` records how far it got."""
    run.tell("staging")
    # a torch extension without a torch pin would build without torch: refused before anything runs
    buildsystem.check_torch_provided(run.job, run.source, run.recipe.display_path)
    staged = run.work / "src"
    skip = (run.options.out_dir, run.options.log_dir, run.options.refused_dir)
    # a hermetic build (no network) needs no CA bundle: its index is the wheelhouse staged below
    ca_bundle = run.options.ca_bundle if run.recipe.network else None
    with_ca = stage_source(run.source, staged, ca_bundle, skip=skip)
    pins = cibw.constraints(run.job)
    if pins is not None:
        (staged / ".buildkit").mkdir(exist_ok=True)
        atomic_write(staged / ".buildkit" / cibw.CONSTRAINTS_NAME, pins)
    if ccache.uses_launcher(run.job):  # every HIP compile's -cuid, with or without the cache
        (staged / ".buildkit").mkdir(exist_ok=True)
        atomic_write(staged / ccache.STAGED_LAUNCHER, ccache.launcher_script(), mode=0o755)
    if run.job.rocm_pip is not None:  # run after repair in the container (cibw.sdk_link_command)
        (staged / ".buildkit").mkdir(exist_ok=True)
        atomic_write(staged / ".buildkit" / cibw.SDK_LINK_NAME, Path(sdk_link.__file__).read_text())
    hermetic = not run.recipe.network
    isolation = run.options.build_isolation
    request = requirements.request_key(run.recipe, run.job, staged, isolation=isolation) if hermetic else None
    epoch = source_date_epoch(run.source, run.options.source_date_epoch)
    config = GateConfig.from_recipe_job(run.recipe, run.job)
    run.key = inputs_key(
        run.job,
        run.image.id,
        tree_digest(staged),
        epoch,
        run.options.build_isolation,
        recipe_sha256=run.recipe.build_sha256,  # a smoke: or publish: edit rebuilds nothing
        gate=gate_key(config),
        tools=tool_versions(),
        build_requirements=request,
    )
    run.step = "the up-to-date check"
    if not run.options.force and _reuse(run.dest, run.key, config, log, run.result):
        return
    lock = _wheelhouse(run, staged, log) if hermetic else None
    wheel = _cibuildwheel(run, staged, epoch, with_ca, log)
    run.step = "writing the SBOM of the excluded runtime libraries"
    torch = torch_record(run.job, lock)
    needed = sbom.attach(
        wheel,
        run.job.exclude_globs,
        rocm=run.job.rocm,
        torch_version=(torch or {}).get("version") or run.job.torch,
        epoch=epoch,
    )
    log.write(f"SBOM: {len(needed)} excluded runtime librar{'y' if len(needed) == 1 else 'ies'} listed\n")
    # the gate's facts of this build (the locked torch, ROCm from pip's SDK wheels); the configuration
    # recorded for publish stays the recipe's (gate_key(config)), which publish derives again
    facts = _with_sdk(_against_locked_torch(config, run.job, lock, staged), run.job, lock, staged)
    gated, regression = _gate(run, wheel, facts, log)
    if run.recipe.wheel.split == "per-target":
        outputs = _split(run, wheel, config, gated, log)
    else:
        outputs = [_Output(wheel, gated, gate_key(config))]
    _record(run, outputs, staged, epoch, regression, lock)


@dataclass(frozen=True)
class _Output:
    """A wheel the job puts into its output folder: its verdict, the gate configuration it was gated
    with (:func:`gate_key`, recorded for ``publish``) and, for a split, what it is (manifest ``split``)."""

    wheel: Path
    gated: Gated
    gate: dict[str, Any]
    split: dict[str, Any] | None = None


def _split(run: _Run, wheel: Path, config: GateConfig, gated: Gated, log: TextIO) -> list[_Output]:
    """The recipe's ``wheel.split: per-target``: the gated ``wheel`` split as ``buildkit split`` does
    (:func:`buildkit.split.split_wheel`, every output gated); the host first. GateFailed when an output
    fails its gate: the first such wheel is kept in the job's quarantine folder with its reports."""
    run.step = "splitting the wheel per GPU target"
    t0 = time.monotonic()
    try:
        result = split_wheel(wheel, run.work / "split", config=config)
    except GateFailed:  # the input, gated again by the split: the job's gate passed it, so not expected
        run.result.status = "gate-failed"
        raise
    run.result.timings["split"] = time.monotonic() - t0
    for line in _split_lines(result):
        log.write(line + "\n")
    outputs = []
    for o in result.outputs:
        used = output_config(config, target=o.target, bundles=bool(result.bundles))
        record = {
            "role": o.role,
            "target": o.target,
            "distribution": o.distribution,
            "from": {"filename": wheel.name, "sha256": gated.sha256},
            "bundles": [b.member for b in result.bundles],
        }
        outputs.append(_Output(o.path, gated_of(o.verdict), gate_key(used), record))
    if not result.passed:
        run.result.status = "gate-failed"
        failing = next(out for out in outputs if not out.gated.passed)
        target = failing.split["target"] if failing.split else None
        kept = _quarantine(run, failing.wheel, failing.gated, None, device_target=target)
        raise GateFailed(
            f"{run.job.id}: the gate refused {failing.wheel.name}, split from {wheel.name}\n"
            f"{failing.gated.summary}{kept}"
        )
    return outputs


def _split_lines(result: SplitResult) -> list[str]:
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


def _against_locked_torch(
    config: GateConfig, job: Job, lock: requirements.Lock | None, staged: Path
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
    return config._replace(torch_abi=str(staged / ".buildkit" / cibw.WHEELHOUSE_NAME / torch.file))


def _with_sdk(config: GateConfig, job: Job, lock: requirements.Lock | None, staged: Path) -> GateConfig:
    """ROCm from pip: the gate's ``rocm_pip`` facts, the SDK wheels of the build's lock (the very
    files the build installed, still in the staged wheelhouse) read by :func:`rocm_pip.gather` against
    the requirement the wheel declares. The configuration recorded in the manifest (and that
    ``publish`` runs again) is the inputs key's, without them."""
    requirement = job.rocm_pip_requirement
    if requirement is None or lock is None:
        return config
    folder = staged / ".buildkit" / cibw.WHEELHOUSE_NAME
    wheels = [folder / f.file for f in lock.files if rocm_pip.is_sdk_dist(f.name)]
    try:
        sdk = rocm_pip.gather(requirement, wheels, source="the build's lock")
    except UsageError as exc:
        raise BuildFailed(f"{job.id}: ROCm from pip: {exc}") from None
    return config._replace(rocm_pip=sdk)


def _wheelhouse(run: _Run, staged: Path, log: TextIO) -> requirements.Lock:
    """The build requirements of a hermetic build, downloaded on the host into the staged source's
    ``.buildkit/wheelhouse``: resolved (:func:`requirements.resolve`), or exactly the files of
    ``BuildOptions.lock`` (``buildkit verify``: the manifest's lock, :func:`requirements.fetch_locked`)."""
    run.step = "downloading the build requirements on the host"
    run.tell("requirements")
    dest = staged / ".buildkit" / cibw.WHEELHOUSE_NAME
    t0 = time.monotonic()
    options = run.options
    if options.lock is not None:
        lock = requirements.fetch_locked(options.lock, run.job, dest, log, wheelhouse=options.wheelhouse)
    else:
        lock = requirements.resolve(
            run.recipe,
            run.job,
            staged,
            dest,
            log,
            isolation=options.build_isolation,
            wheelhouse=options.wheelhouse,
        )
    seconds = run.result.timings["requirements"] = time.monotonic() - t0
    log.write(
        f"build requirements ({len(lock.files)} wheel(s) in {seconds:.1f}s, lock sha256 {lock.sha256}):\n"
        + lock.render()
    )
    return lock


def _cibuildwheel(run: _Run, staged: Path, epoch: int, with_ca: bool, log: TextIO) -> Path:
    """Build and repair the staged source; the one wheel, named with the plan's version."""
    volume = cibw.ccache_volume(run.job, run.image.tag) if run.options.use_cache else None
    remote, socket_volume = None, None
    if volume is not None and run.options.ccache_remote:
        if run.recipe.network:  # the container has the network: the store directly
            remote = run.options.ccache_remote
        elif run.options.cache_channel is not None:
            remote, socket_volume = run.options.cache_channel.url, run.options.cache_channel.volume
    settings = cibw.CibwSettings(
        image=run.image.tag,
        source_date_epoch=epoch,
        ccache_volume=volume,
        with_ca_bundle=with_ca,
        build_isolation=run.options.build_isolation,
        parallel_jobs=run.options.parallel_jobs,
        labels=container_labels("cibuildwheel", run.build_id),
        network=run.recipe.network,
        cache_socket_volume=socket_volume,
        stats_log=ccache.stats_log(run.build_id) if volume is not None else None,
        ccache_remote=remote,
    )
    if settings.build_isolation:
        # the torch pin and build_requires join [build-system] requires (after the resolution,
        # which lists them with their own origins)
        _, data = buildsystem.read_pyproject(staged)
        env = requirements.marker_environment(run.job)
        extras = buildsystem.extra_requires(run.job, buildsystem.project_requires(data), env)
        if buildsystem.add_build_requires(staged, extras):
            log.write("added to [build-system] requires: " + ", ".join(e.requirement for e in extras) + "\n")
    cibw_options = cibw.cibuildwheel_options(run.job, settings)
    for line in cibw.describe(cibw_options):
        log.write(line + "\n")
    env = cibw.subprocess_environment(os.environ, cibw_options)
    env["SOURCE_DATE_EPOCH"] = str(epoch)
    if keep_containers():  # BUILDKIT_DEBUG_KEEP_CONTAINER: cibuildwheel keeps its container too
        env["CIBW_DEBUG_KEEP_CONTAINER"] = "1"
    raw_out = run.work / "wheelhouse"
    run.step = _STEP_CIBUILDWHEEL
    t0 = time.monotonic()
    log.flush()
    start = log.tell()
    try:
        phases = Phases(run.job.id, run.echo, interactive=sys.stderr.isatty(), board=run.board)
        runner.run_cibuildwheel(staged, raw_out, env, log, run.echo, verbose=run.verbose, phases=phases.feed)
    except BuildFailed as exc:
        hint = None if settings.network else requirements.explain_offline_failure(_log_since(log, start))
        if hint is None:
            raise
        raise BuildFailed(f"{exc}\n  hint: {hint}") from None
    run.result.timings["cibuildwheel"] = time.monotonic() - t0
    run.result.not_found = cmake_log.not_found(_log_since(log, start))
    if volume is not None:
        run.step = "reading the compiler-cache statistics"
        stats = ccache.read_stats(
            run.client, run.image.tag, volume, run_id=run.build_id, log=settings.stats_log
        )
        run.result.compiler_cache = stats
        log.write(f"compiler cache ({volume}): {stats.describe() if stats else 'no statistics'}\n")
        for name in stats.missed if stats else ():
            log.write(f"{ccache.MISSED_LOG_LINE}{name}\n")
    wheels = sorted(raw_out.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildFailed(f"expected one wheel from cibuildwheel, found {[w.name for w in wheels]}")
    _check_version(wheels[0], run.job)
    return retag.to_claim(wheels[0], run.job, log)  # wheel: {abi: ...} whatever the backend tagged


def _gate(run: _Run, wheel: Path, config: GateConfig, log: TextIO) -> tuple[Gated, RegressionCheck | None]:
    """The gate, then the recipe's no-regression rule; GateFailed when either refuses the wheel."""
    result, job = run.result, run.job
    run.step = "the gate"
    run.tell("gate")
    t0 = time.monotonic()
    gated = gate_wheel(wheel, config)
    result.timings["gate"] = time.monotonic() - t0
    _note_verdict(result, gated)
    log.write(gated.details + "\n")  # the log keeps every line
    if not gated.passed:
        result.status = "gate-failed"
        kept = _quarantine(run, wheel, gated, None)
        raise GateFailed(f"{job.id}: the gate refused {wheel.name}\n{gated.summary}{kept}")
    run.step = "the regression check"
    regression = compare_with_last_release(job, wheel, workdir=run.work / "baseline")
    if regression is not None:
        regression = regression.waived(config.waivers, recipe=run.recipe.display_path)
        log.write(f"regression check against {regression.compared_with or 'no earlier release'}\n")
        waived = [f for f in regression.findings if f.waived is not None]
        result.waived += len(waived)
        result.waivers += waived_lines(waived)
        if not regression.passed:
            result.status = "gate-failed"
            result.gate = "FAIL"
            failing = [f for f in regression.findings if f.fails]
            result.errors += len(failing)
            lines = "\n".join(f"  ERROR [{f.rule}] {f.message}" for f in failing)
            kept = _quarantine(run, wheel, gated, regression)
            raise GateFailed(f"{job.id}: {wheel.name} regresses against the last release\n{lines}{kept}")
    return gated, regression


def _quarantine(
    run: _Run,
    wheel: Path,
    gated: Gated,
    regression: RegressionCheck | None,
    *,
    device_target: str | None = None,
) -> str:
    """Keep the refused ``wheel`` in the job's quarantine folder (:mod:`buildkit.building.quarantine`);
    the lines the job's failure message ends with (where it is, how to examine it, or why it could
    not be kept)."""
    recipe, job, result = run.recipe, run.job, run.result
    if not run.options.quarantine:
        return ""
    dest = run.options.refused_dir / job.id
    index = regression.index_url if regression is not None else None
    command = examine_command(dest / wheel.name, recipe.display_path, job, regression_index=index)
    if device_target is not None:  # a device wheel of the split: gated as one
        command += f" --device-target {device_target}"
    failing = [f for f in (regression.findings if regression is not None else ()) if f.fails]
    errors = [f"[{f.rule}] {f.message}" for f in failing] or [
        f"[{f['rule']}] {f['message']}"
        for f in gated.verdict.get("findings", [])
        if f.get("severity") == "error" and not f.get("waived")
    ]
    record = {
        "wheel": {"filename": wheel.name, "sha256": gated.sha256, "size": gated.size},
        "recipe": recipe.record(),
        "job": job.to_json(),
        "image": {"profile": job.image_profile, "tag": run.image.tag, "id": run.image.id},
        "inputs_key": run.key,
        "refused_by": "regression" if regression is not None else "gate",
        "errors": errors,
        "verdict": gated.verdict,
        "regression": to_data(regression),
        "reports": {"text": wheel.name + TEXT_SUFFIX, "json": wheel.name + JSON_SUFFIX},
        "examine": command,
        "published": "never: a refused wheel has no manifest; fix the cause and build again",
    }
    report = gated.report
    if regression is not None:  # the gate passed it: the text report ends with what regressed
        against = regression.compared_with or "no earlier release"
        report += f"\nregression check against {against} ({regression.index_url}):\n"
        report += "\n".join(f"  ERROR [{f.rule}] {f.message}" for f in failing)
    run.step = f"keeping the refused wheel in {dest}"
    try:
        result.refused = quarantine(
            wheel, dest, report=report, report_json=gated.report_json, record=record, echo=run.echo
        )
    except BuildFailed as exc:
        run.echo(f"[{job.id}] warning: {exc}")
        return f"\n  the refused wheel could not be kept: {exc}"
    result.examine = command
    return f"\n  refused wheel kept in {shown(result.refused)} (never published)\n  examine it: {command}"


def _log_since(log: TextIO, start: int) -> str:
    """What the job's log got after position ``start`` (cibuildwheel's output)."""
    log.flush()
    try:
        with open(log.name, "rb") as fh:
            fh.seek(start)
            return fh.read().decode(errors="replace")
    except (OSError, TypeError, ValueError):
        return ""


def _record(
    run: _Run,
    outputs: list[_Output],
    staged: Path,
    epoch: int,
    regression: RegressionCheck | None,
    lock: requirements.Lock | None,
) -> None:
    """Manifest and provenance beside each staged wheel (the job's one, or a split's host and device
    wheels), then all of them into ``--out/<job-id>/`` at once. Each manifest's ``gate`` is the
    configuration that wheel was gated with (:func:`gate_key`), recorded (and signed in the attestation)
    for ``publish`` to run the gate again with."""
    recipe, job, image = run.recipe, run.job, run.image
    interpreter = job_interpreter(job)
    run.step = "reading the toolchain versions in the builder image"
    toolchain = toolchain_versions(run.client, image.tag, python=interpreter, build_id=run.build_id)
    cache = run.result.compiler_cache
    for out in outputs:
        wheel, gated = out.wheel, out.gated
        data: dict[str, Any] = {
            "wheel": {"filename": wheel.name, "sha256": gated.sha256, "size": gated.size},
            "recipe": recipe.record(),
            "job": job.to_json(),
            "image": {"profile": job.image_profile, "tag": image.tag, "id": image.id},
            "toolchain": toolchain,
            "archs": [str(t) for t in job.archs.kept],
            "source": _source_info(recipe, run.source),
            "source_date_epoch": epoch,
            "inputs_key": run.key,
            "network": recipe.network,
            "build_requirements": _lock_record(wheel, lock),
            "torch": torch_record(job, lock),
            "compiler_cache": to_data(cache),
            "cmake_not_found": list(run.result.not_found),
            "regression": to_data(regression),
            "verdict": gated.verdict,
            "gate": out.gate,
        }
        if out.split is not None:
            data["split"] = out.split
        manifest.write(wheel, data)
        run.step = _STEP_PROVENANCE
        provenance.record(
            wheel,
            client=run.client,
            image=image,
            source=staged,
            isolation=run.options.build_isolation,
            interpreter=interpreter,
            run_id=run.build_id,
        )
    run.step = f"moving the wheel into {run.dest}"
    publish_to_out([out.wheel for out in outputs], run.dest)
    release(run.options.refused_dir / job.id, job, run.echo)
    host = outputs[0]
    run.result.status = "passed"
    run.result.wheel = run.dest / host.wheel.name
    run.result.message = f"{host.wheel.name} ({host.gated.tag})"
    if len(outputs) > 1:
        run.result.message += " + " + ", ".join(out.wheel.name for out in outputs[1:])


def _lock_record(wheel: Path, lock: requirements.Lock | None) -> dict[str, Any] | None:
    """The manifest's ``build_requirements``; the lock file written beside the wheel."""
    if lock is None:
        return None
    path = atomic_write(manifest.lock_path(wheel), lock.render())
    return {**to_data(lock), "lock": path.name}


def torch_record(job: Job, lock: requirements.Lock | None) -> dict[str, Any] | None:
    """The manifest's ``torch``: the job's pin and the torch wheel the extension was built against, by
    file name and sha256, from the hermetic build's lock (``file``/``sha256`` null in a networked build,
    which locks nothing, or when the build did not install torch); None without a torch pin."""
    if job.torch_requirement is None:
        return None
    wheel = next((f for f in (lock.files if lock is not None else ()) if f.name == "torch"), None)
    return {
        "requirement": job.torch_requirement,
        "index_url": job.torch_index_url,
        "version": wheel.version if wheel is not None else None,
        "file": wheel.file if wheel is not None else None,
        "sha256": wheel.sha256 if wheel is not None else None,
    }


def _note_verdict(result: JobResult, gated: Gated) -> None:
    result.gate = "PASS" if gated.passed else "FAIL"
    result.errors = gated.errors
    result.warnings = gated.warnings
    result.waived = gated.waived
    result.waivers = gated.waivers


def _reuse(dest: Path, key: str, config: GateConfig, log: TextIO, result: JobResult) -> bool:
    """True (``result`` filled in) when ``dest`` holds the wheel(s) built from ``key`` that still pass
    the gate, run again on them (cheap next to a build: it catches rule changes the key cannot see); a
    split's outputs each with the configuration :func:`buildkit.split.output_config` gives it."""
    existing = up_to_date(dest, key)
    if existing is None:
        return False
    wheels = [existing]
    split = manifest.read(existing).get("split")
    if isinstance(split, dict):  # every output of the split, the host first
        outputs = [w for w in sorted(dest.glob("*.whl")) if up_to_date_wheel(w, key)]
        wheels = sorted(outputs, key=lambda w: (manifest.read(w).get("split") or {}).get("role") != "host")
    verdicts: list[Gated] = []
    for wheel in wheels:
        recorded = manifest.read(wheel).get("split")
        used = config
        if isinstance(recorded, dict):
            target = recorded.get("target")
            used = output_config(config, target=target, bundles=bool(recorded.get("bundles")))
        gated = gate_wheel(wheel, used)
        if not gated.passed:
            log.write(f"{wheel.name} was built from the same inputs but fails the gate now: rebuilding\n")
            return False
        verdicts.append(gated)
    log.write(
        f"up to date: {', '.join(w.name for w in wheels)} built from the same inputs ({key[:12]}) "
        "and passing the gate\n"
    )
    _note_verdict(result, verdicts[0])
    result.status = "up-to-date"
    result.wheel = wheels[0]
    result.message = f"{wheels[0].name} (inputs unchanged)"
    return True


def _check_version(wheel: Path, job: Job) -> None:
    _name, version, _build, _tags = parse_wheel_filename(wheel.name)
    if str(version) != job.version:
        raise BuildFailed(
            f"{wheel.name}: the package built version {version}, the plan says {job.version}; "
            "make its build read BUILDKIT_VERSION (or SETUPTOOLS_SCM_PRETEND_VERSION)"
        )


def _source_info(recipe: Recipe, source: Path) -> dict[str, str]:
    info = {k: v for k, v in vars(recipe.source).items() if v is not None}
    if recipe.source.downloaded:  # pinned by sha256; an unpacked archive has no commit of its own
        if recipe.source.url is not None:
            info["url"] = redact(recipe.source.url)
        return info
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        commit = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
        if commit:
            info["commit"] = commit
    return info
