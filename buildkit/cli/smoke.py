"""``buildkit smoke WHEEL``: install a wheel in throwaway runtime containers and import / run it
(exit codes: docs/REFERENCE.md; WHEEL is read before any container is created). The logic is
:func:`buildkit.service.smoke.run_smoke_tests`.
"""

from __future__ import annotations

from pathlib import Path

import click

from buildkit.cli.options import quiet, verbose


@click.command("smoke")
@click.argument("wheel", type=click.Path(exists=True, dir_okay=False))
@click.option("--image", default=None, help="Runtime image (overrides the recipe entries' images).")
@click.option("--import", "imports", multiple=True, help="Module that must import (repeatable).")
@click.option("--command", "commands", multiple=True, help="Shell command that must exit 0 (repeatable).")
@click.option("--recipe", default=None, help="Run this recipe's smoke entries.")
@click.option("--label", "labels", multiple=True, help="With --recipe: only entries with this label.")
@click.option(
    "--wheelhouse",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="Dependencies from these wheels (copied into the container; no network).",
)
@click.option("--index-url", default=None, help="Dependencies from this index (host CA bundle copied in).")
@click.option(
    "--python",
    default=None,
    help="The runtime image's interpreter (default python3; for a wheel serving several CPythons, "
    "each of them in turn: python3.12, python3.13, ...).",
)
@click.option(
    "--gpu/--no-gpu",
    default=None,
    help="Pass /dev/kfd and /dev/dri through (default: when this machine has them).",
)
@click.option(
    "--timeout",
    type=click.IntRange(min=1),
    default=900,
    show_default=True,
    help="Seconds per step (at least 1; there is no 'no limit' value).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def smoke(
    wheel: str,
    image: str | None,
    imports: tuple[str, ...],
    commands: tuple[str, ...],
    recipe: str | None,
    labels: tuple[str, ...],
    wheelhouse: str | None,
    index_url: str | None,
    python: str | None,
    gpu: bool | None,
    timeout: int,
    as_json: bool,
) -> None:
    """Install WHEEL in a container of each runtime image, then run the imports and commands."""
    # deferred (heavy: the Docker SDK): `buildkit smoke --help` and click's usage errors stay fast
    from buildkit import smoke as smoking
    from buildkit.image.engine import EngineLine
    from buildkit.service.smoke import run_smoke_tests

    def progress(line: str) -> None:
        # an image build is progress: its own log on -v (or in the error when it fails, with the log's path)
        if not as_json and not quiet() and (verbose() or not isinstance(line, EngineLine)):
            click.echo(line, err=True)

    results = run_smoke_tests(
        Path(wheel),
        image=image,
        imports=imports,
        commands=commands,
        recipe=recipe,
        labels=labels,
        wheelhouse=Path(wheelhouse) if wheelhouse else None,
        index_url=index_url,
        python=python,
        gpu=gpu,
        timeout=timeout,
        progress=progress,
    )
    click.echo(smoking.render_json(results) if as_json else smoking.render_human(results, verbose=verbose()))
    smoking.raise_on_failure(results)
