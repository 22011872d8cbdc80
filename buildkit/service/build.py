"""``buildkit build`` as a library call: the recipe's plan, its notes, ``--strict``, the output folders
checked, every selected job built and gated; :meth:`_BuildRun.failure` is the command's verdict."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from buildkit.building.job import BuildOptions, JobResult
from buildkit.building.output import check_writable
from buildkit.building.progress import LiveBoard
from buildkit.building.quarantine import shown
from buildkit.building.run import build_plan
from buildkit.errors import BuildFailed, BuildkitError, GateFailed, HostIsaRefused, IndexUnavailable
from buildkit.plan.models import Plan, check_strict, printable
from buildkit.recipe import Recipe
from buildkit.service.plan import load_plan

Echo = Callable[[str], None]


@dataclass(frozen=True)
class _BuildRun:
    recipe: Recipe
    plan: Plan
    options: BuildOptions
    results: list[JobResult]

    def failure(self) -> BuildkitError | None:
        """What the command exits with: IndexUnavailable when every failed build failed only to reach
        an index, BuildFailed when a job's build failed, GateFailed when a wheel was refused; None when
        every job passed or was up to date."""
        results, options = self.results, self.options
        failed = [r for r in results if r.status not in ("passed", "up-to-date")]
        broken = [r for r in failed if r.status == "build-failed"]
        if broken and all(r.exit_code == IndexUnavailable.exit_code for r in broken):
            # the no-regression baseline's index could not be reached: exit 13, as from every command
            message = broken[0].message
            first = message.splitlines()[0] if message else "an index could not be reached"
            return IndexUnavailable(
                f"{len(failed)} of {len(results)} jobs failed: {first} (transient: retry); "
                f"logs in {options.log_dir}"
            )
        if broken and all(r.exit_code == HostIsaRefused.exit_code for r in broken):
            return HostIsaRefused(
                f"{len(failed)} of {len(results)} jobs failed: a compile asked for more than the host ISA "
                f"the build holds (flag, file and command in the logs in {options.log_dir})"
            )
        if broken:
            return BuildFailed(f"{len(failed)} of {len(results)} jobs failed; logs in {options.log_dir}")
        if not failed:
            return None
        kept = [r for r in failed if r.refused is not None]
        where = (
            f"; their wheels are kept apart in {shown(options.refused_dir)}/ (never published)"
            if kept
            else ""
        )
        return GateFailed(
            f"{len(failed)} of {len(results)} jobs failed the gate: nothing of them is in "
            f"{shown(options.out_dir)}/<job-id>/{where}"
        )


def logs_of(out_dir: str | Path, log_dir: str | Path | None) -> Path:
    """Where the job logs go: ``--log-dir``, else ``OUT/logs``, beside the wheels they explain (not in the
    folder the command happened to run in)."""
    return (Path(out_dir) / "logs" if log_dir is None else Path(log_dir)).absolute()


def run_build(
    recipe_path: str | Path,
    job_ids: Sequence[str],
    *,
    out_dir: str,
    log_dir: str | None,
    keep_refused: str | None = None,
    cli_archs: str | None = None,
    use_cache: bool = True,
    ccache_remote: str | None = None,
    build_isolation: bool = True,
    force: bool = False,
    wheelhouse: str | None = None,
    parallel: int = 1,
    strict: bool = False,
    notes: bool = True,
    echo: Echo,
    note: Echo,
    verbose: bool = False,
    live: bool = False,
) -> _BuildRun:
    """Build ``job_ids`` (default: every job) of the recipe at ``recipe_path``, with the command's
    options as given (paths as the user wrote them, for the notes). ``note`` gets the plan's notes (when
    ``notes``) and the notes about the options; ``echo`` the jobs' progress, or with ``live`` the live
    board on the terminal does (:class:`buildkit.building.progress.LiveBoard`, lines printed above it)."""
    loaded = load_plan(recipe_path, cli_archs=cli_archs)
    for text in loaded.plan.notes if notes else ():  # dropped archs, ...
        note(f"buildkit build: note: {printable(text)}")
    if strict:
        check_strict(loaded.plan, job_ids)
    options = BuildOptions(
        out_dir=Path(out_dir).absolute(),
        log_dir=logs_of(out_dir, log_dir),
        use_cache=use_cache,
        ccache_remote=ccache_remote,
        build_isolation=build_isolation,
        force=force,
        parallel_jobs=max(1, (os.cpu_count() or 2) // parallel),
        keep_refused=Path(keep_refused).absolute() if keep_refused is not None else None,
        wheelhouse=Path(wheelhouse).absolute() if wheelhouse is not None else None,
    )
    _check_options(
        options, loaded.recipe, wheelhouse=wheelhouse, keep_refused=keep_refused, out_dir=out_dir, note=note
    )
    with LiveBoard() if live else contextlib.nullcontext() as board:
        results = build_plan(
            loaded.recipe,
            loaded.plan,
            job_ids,
            options,
            echo=board.echo if board is not None else echo,
            verbose=verbose,
            parallel=parallel,
            board=board,
        )
    return _BuildRun(loaded.recipe, loaded.plan, options, results)


def _check_options(
    options: BuildOptions,
    recipe: Recipe,
    *,
    wheelhouse: str | None,
    keep_refused: str | None,
    out_dir: str,
    note: Echo,
) -> None:
    """``--keep-refused`` writable; a note for an option that does not do what it seems to (paths as
    the user wrote them)."""
    if wheelhouse is not None and recipe.network:
        note(
            f"buildkit build: note: --wheelhouse {wheelhouse} is not used: the recipe sets network: true, "
            "so pip in the build container installs from the index"
        )
    if options.keep_refused is not None:
        check_writable(options.keep_refused, "--keep-refused")
        if options.keep_refused.is_relative_to(options.out_dir) and not any(
            part.startswith(".") for part in options.keep_refused.relative_to(options.out_dir).parts
        ):
            note(
                f"buildkit build: note: --keep-refused {keep_refused} lies inside --out {out_dir}: "
                f"`buildkit publish {out_dir}` refuses to publish while it holds a refused wheel"
            )
