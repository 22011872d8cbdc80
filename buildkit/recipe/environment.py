"""What a build environment may hold, shared by the sections that name variables (``env``,
``matrix.axes``, ``archs.export``): the variables a recipe may not set (rocm-buildkit or cibuildwheel
sets them in the build container), the cibuildwheel options that have a recipe key instead, and the
arch variables (set by hand they go stale when the arch list changes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from buildkit.recipe.section import ErrorAt
from buildkit.recipe.yamlspan import Path as JsonPath
from buildkit.targets import ALWAYS_EXPORTED, ARCH_VARIABLES

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
        "BUILDKIT_TORCH_REQUIREMENT": ReservedEnv(
            "rocm-buildkit sets it to the torch requirement of a stable-ABI wheel (torch>=FROM); "
            "change torch: {abi: stable, from: ...} instead"
        ),
        "CCACHE_DIR": ReservedEnv(_CCACHE_VAR),
        "CCACHE_COMPILERCHECK": ReservedEnv(_CCACHE_VAR),
        "CCACHE_BASEDIR": ReservedEnv(_CCACHE_VAR),
        "CCACHE_NOHASHDIR": ReservedEnv(_CCACHE_VAR),
        "CCACHE_IGNOREOPTIONS": ReservedEnv(_CCACHE_VAR),
        "CCACHE_REMOTE_STORAGE": ReservedEnv(_CCACHE_VAR),
        "CCACHE_STATSLOG": ReservedEnv(_CCACHE_VAR),
        "BUILDKIT_HIP_CCACHE": ReservedEnv(_CCACHE_VAR),
        "BUILDKIT_HIP_LAUNCHER": ReservedEnv(
            "rocm-buildkit routes HIP compiles through its launcher (a deterministic -cuid per compile)"
        ),
        "BUILDKIT_HOST_ISA_LOG": ReservedEnv(
            "rocm-buildkit's launcher logs each compile's ISA flags there, for the manifest's host_isa"
        ),
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


def _cibw_hint(name: str) -> str:
    """Where a cibuildwheel option's job is done in a recipe."""
    key = _CIBW_KEYS.get(name.removesuffix("_LINUX") if name not in _CIBW_KEYS else name)
    base = "cibuildwheel reads its options on the host, so in env it would only be an inert variable"
    return (
        f"{base}; use the recipe's {key}"
        if key
        else f"{base}; rocm-buildkit renders cibuildwheel's options from the recipe"
    )


#: what the resolved arch list is exported to without ``archs.export`` (or when ``archs`` failed)
DEFAULT_EXPORT: tuple[tuple[str, str], ...] = tuple((name, ARCH_VARIABLES[name]) for name in ALWAYS_EXPORTED)


def check_env_name(
    name: str, value: str | None, at: JsonPath, err: ErrorAt, exported: tuple[tuple[str, str], ...] = ()
) -> None:
    """Refuse a cibuildwheel option, an arch variable and a variable of :data:`RESERVED_ENV` (each
    message says why); ``value`` None: a matrix axis, whose values vary, so even a fixed one is refused.
    """
    if name.startswith("CIBW_"):
        raise err(
            f"{'.'.join(str(p) for p in at)}: {name} is a cibuildwheel option, not a build variable",
            at,
            key=True,
            hint=_cibw_hint(name),
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
