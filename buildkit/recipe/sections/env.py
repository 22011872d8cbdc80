"""The recipe's ``env:``: the build environment a recipe sets, passed to every build as written.
A variable the build sets itself, an arch variable or a cibuildwheel option is refused
(:func:`buildkit.recipe.environment.check_env_name`), and so is a name that is also a matrix axis."""

from __future__ import annotations

from functools import partial

from buildkit.recipe.environment import DEFAULT_EXPORT, check_env_name
from buildkit.recipe.section import Context, Section
from buildkit.recipe.sections.archs import ArchSpec
from buildkit.recipe.sections.matrix import Matrix
from buildkit.recipe.yamlspan import Path as JsonPath


def _parse_env(ctx: Context) -> dict[str, str]:
    """The recipe's ``env``, checked as the module docstring says."""
    matrix: Matrix | None = ctx.part("matrix")
    archs: ArchSpec | None = ctx.part("archs")
    axes = matrix.axes if matrix is not None else ()
    exported = archs.export if archs is not None else DEFAULT_EXPORT
    env = dict(ctx.data.get("env", {}))
    for name, value in env.items():
        ctx.attempt("env", (), partial(check_env_name, name, value, ("env", name), ctx.err, exported))
    for name, _ in axes:
        if name in dict(exported):
            at: JsonPath = ("matrix", "axes", name)
            ctx.attempt("env", (), partial(check_env_name, name, None, at, ctx.err, exported))
        if name in env:
            ctx.report(
                ctx.err(
                    f"{name} is both a matrix axis and a fixed env value",
                    ("env", name),
                    key=True,
                    hint=f"remove env.{name} or matrix.axes.{name}",
                )
            )
    return env


SECTION = Section("env-keys", ("env", "matrix"), _parse_env, "env")
