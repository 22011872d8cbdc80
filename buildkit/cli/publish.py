"""``buildkit publish DIST --to TARGET``: publish gated wheels (manifest checked, sha256 recomputed).

Exit 0 when every wheel is published or already was, 10 (PublishRefused) when any wheel is refused
(nothing is published then) or the index refuses an upload. 2 for bad usage, including an empty or
unwritable directory target.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import click

from buildkit import publish as publishing
from buildkit.errors import UsageError
from buildkit.publish import outcomes_json, parse_target, recipe_target, scrub, secrets_from


@click.command("publish")
@click.argument("dist", type=click.Path(exists=True))
@click.option(
    "--to",
    "to",
    default=None,
    help="`pypi`, an index upload URL (twine; e.g. a pypiserver), or a directory / file:// URL "
    "(a static PEP 503 index is written there).",
)
@click.option("--recipe", default=None, help="Take the target from this recipe's publish section.")
@click.option("--simple-url", default=None, help="The index's PEP 503 pages (default: UPLOAD_URL/simple/).")
@click.option(
    "--log",
    "log_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Append the publish log (credentials scrubbed) to this file.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
def publish_cmd(
    dist: str,
    to: str | None,
    recipe: str | None,
    simple_url: str | None,
    log_file: str | None,
    as_json: bool,
) -> None:
    """Publish every wheel under DIST whose manifest passed and matches its sha256."""
    if (to is None) == (recipe is None):
        raise UsageError("give exactly one of --to TARGET or --recipe R")
    target = parse_target(to, simple_url=simple_url) if to is not None else recipe_target(str(recipe))
    secrets = secrets_from(os.environ)
    with contextlib.ExitStack() as stack:
        handle = stack.enter_context(Path(log_file).open("a", encoding="utf-8")) if log_file else None

        def log(line: str) -> None:
            line = scrub(line, secrets)
            if handle is not None:
                handle.write(line + "\n")
                handle.flush()
            if not as_json:
                click.echo(line, err=True)

        try:
            log(f"publish {dist} -> {target.describe()}")
            outcomes = publishing.publish(Path(dist), target, log=log)
        except Exception as exc:
            if handle is not None:  # the CLI prints the error itself; the log file keeps it too
                handle.write(scrub(f"error: {exc}", secrets) + "\n")
            raise
    if as_json:
        click.echo(outcomes_json(outcomes, target))
    else:
        for o in outcomes:
            click.echo(f"{o.status:<17} {o.wheel.name}  {o.where}")


publish = publish_cmd
