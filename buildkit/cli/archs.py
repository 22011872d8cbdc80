"""``buildkit archs``: resolve the GPU archs of a build and print them (logic in buildkit.plan.archs)."""

from __future__ import annotations

import json
import shlex

import click

from buildkit.errors import ArchesDropped
from buildkit.plan.archs import ArchSet


def _render(archs: ArchSet, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(archs.to_json(), indent=2, sort_keys=True)
    if fmt == "flags":
        return " ".join(archs.offload_arch_flags())
    if fmt == "cmake":
        return archs.cmake_hip_architectures()
    return (
        f"PYTORCH_ROCM_ARCH={shlex.quote(archs.pytorch_rocm_arch())}\n"
        f"GPU_ARCHS={shlex.quote(archs.gpu_archs())}"
    )


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
@click.option("--toolchain", help="A toolchain id from buildkit/rocm/toolchains.yaml (e.g. debian-trixie).")
@click.option("--allow", help="Allow-list of archs (overrides the recipe's).")
@click.option("--explain", is_flag=True, help="Print the decision trail to stderr.")
@click.option(
    "--format", "fmt", type=click.Choice(["env", "json", "flags", "cmake"]), default="env", show_default=True
)
@click.option("--strict", is_flag=True, help="Exit 5 when any requested arch was dropped.")
def archs(
    rocm_version: str | None,
    cli_archs: str | None,
    recipe_path: str | None,
    toolchain: str | None,
    allow: str | None,
    explain: bool,
    fmt: str,
    strict: bool,
) -> None:
    """Resolve GPU archs: --archs > recipe > PYTORCH_ROCM_ARCH > GPU_ARCHS > rocm_agent_enumerator.

    Prints PYTORCH_ROCM_ARCH/GPU_ARCHS (env, shell-quoted), --offload-arch flags, the CMake
    HIP architectures value, or JSON. Dropped archs are always reported on stderr, and so is an
    environment variable (PYTORCH_ROCM_ARCH, GPU_ARCHS) that is set to another list but ignored.
    """
    from buildkit.plan.archs import resolve_command

    result = resolve_command(
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
    click.echo(_render(result, fmt))
    if strict and result.dropped:
        raise ArchesDropped(
            f"--strict: {len(result.dropped)} requested arch(s) dropped: "
            + "; ".join(str(d) for d in result.dropped)
        )
