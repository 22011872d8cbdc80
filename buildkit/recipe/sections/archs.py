"""The recipe's ``archs:``: the GPU targets of the build and the variables they are exported to
(docs/REFERENCE.md, "Key: archs"). The plan resolves the list (:mod:`buildkit.plan.archs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from buildkit.recipe.environment import DEFAULT_EXPORT, RESERVED_ENV
from buildkit.recipe.section import Context, ErrorAt, Section
from buildkit.recipe.yamlspan import Path as JsonPath
from buildkit.targets import ALWAYS_EXPORTED, ARCH_VARIABLES

#: ``archs.export`` names that reach CMake: ``cmake.define.GPU_TARGETS`` (a PEP 517 config setting, as
#: scikit-build-core reads it) and ``-DGPU_TARGETS`` (a definition appended to ``CMAKE_ARGS``)
CMAKE_DEFINE = "cmake.define."
DASH_D = "-D"


@dataclass(frozen=True)
class ArchSpec:
    list: tuple[str, ...] | None
    from_env: bool
    allow: tuple[str, ...] | None
    toolchain: str | None  # a toolchain id from buildkit/rocm/toolchains.yaml
    #: (variable, separator) the resolved list is exported to: PYTORCH_ROCM_ARCH and GPU_ARCHS
    #: always, then the recipe's ``archs.export`` in its order
    export: tuple[tuple[str, str], ...] = DEFAULT_EXPORT


def cmake_variable(export_name: str) -> str | None:
    """The CMake variable an ``archs.export`` name defines (``cmake.define.X``, ``-DX``), else None."""
    for prefix in (CMAKE_DEFINE, DASH_D):
        if export_name.startswith(prefix):
            return export_name[len(prefix) :]
    return None


def is_environment_name(export_name: str) -> bool:
    """Whether an ``archs.export`` name is an environment variable (not a CMake definition)."""
    return cmake_variable(export_name) is None


def _arch_export(raw: Any, err: ErrorAt) -> tuple[tuple[str, str], ...]:
    """``archs.export``: a list of known arch variables (:data:`buildkit.targets.ARCH_VARIABLES`,
    their usual separator) or a mapping of variable -> separator; after the two always exported.
    ``cmake.define.X`` and ``-DX`` export the list to CMake (a config setting, ``CMAKE_ARGS``)."""
    out = dict((name, ARCH_VARIABLES[name]) for name in ALWAYS_EXPORTED)
    if raw is None:
        return tuple(out.items())
    items: list[tuple[str, str | None, JsonPath]]
    if isinstance(raw, list):
        items = [(name, None, ("archs", "export", i)) for i, name in enumerate(raw)]
    else:
        items = [(name, sep, ("archs", "export", name)) for name, sep in raw.items()]
    for name, sep, at in items:
        key = not isinstance(raw, list)
        variable = cmake_variable(name)
        if variable is not None:  # a CMake definition: the separator is the variable's
            name, usual_name = name, variable
        else:
            usual_name = name
        if variable is None and (
            name.startswith("CIBW_") or (name in RESERVED_ENV and name not in ALWAYS_EXPORTED)
        ):
            raise err(
                f"archs.export: {name} is not an arch variable a build reads",
                at,
                key=key,
                hint="export the arch list to a variable the build reads (HCC_AMDGPU_TARGET, ...)",
            )
        usual = ARCH_VARIABLES.get(usual_name)
        if sep is None:
            if usual is None:
                # a CMake list is ';'-separated: a definition gets the one that works, a variable ',' as
                # the usual environment variables (the build's own code decides)
                proposed = ";" if variable is not None else ","
                raise err(
                    f"archs.export: {name} has no known separator",
                    at,
                    hint="write it as a mapping with the separator the build expects: "
                    f'{{{name}: "{proposed}"}} (known: {", ".join(ARCH_VARIABLES)})',
                )
            sep = usual
        if name in ALWAYS_EXPORTED and sep != usual:
            raise err(
                f"archs.export: {name} is always exported with {usual!r}",
                at,
                key=key,
                hint=f"PyTorch and aiter read it {usual!r}-separated; export the list to another name",
            )
        out[name] = sep
    return tuple(out.items())


def parse_archs(ctx: Context) -> ArchSpec:
    archs_raw = ctx.data["archs"]
    return ArchSpec(
        list=tuple(archs_raw["list"]) if "list" in archs_raw else None,
        from_env=archs_raw.get("from") == "env",
        allow=tuple(archs_raw["allow"]) if "allow" in archs_raw else None,
        toolchain=archs_raw.get("toolchain"),
        export=_arch_export(archs_raw.get("export"), ctx.err),
    )


SECTION = Section("archs", ("archs",), parse_archs, "archs")
