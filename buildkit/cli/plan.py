"""``buildkit plan RECIPE``: print the build plan (table, JSON, or GitHub Actions matrix shards)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from buildkit.cli.options import JsonOutput, colour_wanted, json_errors, json_flag, pick_format, quiet
from buildkit.errors import UsageError
from buildkit.fsutil import atomic_write
from buildkit.plan.models import check_strict, printable
from buildkit.plan.render import GITHUB_MAX_JOBS, RENDERERS, github_outputs, render_github, render_table
from buildkit.service.plan import command_plan


@click.command("plan")
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(RENDERERS)),
    default=None,
    help="table (default): jobs and skipped combinations; json: the full plan; github: strategy.matrix "
    "shards.",
)
@json_flag
@click.option(
    "--archs", "cli_archs", default=None, help="Arch list overriding the recipe (';' or ',' separated)."
)
@click.option(
    "--shard-size",
    type=click.IntRange(1, GITHUB_MAX_JOBS),
    default=GITHUB_MAX_JOBS,
    show_default=True,
    help="Jobs per GitHub matrix shard (--format github).",
)
@click.option(
    "--shard-slots",
    type=click.IntRange(1, None),
    default=None,
    help="--format github in Actions: the shard jobs the workflow has; each gets an output (empty past "
    "the plan's shards), and a plan needing more is a usage error (exit 2).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default="dist",
    show_default=True,
    help="The build's output folder (build --out): a wheel there built from an earlier version of the "
    "recipe, changed in a key that can change it, gets a note naming it and the keys.",
)
@click.option(
    "--strict", is_flag=True, help="Exit 5 (after printing the plan) when any requested arch was dropped."
)
def plan(
    recipe: str,
    fmt: str | None,
    as_json: bool,
    cli_archs: str | None,
    shard_size: int,
    shard_slots: int | None,
    out_dir: Path,
    strict: bool,
) -> None:
    """Expand RECIPE into build jobs with stable ids, resolved archs and versions.

    The plan's notes (dropped archs, ignored arch variables, torch indexes buildkit's data does not
    list for the pinned ROCm, unverified release data, a source whose version rule is unknown, wheels in
    --out built from an earlier version of the recipe, naming the keys that changed) are
    also printed on stderr, whatever the format. A source that fixes a version other than the plan's
    is a recipe error (exit 3) at version.local or version.base.

    In GitHub Actions (GITHUB_ACTIONS=true), --format github also appends the step outputs matrix,
    job_count, shard_count and shard0, shard1, ... to $GITHUB_OUTPUT.
    """
    fmt = pick_format(fmt, as_json, "table")
    with json_errors("plan", fmt == "json") as out:
        _plan(recipe, fmt, out, cli_archs, shard_size, shard_slots, strict, out_dir)


def _plan(
    recipe: str,
    fmt: str,
    out: JsonOutput,
    cli_archs: str | None,
    shard_size: int,
    shard_slots: int | None,
    strict: bool,
    out_dir: Path,
) -> None:
    the_plan = command_plan(
        recipe, cli_archs=cli_archs, echo=lambda line: click.echo(line, err=True), out=out_dir
    )
    outputs: list[tuple[str, str]] = []
    if fmt == "github":
        try:
            outputs = github_outputs(the_plan, shard_size, shard_slots)
        except ValueError as exc:
            raise UsageError(f"--shard-slots {shard_slots}: {exc}") from None
    if fmt == "table":  # on a terminal the tables' headers are bold
        text = render_table(the_plan, styled=colour_wanted(sys.stdout))
    elif fmt == "github":
        text = render_github(the_plan, shard_size)
    else:
        text = RENDERERS[fmt](the_plan)
    out.echo(text.removesuffix("\n"))
    if outputs and os.environ.get("GITHUB_ACTIONS") == "true" and os.environ.get("GITHUB_OUTPUT"):
        output = Path(os.environ["GITHUB_OUTPUT"])
        lines = "".join(f"{name}={value}\n" for name, value in outputs)
        before = output.read_text(encoding="utf-8") if output.exists() else ""
        atomic_write(output, before + ("" if before.endswith("\n") or not before else "\n") + lines)
        click.echo(f"buildkit plan: wrote matrix, job_count, shard_count, shard0.. to {output}", err=True)
    # the notes once: a table on the terminal shows them; else (JSON, a table into a file or pipe) stderr
    # does too (-q: they stay in the table and the JSON only)
    shown = fmt == "table" and sys.stdout.isatty()
    for note in () if quiet() or shown else the_plan.notes:
        click.echo(f"buildkit plan: note: {printable(note)}", err=True)
    if strict:
        check_strict(the_plan)
