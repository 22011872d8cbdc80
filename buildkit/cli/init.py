"""``buildkit init [PATH]``: a commented recipe for an existing project (logic in
:mod:`buildkit.source.project`)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import click

from buildkit.source.project import DEFAULT_IMAGE, default_choices, read_project, write_recipe
from buildkit.targets import split_arch_list


def _interactive() -> bool:
    """Whether to ask: only when a person is at stdin."""
    return sys.stdin.isatty()


@click.command("init")
@click.argument("path", default=".", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The recipe file to write (default: PATH/rocm-buildkit.yaml).",
)
@click.option("--image", default=DEFAULT_IMAGE, show_default=True, help="The builder image profile.")
@click.option(
    "--rocm", "rocm", default=None, help="ROCm releases, comma-separated (default: the image's newest)."
)
@click.option("--archs", default=None, help="GPU archs, comma-separated (default: gfx90a,gfx942).")
@click.option("--force", is_flag=True, help="Replace an existing recipe file.")
def init(
    path: Path, output: Path | None, image: str, rocm: str | None, archs: str | None, force: bool
) -> None:
    """Write a commented recipe for the project in PATH (pyproject.toml or setup.py).

    Reads the project's name, build backend, how it decides its version and its [tool.cibuildwheel]
    table (before-all, before-build, test-command, test-requires, environment, config-settings,
    build-frontend, build become recipe keys; the others are named in the recipe). Asks for the
    ROCm releases and archs on a terminal; asks nothing when stdin is not a terminal.
    """
    project = read_project(path)
    choices = default_choices(project, image)
    if rocm is None and _interactive():
        rocm = click.prompt("ROCm releases", default=",".join(choices.rocm), err=True)
    if archs is None and _interactive():
        archs = click.prompt("GPU archs", default=",".join(choices.archs), err=True)
    if rocm:
        choices = dataclasses.replace(choices, rocm=tuple(r.strip() for r in rocm.split(",") if r.strip()))
    if archs:
        choices = dataclasses.replace(choices, archs=tuple(split_arch_list(archs)))
    target = output if output is not None else path / "rocm-buildkit.yaml"
    untranslated = write_recipe(project, choices, target, force=force)
    click.echo(f"wrote {target} for {project.name or path.resolve().name} ({project.version.how})", err=True)
    for option in untranslated:
        click.echo(f"buildkit init: not translated from [tool.cibuildwheel]: {option}", err=True)
    click.echo(f"next: buildkit plan {target}", err=True)
    click.echo(str(target))
