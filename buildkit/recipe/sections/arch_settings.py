"""An arch variable set by hand where a build reads it, across sections: a ``config_settings``
CMake definition, ``env.CMAKE_ARGS``, a ``before_all``/``before_build`` command. Set by hand it goes
stale when ``--archs`` or PYTORCH_ROCM_ARCH changes the list; ``archs.export`` keeps it in step."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from buildkit.errors import RecipeError
from buildkit.recipe.environment import DEFAULT_EXPORT
from buildkit.recipe.section import Context, ErrorAt, Section
from buildkit.recipe.sections.archs import CMAKE_DEFINE, DASH_D, ArchSpec, cmake_variable
from buildkit.recipe.sections.hooks import Hooks
from buildkit.recipe.yamlspan import Path as JsonPath
from buildkit.targets import ALWAYS_EXPORTED, ARCH_VARIABLES

#: a CMake definition on a command line or in CMAKE_ARGS: -DNAME=..., -DNAME:STRING=..., -D NAME=...
#: a shell assignment: at a command's start (after ; & | or a subshell's parenthesis) or by export/env
_ASSIGNMENT = re.compile(
    r"(?:^|[;&|(]|\bexport|\benv|\bdeclare(?:\s+-\w+)*|\breadonly)\s*([A-Z_][A-Z0-9_]*)="
)
_DEFINITION = re.compile(r"-D\s*([A-Za-z_][A-Za-z0-9_]*)(?::[A-Za-z]+)?=")


def _arch_names(exported: Sequence[tuple[str, str]]) -> set[str]:
    """Arch variables: those builds usually read, and every one the recipe exports (CMake's too)."""
    names = set(ARCH_VARIABLES)
    for name, _ in exported:
        names.add(cmake_variable(name) or name)
    return names


def _fix(variable: str, exported: Sequence[tuple[str, str]], form: str) -> str:
    done = {name for name, _ in exported}
    wanted = f"{CMAKE_DEFINE}{variable}" if form == "define" else f"{DASH_D}{variable}"
    if wanted in done:
        return f"remove it: archs.export's {wanted} passes the resolved list, in step with every arch source"
    return (
        f"add archs.export: [{wanted}]: buildkit passes the resolved list "
        f"({'a config setting' if form == 'define' else 'appended to CMAKE_ARGS'}), in step with --archs "
        "and PYTORCH_ROCM_ARCH"
    )


#: why an arch variable set by hand is refused
_STALE = "it goes stale when --archs or PYTORCH_ROCM_ARCH changes the arch list"


def _config_setting_problems(
    config_settings: Sequence[tuple[str, Sequence[str]]],
    names: set[str],
    exported: Sequence[tuple[str, str]],
    err: ErrorAt,
) -> list[RecipeError]:
    """A ``cmake.define.X`` config setting, or ``-DX=`` in a config setting's value."""
    problems: list[RecipeError] = []
    for key, values in config_settings:
        variable = key[len(CMAKE_DEFINE) :]
        if key.startswith(CMAKE_DEFINE) and variable in names:
            message = f"config_settings.{key}: {variable} is an arch variable: set by hand {_STALE}"
            hint = _fix(variable, exported, "define")
            problems.append(err(message, ("config_settings", key), key=True, hint=hint))
            continue
        for i, value in enumerate(values):
            at: JsonPath = ("config_settings", key, i) if len(values) > 1 else ("config_settings", key)
            problems += [
                err(
                    f"config_settings.{key}: -D{v} sets an arch variable by hand; {_STALE}",
                    at,
                    hint=_fix(v, exported, "dash"),
                )
                for v in _DEFINITION.findall(value)
                if v in names
            ]
    return problems


def _hook_problems(
    hooks: Mapping[str, Sequence[str]],
    names: set[str],
    exported: Sequence[tuple[str, str]],
    err: ErrorAt,
    listed: Mapping[str, bool],
) -> list[RecipeError]:
    """``X=`` or ``-DX=`` in a ``before_all``/``before_build`` command (the first in each)."""
    problems: list[RecipeError] = []
    for hook, commands in hooks.items():
        for i, command in enumerate(commands):
            found = [v for v in [*_ASSIGNMENT.findall(command), *_DEFINITION.findall(command)] if v in names]
            if not found:
                continue
            variable = found[0]
            hint = (
                f"remove it: the build environment has {variable}, the resolved list"
                if variable in ALWAYS_EXPORTED or variable in dict(exported)
                else f"remove it and add archs.export: [{variable}]: the build environment then has it, "
                "the resolved list"
            )
            at: JsonPath = (hook, i) if listed.get(hook) else (hook,)
            problems.append(
                err(f"{hook}: sets the arch variable {variable} by hand; {_STALE}", at, hint=hint)
            )
    return problems


def _check_cmake_arch_settings(
    config_settings: Sequence[tuple[str, Sequence[str]]],
    env: Mapping[str, str],
    hooks: Mapping[str, Sequence[str]],
    exported: Sequence[tuple[str, str]],
    err: ErrorAt,
    *,
    listed: Mapping[str, bool],
) -> list[RecipeError]:
    """The arch variables of the module docstring, each refused at its place with the ``archs.export`` that
    keeps it in step (``listed``: whether a hook was written as a list, for its positions).
    """
    names = _arch_names(exported)
    problems = _config_setting_problems(config_settings, names, exported, err)
    problems += [
        err(
            f"env.CMAKE_ARGS: -D{variable} sets an arch variable by hand; {_STALE}",
            ("env", "CMAKE_ARGS"),
            hint=_fix(variable, exported, "dash"),
        )
        for variable in _DEFINITION.findall(env.get("CMAKE_ARGS", ""))
        if variable in names
    ]
    return problems + _hook_problems(hooks, names, exported, err, listed)


def _parse_arch_settings(ctx: Context) -> None:
    """Every arch variable the hooks and ``env`` set by hand, each a problem of its own."""
    hooks: Hooks = ctx.part("hooks")
    env: Mapping[str, str] = ctx.part("env-keys")
    archs: ArchSpec | None = ctx.part("archs")
    d = ctx.data
    listed = {h: isinstance(d.get(h), list) for h in ("before_all", "before_build")}
    hand_set = {"before_all": hooks.before_all, "before_build": hooks.before_build}
    exported = archs.export if archs is not None else DEFAULT_EXPORT
    for problem in _check_cmake_arch_settings(
        hooks.config_settings, env, hand_set, exported, ctx.err, listed=listed
    ):
        ctx.report(problem)


SECTION = Section("arch-settings", ("hooks", "env-keys"), _parse_arch_settings, None)
