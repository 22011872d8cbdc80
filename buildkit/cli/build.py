"""``buildkit build RECIPE [--job ID ...]``: build, repair and gate wheels in builder containers."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

import click

from buildkit.building.summary import render_summary, summary_json
from buildkit.cli.options import JsonOutput, colour_verdicts, colour_wanted, quiet, refusing_in_json
from buildkit.cli.options import verbose as global_verbose
from buildkit.service.build import run_build


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
    default=None,
    help="One log file per job (default: OUT/logs, beside the wheels they explain).",
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
@refusing_in_json("build")  # a refusal before the summary: an error document
def build(
    recipe: str,
    job_ids: tuple[str, ...],
    out: JsonOutput,
    out_dir: str,
    log_dir: str | None,
    keep_refused: str | None,
    cli_archs: str | None,
    no_cache: bool,
    ccache_remote: str | None,
    no_isolation: bool,
    force: bool,
    wheelhouse: str | None,
    parallel: int,
    verbose: bool,
    strict: bool,
) -> None:
    """Build every job of RECIPE (or the --job ones) and gate each wheel."""
    verbose, as_json = verbose or global_verbose(), out.enabled
    run = run_build(
        recipe,
        job_ids,
        out_dir=out_dir,
        log_dir=log_dir,
        keep_refused=keep_refused,
        cli_archs=cli_archs,
        use_cache=not no_cache,
        ccache_remote=ccache_remote,
        build_isolation=not no_isolation,
        force=force,
        wheelhouse=wheelhouse,
        parallel=parallel,
        strict=strict,
        notes=not quiet(),  # dropped archs, ...: silent only with -q
        echo=_progress_echo,
        note=lambda line: click.echo(line, err=True),
        verbose=verbose,
        live=live_board_wanted(as_json=as_json, verbose=verbose, env=os.environ),
    )
    if as_json:
        out.echo(summary_json(run.results))
    else:
        styled = colour_wanted(sys.stdout)
        summary = render_summary(
            run.results, recipe=recipe, out_dir=run.options.out_dir, cwd=Path.cwd(), styled=styled
        )
        click.echo(colour_verdicts(summary, tty=styled, env=os.environ))
    failure = run.failure()
    if failure is not None:
        raise failure
