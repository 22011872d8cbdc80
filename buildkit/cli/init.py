"""``buildkit init [PATH]``: a commented recipe for an existing project (logic in
:mod:`buildkit.source.project`).

Every choice is checked before anything is written, naming the flag or the prompt it came from; on
a terminal a bad answer is asked again. A project that fixes its version gets one ROCm release
(wheels of several would share one file name). init never writes a recipe ``plan`` refuses.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

import click

from buildkit import builders, profiles
from buildkit import rocm as rocm_data
from buildkit.cli.options import quiet
from buildkit.errors import ArchError, RecipeError, UsageError
from buildkit.plan.feasibility import provided_releases
from buildkit.recipe import Recipe
from buildkit.service.plan import plan_of
from buildkit.source.project import (
    Project,
    default_choices,
    network_hooks,
    read_project,
    write_recipe,
)
from buildkit.targets import parse_target_id, split_arch_list


def _interactive() -> bool:
    """Whether to ask: only when a person is at stdin."""
    return sys.stdin.isatty()


def _releases(builder: profiles.Profile) -> Callable[[str, str], tuple[str, ...]]:
    def check(text: str, where: str) -> tuple[str, ...]:
        values = tuple(r.strip() for r in text.split(",") if r.strip())
        if not values:
            raise UsageError(f"{where}: give at least one ROCm release")
        provided = provided_releases(builder)
        for value in values:
            try:
                rocm_data.get_release(value)
            except rocm_data.UnknownRelease as exc:
                raise UsageError(f"{where} {value}: {exc}") from None
            if provided is not None and value not in provided:
                raise UsageError(f"{where} {value}: image {builder.name} provides ROCm {', '.join(provided)}")
        return values

    return check


def _archs(text: str, where: str) -> tuple[str, ...]:
    values = split_arch_list(text)
    if not values:
        raise UsageError(f"{where}: give at least one GPU arch, e.g. gfx942")
    try:
        return tuple(str(parse_target_id(v)) for v in values)
    except ArchError as exc:
        raise UsageError(f"{where}: {exc.message}") from None


def _choose(
    given: str | None,
    flag: str,
    prompt: str,
    default: tuple[str, ...],
    check: Callable[[str, str], tuple[str, ...]],
) -> tuple[str, ...]:
    """The flag's value, else on a terminal the answer (asked again until it passes ``check``), else
    ``default``."""
    if given is not None:
        return check(given, flag)
    if not _interactive():
        return default

    def answer(text: str) -> tuple[str, ...]:
        try:
            return check(text, prompt)
        except UsageError as exc:  # click.prompt prints a click.UsageError's message and asks again
            raise click.UsageError(exc.message) from None

    chosen: tuple[str, ...] = click.prompt(prompt, default=",".join(default), err=True, value_proc=answer)
    return chosen


def _plan_accepts(recipe: Recipe) -> None:
    try:
        plan_of(recipe, env={})
    except RecipeError as exc:  # a bug of init's: its choices were checked
        raise UsageError(f"init would write a recipe that plan refuses:\n{exc.message}") from None


def _note(line: str) -> None:
    """What init says on stderr that is not a warning: nothing with -q."""
    if not quiet():
        click.echo(line, err=True)


def _builder(project: Project) -> tuple[str, tuple[str, ...]]:
    """The builder image when ``--image`` is not given (:mod:`buildkit.builders`: one this machine
    can build; on a terminal, asked when none can), printed with why, and the recipe's comment on the
    others."""
    choice = builders.choose_builder([profiles.get_profile(name) for name in builders.CANDIDATES])
    _note(f"buildkit init: builder {choice.why}")
    image = choice.image
    if not choice.buildable and _interactive():
        names = [choice.image, *(name for name, _ in choice.others)]
        image = click.prompt("Builder image", default=image, type=click.Choice(names), err=True)
    note = [
        f"chosen by init: {choice.why.split('; ')[0]}" if image == choice.image else "chosen at init's prompt"
    ]
    for name, lacks in [(choice.image, ()), *choice.others]:
        if name == image:
            continue
        sysroot = default_choices(project, profiles.get_profile(name)).sysroot
        how = f" with manylinux.sysroot: {sysroot}" if sysroot else " without manylinux.sysroot"
        why = f" (when init ran: {', '.join(lacks)})" if lacks else ""
        note.append(f"or image: {name}{how}{why}")
    return image, tuple(note)


@click.command("init")
@click.argument("path", default=".", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The recipe file to write (default: PATH/rocm-buildkit.yaml).",
)
@click.option(
    "--image",
    default=None,
    help="The builder image profile (default: the first of manylinux_2_28-rocm, debian-sid-rocm this "
    "machine can build: its Docker engine, base images and download hosts are probed).",
)
@click.option(
    "--rocm", "rocm", default=None, help="ROCm releases, comma-separated (default: the image's newest)."
)
@click.option("--archs", default=None, help="GPU archs, comma-separated (default: gfx90a,gfx942).")
@click.option("--force", is_flag=True, help="Replace an existing recipe file.")
def init(
    path: Path, output: Path | None, image: str | None, rocm: str | None, archs: str | None, force: bool
) -> None:
    """Write a commented recipe for the project in PATH (pyproject.toml or setup.py).

    Reads the project's name, build backend, how it decides its version and its [tool.cibuildwheel]
    table (before-all, before-build, test-command, test-requires, environment, config-settings,
    build-frontend, build become recipe keys; the others are named in the recipe). Asks for the
    ROCm releases and archs on a terminal; asks nothing when stdin is not a terminal.
    """
    target = output if output is not None else path / "rocm-buildkit.yaml"
    if target.exists() and not force:  # before any question
        raise UsageError(f"{target} exists: give another --output, or --force to replace it")
    project = read_project(path)
    image_note: tuple[str, ...] = ()
    if image is None:
        image, image_note = _builder(project)
    builder = profiles.get_profile(image)
    choices = dataclasses.replace(default_choices(project, builder), image_note=image_note)
    releases = _choose(rocm, "--rocm", "ROCm releases", choices.rocm, _releases(builder))
    note = None
    if project.version.kind == "fixed" and len(releases) > 1:
        note = (
            f"ROCm {releases[-1]} only: the project fixes its version ({project.version.where}), so "
            f"wheels of {', '.join(releases)} would share one file name; make the build read "
            "BUILDKIT_VERSION for several"
        )
        _note(f"buildkit init: {note}")
        releases = releases[-1:]
    choices = dataclasses.replace(choices, rocm=releases, rocm_note=note)
    choices = dataclasses.replace(
        choices, archs=_choose(archs, "--archs", "GPU archs", choices.archs, _archs)
    )
    untranslated = write_recipe(project, choices, target, force=force, check=_plan_accepts)
    _note(f"wrote {target} for {project.name or path.resolve().name} ({project.version.how})")
    for option in untranslated:
        _note(f"buildkit init: not translated from [tool.cibuildwheel]: {option}")
    for command in network_hooks(project):
        click.echo(
            f"buildkit init: warning: {command!r} downloads, and the build container has no network: "
            "set network: true, or install system packages with image.packages",
            err=True,
        )
    _note(f"next: buildkit plan {target}")
    click.echo(str(target))
