"""``buildkit archs`` as a library call: the command's options and a recipe turned into the arguments
of :func:`buildkit.plan.archs.resolve`."""

from __future__ import annotations

from collections.abc import Mapping

from buildkit import rocm as rocmdata
from buildkit.errors import UsageError
from buildkit.plan.archs import ArchSet, resolve
from buildkit.recipe import load_recipe
from buildkit.targets import split_arch_list


def resolve_archs(
    *,
    rocm: str | None,
    cli_archs: str | None = None,
    recipe_path: str | None = None,
    toolchain: str | None = None,
    allow: str | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[ArchSet, tuple[tuple[str, str], ...]]:
    """``buildkit archs``: the recipe (when given) supplies the arch list, allow-list, toolchain,
    the variables it exports the list to and, when it pins a single release, the ROCm release;
    explicit arguments win over it. The resolved archs and the (variable, separator) exports."""
    export: tuple[tuple[str, str], ...] = ()
    recipe_archs: list[str] | None = None
    recipe_allow: list[str] | None = None
    if recipe_path is not None:
        recipe = load_recipe(recipe_path)
        recipe_archs = list(recipe.archs.list) if recipe.archs.list else None
        recipe_allow = list(recipe.archs.allow) if recipe.archs.allow else None
        toolchain = toolchain or recipe.archs.toolchain
        export = recipe.archs.export
        if rocm is None:
            if len(recipe.rocm) != 1:
                raise UsageError(f"{recipe_path} pins ROCm {', '.join(recipe.rocm)}: choose one with --rocm")
            rocm = recipe.rocm[0]
    if rocm is None:
        raise UsageError("--rocm is required (or a --recipe that pins a single ROCm release)")
    toolchain_archs = list(rocmdata.get_toolchain(toolchain).archs) if toolchain is not None else None
    resolved = resolve(
        rocm=rocm,
        cli_archs=cli_archs,
        recipe_archs=recipe_archs,
        allow=split_arch_list(allow) if allow is not None else recipe_allow,
        env=env,
        toolchain_archs=toolchain_archs,
        toolchain=toolchain,
    )
    return resolved, export
