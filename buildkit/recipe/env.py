"""The recipe's build environment: the variables a recipe may not set (rocm-buildkit or cibuildwheel
sets them in the build container), the cibuildwheel options that have a recipe key instead, and the arch
variables the resolved arch list is exported to (``archs.export``), each refused when set by hand."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from buildkit.errors import RecipeError
from buildkit.recipe.yamlspan import Path as JsonPath
from buildkit.targets import ALWAYS_EXPORTED, ARCH_VARIABLES

#: ``err(message, at, hint=..., key=...)``: the recipe builder's positioned error
ErrorAt = Callable[..., RecipeError]

_ARCH_VAR = "rocm-buildkit sets it to the job's resolved archs; choose them with archs: in the recipe"
_VERSION_VAR = "rocm-buildkit sets it to the job's planned version; change version: in the recipe instead"
_CCACHE_VAR = "rocm-buildkit configures the compiler cache itself (`buildkit build --no-cache` turns it off)"
_CA_VAR = "rocm-buildkit points it at the host's CA bundle, staged with the source"
_WHEELHOUSE_VAR = (
    "a hermetic build installs only from the wheelhouse resolved on the host; give build requirements "
    "in the project's pyproject.toml and test requirements in test_requires, or set network: true"
)


@dataclass(frozen=True)
class ReservedEnv:
    """A build-environment variable rocm-buildkit (or cibuildwheel) sets in the build container."""

    reason: str
    value: str | None = None  # a fixed value the recipe may repeat (HIP_PLATFORM: amd), else None


#: Variables the build container gets from rocm-buildkit or cibuildwheel. A recipe may not set them
#: in ``env`` or name them as ``matrix.axes``: its value would be overridden in the container while
#: the manifest recorded it, or (PATH) would replace the job's Python. One with a fixed ``value``
#: may be repeated with exactly that value. ``MAX_JOBS`` and ``ROCM_PATH`` are not here: the recipe's
#: value is the one the build gets (buildkit's default applies only without one).
RESERVED_ENV: Mapping[str, ReservedEnv] = MappingProxyType(
    {
        "HIP_PLATFORM": ReservedEnv("rocm-buildkit always builds with HIP_PLATFORM=amd", "amd"),
        "PYTHONHASHSEED": ReservedEnv("rocm-buildkit sets PYTHONHASHSEED=0 for reproducible builds", "0"),
        "PYTORCH_ROCM_ARCH": ReservedEnv(_ARCH_VAR),
        "GPU_ARCHS": ReservedEnv(_ARCH_VAR),
        "SOURCE_DATE_EPOCH": ReservedEnv(
            "rocm-buildkit sets it from the source's last commit (reproducible builds)"
        ),
        "BUILDKIT_VERSION": ReservedEnv(_VERSION_VAR),
        "SETUPTOOLS_SCM_PRETEND_VERSION": ReservedEnv(_VERSION_VAR),
        "BUILDKIT_JOB": ReservedEnv("rocm-buildkit sets it to the job id"),
        "CCACHE_DIR": ReservedEnv(_CCACHE_VAR),
        "CCACHE_COMPILERCHECK": ReservedEnv(_CCACHE_VAR),
        "CCACHE_BASEDIR": ReservedEnv(_CCACHE_VAR),
        "CCACHE_NOHASHDIR": ReservedEnv(_CCACHE_VAR),
        "CCACHE_IGNOREOPTIONS": ReservedEnv(_CCACHE_VAR),
        "CCACHE_REMOTE_STORAGE": ReservedEnv(_CCACHE_VAR),
        "CCACHE_STATSLOG": ReservedEnv(_CCACHE_VAR),
        "PIP_CERT": ReservedEnv(_CA_VAR),
        "SSL_CERT_FILE": ReservedEnv(_CA_VAR),
        "REQUESTS_CA_BUNDLE": ReservedEnv(_CA_VAR),
        "PIP_EXTRA_INDEX_URL": ReservedEnv(
            "rocm-buildkit sets it to the torch index of torch jobs; give torch: [{version, index_url}]"
        ),
        "PIP_NO_INDEX": ReservedEnv(_WHEELHOUSE_VAR),
        "PIP_FIND_LINKS": ReservedEnv(_WHEELHOUSE_VAR),
        "UV_NO_INDEX": ReservedEnv(_WHEELHOUSE_VAR),
        "UV_FIND_LINKS": ReservedEnv(_WHEELHOUSE_VAR),
        "PIP_CONSTRAINT": ReservedEnv(
            "rocm-buildkit sets it to the torch pin of torch jobs; pin torch with torch: and other "
            "build requirements in the project's pyproject.toml"
        ),
        "PATH": ReservedEnv(
            "cibuildwheel puts the job's Python first on PATH, and env values are passed literally "
            "(no $PATH expansion), so a recipe PATH would replace it"
        ),
        "CIBUILDWHEEL": ReservedEnv("cibuildwheel sets it"),
        "CIBUILDWHEEL_BUILD_IDENTIFIER": ReservedEnv("cibuildwheel sets it to the build identifier"),
    }
)
#: the recipe key that does what a cibuildwheel option would (``CIBW_*`` in ``env`` is refused)
_CIBW_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "CIBW_BUILD": "python: (the CPython versions to build)",
        "CIBW_SKIP": "python: and matrix.exclude",
        "CIBW_PROJECT_REQUIRES_PYTHON": "python:",
        "CIBW_ENVIRONMENT": "env: (passed to the build as written)",
        "CIBW_ENVIRONMENT_PASS_LINUX": "env: (the host's environment never reaches the build)",
        "CIBW_MANYLINUX_X86_64_IMAGE": "image: (a profile, your own image.dockerfile or an image.ref)",
        "CIBW_BEFORE_ALL": "before_all: (or image.packages for system packages, built once into the image)",
        "CIBW_BEFORE_BUILD": "before_build:",
        "CIBW_CONFIG_SETTINGS": "config_settings:",
        "CIBW_BUILD_FRONTEND": "build_frontend:",
        "CIBW_TEST_REQUIRES": "test_requires:",
        "CIBW_REPAIR_WHEEL_COMMAND": "repair.exclude: (auditwheel repair runs with the job's policy)",
        "CIBW_REPAIR_WHEEL_COMMAND_LINUX": "repair.exclude:",
        "CIBW_ARCHS": "nothing: rocm-buildkit builds x86_64 wheels",
        "CIBW_TEST_COMMAND": "test_command: (in the builder) or smoke: (in runtime images)",
    }
)


def cibw_hint(name: str) -> str:
    """Where a cibuildwheel option's job is done in a recipe."""
    key = _CIBW_KEYS.get(name.removesuffix("_LINUX") if name not in _CIBW_KEYS else name)
    base = "cibuildwheel reads its options on the host, so in env it would only be an inert variable"
    return (
        f"{base}; use the recipe's {key}"
        if key
        else f"{base}; rocm-buildkit renders cibuildwheel's options from the recipe"
    )


#: ``archs.export`` names that reach CMake: ``cmake.define.GPU_TARGETS`` (a PEP 517 config setting, as
#: scikit-build-core reads it) and ``-DGPU_TARGETS`` (a definition appended to ``CMAKE_ARGS``)
CMAKE_DEFINE = "cmake.define."
_DASH_D = "-D"
#: a CMake definition on a command line or in CMAKE_ARGS: -DNAME=..., -DNAME:STRING=..., -D NAME=...
#: a shell assignment: at a command's start (after ; & | or a subshell's parenthesis) or by export/env
_ASSIGNMENT = re.compile(
    r"(?:^|[;&|(]|\bexport|\benv|\bdeclare(?:\s+-\w+)*|\breadonly)\s*([A-Z_][A-Z0-9_]*)="
)
_DEFINITION = re.compile(r"-D\s*([A-Za-z_][A-Za-z0-9_]*)(?::[A-Za-z]+)?=")


def cmake_variable(export_name: str) -> str | None:
    """The CMake variable an ``archs.export`` name defines (``cmake.define.X``, ``-DX``), else None."""
    for prefix in (CMAKE_DEFINE, _DASH_D):
        if export_name.startswith(prefix):
            return export_name[len(prefix) :]
    return None


def is_environment_name(export_name: str) -> bool:
    """Whether an ``archs.export`` name is an environment variable (not a CMake definition)."""
    return cmake_variable(export_name) is None


def arch_export(raw: Any, err: ErrorAt) -> tuple[tuple[str, str], ...]:
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
                raise err(
                    f"archs.export: {name} has no known separator",
                    at,
                    hint=f'write it as a mapping with the separator the build expects: {{{name}: ","}} '
                    f"(known: {', '.join(ARCH_VARIABLES)})",
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


def check_env_name(
    name: str, value: str | None, at: JsonPath, err: ErrorAt, exported: tuple[tuple[str, str], ...] = ()
) -> None:
    """Refuse a build variable rocm-buildkit or cibuildwheel sets itself (:data:`RESERVED_ENV`), an
    arch variable (exported by ``archs.export``, or one builds usually read: set by hand it goes
    stale when ``--archs`` changes the list) and a cibuildwheel option (``CIBW_*``: cibuildwheel
    reads those on the host, so in ``env`` they only reach the build as inert variables);
    ``value`` None: a matrix axis, whose values vary, so even a fixed one is refused."""
    if name.startswith("CIBW_"):
        raise err(
            f"{'.'.join(str(p) for p in at)}: {name} is a cibuildwheel option, not a build variable",
            at,
            key=True,
            hint=cibw_hint(name),
        )
    exports = dict(exported)
    if (name in exports or name in ARCH_VARIABLES) and name not in RESERVED_ENV:
        sep = exports.get(name) or ARCH_VARIABLES[name]
        already = "archs.export exports it" if name in exports else f'add archs.export: {{{name}: "{sep}"}}'
        raise err(
            f"{'.'.join(str(p) for p in at)}: {name} is an arch variable: set by hand it goes stale "
            "when --archs or PYTORCH_ROCM_ARCH changes the arch list",
            at,
            key=True,
            hint=f"{already} (the resolved list, {sep!r}-separated, in step with every arch source)",
        )
    reserved = RESERVED_ENV.get(name)
    if reserved is None or (value is not None and value == reserved.value):
        return
    where = ".".join(str(p) for p in at)
    if reserved.value is not None:
        message = f"{where}: {name} is always {reserved.value!r} in the build container"
        hint = f'{reserved.reason}; remove it (or write {name}: "{reserved.value}")'
    else:
        message = f"{where}: {name} is set by the build itself, so the recipe cannot set it"
        hint = reserved.reason
    raise err(message, at, key=True, hint=hint)


def _arch_names(exported: Sequence[tuple[str, str]]) -> set[str]:
    """Arch variables: those builds usually read, and every one the recipe exports (CMake's too)."""
    names = set(ARCH_VARIABLES)
    for name, _ in exported:
        names.add(cmake_variable(name) or name)
    return names


def _fix(variable: str, exported: Sequence[tuple[str, str]], form: str) -> str:
    done = {name for name, _ in exported}
    wanted = f"{CMAKE_DEFINE}{variable}" if form == "define" else f"{_DASH_D}{variable}"
    if wanted in done:
        return f"remove it: archs.export's {wanted} passes the resolved list, in step with every arch source"
    return (
        f"add archs.export: [{wanted}]: buildkit passes the resolved list "
        f"({'a config setting' if form == 'define' else 'appended to CMAKE_ARGS'}), in step with --archs "
        "and PYTORCH_ROCM_ARCH"
    )


def check_cmake_arch_settings(
    config_settings: Sequence[tuple[str, Sequence[str]]],
    env: Mapping[str, str],
    hooks: Mapping[str, Sequence[str]],
    exported: Sequence[tuple[str, str]],
    err: ErrorAt,
    *,
    listed: Mapping[str, bool],
) -> list[RecipeError]:
    """An arch variable set by hand where a build reads it: a ``cmake.define.X`` config setting, a
    ``-DX=`` definition in a config setting's value or in ``env.CMAKE_ARGS``, ``X=`` in a
    ``before_all``/``before_build`` command. Each is refused at its place, with the ``archs.export``
    that keeps it in step (``listed``: whether a hook was written as a list, for its positions)."""
    names = _arch_names(exported)
    problems: list[RecipeError] = []
    for key, values in config_settings:
        if key.startswith(CMAKE_DEFINE) and key[len(CMAKE_DEFINE) :] in names:
            variable = key[len(CMAKE_DEFINE) :]
            problems.append(
                err(
                    f"config_settings.{key}: {variable} is an arch variable: set by hand it goes stale "
                    "when --archs or PYTORCH_ROCM_ARCH changes the arch list",
                    ("config_settings", key),
                    key=True,
                    hint=_fix(variable, exported, "define"),
                )
            )
            continue
        for i, value in enumerate(values):
            for variable in _DEFINITION.findall(value):
                if variable in names:
                    at: JsonPath = (
                        ("config_settings", key, i) if len(values) > 1 else ("config_settings", key)
                    )
                    problems.append(
                        err(
                            f"config_settings.{key}: -D{variable} sets an arch variable by hand; it goes "
                            "stale when --archs or PYTORCH_ROCM_ARCH changes the arch list",
                            at,
                            hint=_fix(variable, exported, "dash"),
                        )
                    )
    for variable in _DEFINITION.findall(env.get("CMAKE_ARGS", "")):
        if variable in names:
            problems.append(
                err(
                    f"env.CMAKE_ARGS: -D{variable} sets an arch variable by hand; it goes stale when "
                    "--archs or PYTORCH_ROCM_ARCH changes the arch list",
                    ("env", "CMAKE_ARGS"),
                    hint=_fix(variable, exported, "dash"),
                )
            )
    for hook, commands in hooks.items():
        for i, command in enumerate(commands):
            assigned = _ASSIGNMENT.findall(command)
            for variable in [*assigned, *_DEFINITION.findall(command)]:
                if variable in names:
                    where: JsonPath = (hook, i) if listed.get(hook) else (hook,)
                    problems.append(
                        err(
                            f"{hook}: sets the arch variable {variable} by hand; it goes stale when --archs "
                            "or PYTORCH_ROCM_ARCH changes the arch list",
                            where,
                            hint=f"remove it: the build environment has {variable}, the resolved list"
                            if variable in ALWAYS_EXPORTED or variable in dict(exported)
                            else f"remove it and add archs.export: [{variable}]: the build environment "
                            "then has it, the resolved list",
                        )
                    )
                    break
    return problems
