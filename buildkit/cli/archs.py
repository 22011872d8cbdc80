"""``buildkit archs``: resolve the GPU archs of a build and print them (resolution in buildkit.plan.archs;
:func:`buildkit.service.archs.resolve_archs` turns the command's options and recipe into its arguments)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

import click

from buildkit.cli.options import enveloped, json_errors, json_flag, pick_format
from buildkit.errors import ArchesDropped
from buildkit.plan.archs import ArchSet
from buildkit.recipe.sections.archs import is_environment_name
from buildkit.service.archs import resolve_archs
from buildkit.targets import ALWAYS_EXPORTED


def _render(archs: ArchSet, fmt: str, export: Sequence[tuple[str, str]] = ()) -> str:
    """``export``: the recipe's ``archs.export`` (variable, separator), printed in the env and JSON
    formats after PYTORCH_ROCM_ARCH and GPU_ARCHS, as the build exports them."""
    values = archs.exported(export)
    if fmt == "json":
        return json.dumps(
            enveloped("archs", {**archs.to_json(), "exported": values}), indent=2, sort_keys=True
        )
    if fmt == "flags":
        return " ".join(archs.offload_arch_flags())
    if fmt == "cmake":
        return archs.cmake_hip_architectures()
    pairs = [("PYTORCH_ROCM_ARCH", archs.pytorch_rocm_arch()), ("GPU_ARCHS", archs.gpu_archs())]
    # environment variables only: a CMake definition (cmake.define.X, -DX) is in the JSON format
    pairs += [
        (name, value)
        for name, value in values.items()
        if name not in ALWAYS_EXPORTED and is_environment_name(name)
    ]
    if fmt == "github-env":  # lines for $GITHUB_ENV: NAME=value, read literally by the runner
        return "\n".join(f"{name}={value}" for name, value in pairs)
    # `eval "$(buildkit archs ...)"` reaches child processes only with export
    return "\n".join(f"export {name}={shlex.quote(value)}" for name, value in pairs)


@click.command("archs")
@click.option(
    "--rocm", "rocm_version", help="Pinned ROCm release (e.g. 6.4); default: the recipe's only one."
)
@click.option("--archs", "cli_archs", help="Archs to build, ';'/','/space separated (highest precedence).")
@click.option(
    "--recipe",
    "recipe_path",
    type=click.Path(dir_okay=False),
    help="Take archs/allow-list/toolchain from a recipe.",
)
@click.option("--toolchain", help="A toolchain id (`buildkit rocm ls` lists them, e.g. debian-trixie).")
@click.option("--allow", help="Allow-list of archs (overrides the recipe's).")
@click.option("--explain", is_flag=True, help="Print the decision trail to stderr.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["env", "github-env", "json", "flags", "cmake"]),
    default=None,
    help="env (default): `export NAME='value'` lines for eval; github-env: NAME=value lines for $GITHUB_ENV.",
)
@json_flag
@click.option("--strict", is_flag=True, help="Exit 5 when any requested arch was dropped.")
def archs(
    rocm_version: str | None,
    cli_archs: str | None,
    recipe_path: str | None,
    toolchain: str | None,
    allow: str | None,
    explain: bool,
    fmt: str | None,
    as_json: bool,
    strict: bool,
) -> None:
    """Resolve GPU archs: --archs > recipe > PYTORCH_ROCM_ARCH > GPU_ARCHS > rocm_agent_enumerator.

    Prints PYTORCH_ROCM_ARCH/GPU_ARCHS and the recipe's archs.export variables (env: shell-quoted
    export lines; github-env: lines for $GITHUB_ENV), --offload-arch flags, the CMake
    HIP architectures value, or JSON. Dropped archs are always reported on stderr, and so is an
    environment variable (PYTORCH_ROCM_ARCH, GPU_ARCHS) that is set to another list but ignored.
    """
    fmt = pick_format(fmt, as_json, "env")
    with json_errors("archs", fmt == "json") as out:
        result, export = resolve_archs(
            rocm=rocm_version, cli_archs=cli_archs, recipe_path=recipe_path, toolchain=toolchain, allow=allow
        )
        if explain:
            for line in result.trail:
                click.echo(f"explain: {line}", err=True)
        else:
            for decision in result.dropped:
                click.echo(f"buildkit archs: {decision}", err=True)
        for warning in result.warnings:
            click.echo(f"buildkit archs: warning: {warning}", err=True)
        out.echo(_render(result, fmt, export))
        if strict and result.dropped:
            raise ArchesDropped(
                f"--strict: {len(result.dropped)} requested arch(s) dropped: "
                + "; ".join(str(d) for d in result.dropped)
            )
