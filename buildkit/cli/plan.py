"""``buildkit plan RECIPE``: print the build plan (table, JSON, or GitHub Actions matrix shards)."""

from __future__ import annotations

import click

from buildkit.plan import GITHUB_MAX_JOBS, RENDERERS, expand, render_github
from buildkit.recipe import load_recipe


@click.command("plan")
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(RENDERERS)),
    default="table",
    show_default=True,
    help="table: jobs and skipped combinations; json: the full plan; github: strategy.matrix shards.",
)
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
def plan(recipe: str, fmt: str, cli_archs: str | None, shard_size: int) -> None:
    """Expand RECIPE into build jobs with stable ids, resolved archs and versions."""
    from buildkit.ceilings import ceilings_from_images

    the_plan = expand(load_recipe(recipe), cli_archs=cli_archs, ceilings_reader=ceilings_from_images)
    text = render_github(the_plan, shard_size) if fmt == "github" else RENDERERS[fmt](the_plan)
    click.echo(text, nl=False)
