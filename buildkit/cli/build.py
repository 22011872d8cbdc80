"""``buildkit build RECIPE [--job ID ...]``: build, repair and gate wheels in builder containers."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

import click

from buildkit.build.job import BuildOptions
from buildkit.build.output import check_writable
from buildkit.build.progress import LiveBoard
from buildkit.build.quarantine import shown
from buildkit.build.run import build_plan
from buildkit.build.summary import render_summary, summary_json
from buildkit.cli.options import colour_verdicts, colour_wanted, quiet
from buildkit.cli.options import verbose as global_verbose
from buildkit.errors import BuildFailed, GateFailed, IndexUnavailable
from buildkit.image.ceilings import ceilings_from_images
from buildkit.plan.expansion import expand
from buildkit.plan.models import check_strict, printable
from buildkit.recipe import load_recipe


def _progress_echo(line: str) -> None:
    """The jobs' progress on stderr; with -q only their warnings."""
    if not quiet() or " warning: " in line:
        click.echo(line, err=True)


def live_board_wanted(*, as_json: bool, verbose: bool, env: Mapping[str, str]) -> bool:
    """The live board on stderr: a terminal (not CI=true, not TERM=dumb), neither --json, -q nor -v
    (the log streamed). Elsewhere a line per phase change."""
    return (
        sys.stderr.isatty()
        and env.get("CI") != "true"
        and env.get("TERM") != "dumb"
        and not (as_json or verbose or quiet())
    )


@click.command("build")
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option(
    "--job", "job_ids", multiple=True, help="Build only this job id (repeatable). Default: all jobs."
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default="dist",
    show_default=True,
    help="Passing wheels land in OUT/<job-id>/ with their manifests.",
)
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False),
    default="build/logs",
    show_default=True,
    help="One log file per job.",
)
@click.option(
    "--keep-refused",
    type=click.Path(file_okay=False),
    default=None,
    help="Keep wheels the gate refuses in DIR/<job-id>/ with their gate reports (default: "
    "OUT/.refused/<job-id>/). Never published: they get no manifest.",
)
@click.option("--archs", "cli_archs", default=None, help="Arch list overriding the recipe.")
@click.option("--no-cache", is_flag=True, help="Do not mount the compiler-cache volume.")
@click.option(
    "--ccache-remote",
    default=None,
    metavar="URL",
    help="ccache's remote storage (redis://HOST:PORT[/DB]), shared between machines; a hermetic build "
    "reaches that address only, through a relay's Unix socket (still no network).",
)
@click.option("--no-isolation", is_flag=True, help="Build with the image's own build dependencies (offline).")
@click.option(
    "--force", is_flag=True, help="Rebuild even when OUT/<job-id>/ holds a wheel built from the same inputs."
)
@click.option(
    "--wheelhouse",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="Resolve the build requirements of hermetic builds from this folder of wheels alone (no index: "
    "an air-gapped host). Default: the indexes your pip configuration names (PIP_INDEX_URL, pip.conf).",
)
@click.option(
    "--parallel",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Build up to N jobs at once; each gets cores // N (MAX_JOBS, CMAKE_BUILD_PARALLEL_LEVEL).",
)
@click.option("-v", "--verbose", is_flag=True, help="Stream the build log to the terminal.")
@click.option(
    "--json", "as_json", is_flag=True, help="The summary as JSON (`buildkit schema build`) instead of text."
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 5 before building when a requested arch was dropped (see buildkit plan).",
)
def build(
    recipe: str,
    job_ids: tuple[str, ...],
    out_dir: str,
    log_dir: str,
    keep_refused: str | None,
    cli_archs: str | None,
    no_cache: bool,
    ccache_remote: str | None,
    no_isolation: bool,
    force: bool,
    wheelhouse: str | None,
    parallel: int,
    verbose: bool,
    as_json: bool,
    strict: bool,
) -> None:
    """Build every job of RECIPE (or the --job ones) and gate each wheel."""
    the_recipe = load_recipe(recipe)
    the_plan = expand(the_recipe, cli_archs=cli_archs, ceilings_reader=ceilings_from_images)
    for note in () if quiet() else the_plan.notes:  # dropped archs, ...: silent only with -q
        click.echo(f"buildkit build: note: {printable(note)}", err=True)
    if strict:
        check_strict(the_plan, job_ids)
    options = BuildOptions(
        out_dir=Path(out_dir).absolute(),
        log_dir=Path(log_dir).absolute(),
        use_cache=not no_cache,
        ccache_remote=ccache_remote,
        build_isolation=not no_isolation,
        force=force,
        parallel_jobs=max(1, (os.cpu_count() or 2) // parallel),
        keep_refused=Path(keep_refused).absolute() if keep_refused is not None else None,
        wheelhouse=Path(wheelhouse).absolute() if wheelhouse is not None else None,
    )
    if wheelhouse is not None and the_recipe.network:
        click.echo(
            f"buildkit build: note: --wheelhouse {wheelhouse} is not used: the recipe sets network: true, "
            "so pip in the build container installs from the index",
            err=True,
        )
    if options.keep_refused is not None:
        check_writable(options.keep_refused, "--keep-refused")
        if options.keep_refused.is_relative_to(options.out_dir) and not any(
            part.startswith(".") for part in options.keep_refused.relative_to(options.out_dir).parts
        ):
            click.echo(
                f"buildkit build: note: --keep-refused {keep_refused} lies inside --out {out_dir}: "
                f"`buildkit publish {out_dir}` refuses to publish while it holds a refused wheel",
                err=True,
            )
    verbose = verbose or global_verbose()
    live = live_board_wanted(as_json=as_json, verbose=verbose, env=os.environ)
    with LiveBoard() if live else contextlib.nullcontext() as board:
        results = build_plan(
            the_recipe,
            the_plan,
            job_ids,
            options,
            echo=board.echo if board is not None else _progress_echo,
            verbose=verbose,
            parallel=parallel,
            board=board,
        )
    if as_json:
        click.echo(json.dumps(summary_json(results), indent=2, sort_keys=True))
    else:
        styled = colour_wanted(sys.stdout)
        summary = render_summary(
            results, recipe=recipe, out_dir=options.out_dir, cwd=Path.cwd(), styled=styled
        )
        click.echo(colour_verdicts(summary, tty=styled, env=os.environ))
    failed = [r for r in results if r.status not in ("passed", "up-to-date")]
    broken = [r for r in failed if r.status == "build-failed"]
    if broken and all(r.exit_code == IndexUnavailable.exit_code for r in broken):
        # the no-regression baseline's index could not be reached: exit 13, as from every command
        first = broken[0].message.splitlines()[0] if broken[0].message else "an index could not be reached"
        raise IndexUnavailable(
            f"{len(failed)} of {len(results)} jobs failed: {first} (transient: retry); "
            f"logs in {options.log_dir}"
        )
    if broken:
        raise BuildFailed(f"{len(failed)} of {len(results)} jobs failed; logs in {options.log_dir}")
    if failed:
        kept = [r for r in failed if r.refused is not None]
        where = (
            f"; their wheels are kept apart in {shown(options.refused_dir)}/ (never published)"
            if kept
            else ""
        )
        raise GateFailed(
            f"{len(failed)} of {len(results)} jobs failed the gate: nothing of them is in "
            f"{shown(options.out_dir)}/<job-id>/{where}"
        )
