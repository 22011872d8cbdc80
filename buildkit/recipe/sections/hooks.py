"""The recipe's build hooks and options, with cibuildwheel's meaning and names (the table of keys and
options: docs/REFERENCE.md, "Every recipe key"; ``build_requires``: :mod:`buildkit.building.buildsystem`).

rocm-buildkit renders every one of these options itself, empty when the recipe gives none, so a
project's own ``[tool.cibuildwheel]`` table cannot add hooks behind the recipe's back (an environment
variable beats pyproject.toml in cibuildwheel's option cascade).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from buildkit.recipe.section import Context, Section
from buildkit.records import Key, json_shape


@json_shape(
    *("before_all", "before_build", Key("config_settings", convert=dict), "build_frontend"),
    *("test_command", "test_requires", "build_requires"),
)
@dataclass(frozen=True)
class Hooks:
    before_all: tuple[str, ...] = ()
    before_build: tuple[str, ...] = ()
    #: (setting, values) in the recipe's order; a setting given a list is passed once per value
    config_settings: tuple[tuple[str, tuple[str, ...]], ...] = ()
    build_frontend: str = "build"
    test_command: tuple[str, ...] = ()
    test_requires: tuple[str, ...] = ()
    #: PEP 508 requirements added to the project's ``[build-system] requires`` (the recipe's
    #: ``build_requires``)
    build_requires: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Hooks:
        return cls(
            before_all=tuple(data.get("before_all", ())),
            before_build=tuple(data.get("before_build", ())),
            config_settings=tuple((k, tuple(v)) for k, v in data.get("config_settings", {}).items()),
            build_frontend=data.get("build_frontend", "build"),
            test_command=tuple(data.get("test_command", ())),
            test_requires=tuple(data.get("test_requires", ())),
            build_requires=tuple(data.get("build_requires", ())),
        )


def _commands(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _parse_hooks(data: dict[str, Any]) -> Hooks:
    """The hooks of a schema-valid recipe document."""
    settings = data.get("config_settings", {})
    return Hooks(
        before_all=_commands(data.get("before_all")),
        before_build=_commands(data.get("before_build")),
        config_settings=tuple(
            (str(k), (v,) if isinstance(v, str) else tuple(v)) for k, v in settings.items()
        ),
        build_frontend=data.get("build_frontend", "build"),
        test_command=_commands(data.get("test_command")),
        test_requires=tuple(data.get("test_requires", ())),
        build_requires=tuple(data.get("build_requires", ())),
    )


def _parse_build_hooks(ctx: Context) -> Hooks:
    """The hooks, with ``build_requires`` checked: each a PEP 508 requirement, named once, and
    never torch (a job builds against the torch its ``torch`` axis pins)."""
    hooks = _parse_hooks(ctx.data)

    seen: dict[str, int] = {}
    for i, text in enumerate(hooks.build_requires):
        at = ("build_requires", i)
        try:
            name = canonicalize_name(Requirement(text).name)
        except InvalidRequirement as exc:
            message = f"build_requires[{i}]: {text!r} is not a PEP 508 requirement: {exc}"
            raise ctx.err(message, at) from None
        if name == "torch":
            raise ctx.err(
                f"build_requires[{i}]: torch is not a build requirement to add by hand",
                at,
                hint="pin it with torch: [{version: ...}]: each job builds against its torch pin",
            )
        if name in seen:
            raise ctx.err(
                f"build_requires[{i}]: {name} is already build_requires[{seen[name]}]",
                at,
                hint="give one requirement per package, with every specifier in it",
            )
        seen[name] = i
    return hooks


#: the recipe keys of the table above
_KEYS = (
    "before_all",
    "before_build",
    "config_settings",
    "build_frontend",
    "test_command",
    "test_requires",
    "build_requires",
)
SECTION = Section("hooks", _KEYS, _parse_build_hooks, "hooks")
