"""Image profiles as data: ``profiles.toml`` beside the Dockerfiles (found by :func:`docker_dir`).

Each ``[profiles.NAME]`` table is one :class:`Profile`; the fields and their meaning are listed at
the top of the file itself. :func:`load_profiles` validates what it reads: a file that is not TOML,
an unknown field (with "did you mean"), a field of the wrong type, a missing ``dockerfile`` or a
name Docker cannot use as a repository is a :class:`~buildkit.errors.UsageError` naming
``file:line`` (the line of the field, else of its table, when it can be found).
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import shlex
import sys
import sysconfig
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from buildkit.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PROFILES_FILE = "profiles.toml"
REPOSITORY_PREFIX = "rocm-buildkit/"

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")  # a Docker repository path component
_AT_LINE = re.compile(r"\(at line (\d+), column (\d+)\)")


@dataclass(frozen=True)
class Profile:
    """A builder image recipe: a Dockerfile and the files its build context needs."""

    name: str
    dockerfile: str
    context_files: tuple[str, ...] = ()
    wheel_requirements: tuple[str, ...] = ()
    wheel_python: str = "3.13"
    build_args: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    #: the ROCm releases this image can provide: None = any (chosen by build args), else fixed
    rocm_releases: tuple[str, ...] | None = None
    #: the build argument naming the ROCm release (images that install AMD's packages)
    rocm_build_arg: str | None = None
    #: how a recipe's ``image.packages`` are installed in a layer over the image: "apt" or "dnf";
    #: None: the profile takes no extra packages
    package_manager: str | None = None
    #: "builder" (cibuildwheel builds in it) or "runtime" (smoke tests run in it)
    role: str = "builder"
    #: where the image's ROCm is installed (ROCM_PATH of a build): "/usr" for Debian's packaging;
    #: None: :data:`DEFAULT_ROCM_PREFIX`, AMD's layout (:attr:`rocm_path`)
    rocm_prefix: str | None = None
    #: the CPython versions the image provides ("3.13"); None: not declared
    pythons: tuple[str, ...] | None = None
    #: the glibc of the image's distribution ("2.43"): what a build without a sysroot links against
    glibc: str | None = None
    #: per ROCm release of ``rocm_releases``: its build arguments and distribution toolchain
    releases: Mapping[str, _ProfileRelease] = field(default_factory=dict)
    #: the compatibility sysroots the image carries, by name (``manylinux.sysroot`` of a recipe)
    sysroots: Mapping[str, _Sysroot] = field(default_factory=dict)
    #: the folder of links to the image's ROCm libraries alone (docker/rocm-lib-links.sh makes it): the
    #: one library folder of the image a build against a sysroot links with (hipcc's ``-L``);
    #: required with ``sysroots``, None without
    rocm_lib_links: str | None = None
    #: where ccache masquerades as the compilers (buildkit/building/ccache.py): a key of :data:`CACHE_LAYOUTS`
    cache_layout: str | None = None
    #: how the compiler cache reaches hipcc's clang, one of the layout's routes (:data:`CACHE_LAYOUTS`);
    #: None: the layout's usual one (its first)
    cache_hip: str | None = None

    @property
    def repository(self) -> str:
        return REPOSITORY_PREFIX + self.name

    @property
    def rocm_path(self) -> str:
        """Where the image has ROCm: its ``rocm_prefix``, else AMD's ``/opt/rocm``."""
        return self.rocm_prefix or DEFAULT_ROCM_PREFIX

    @property
    def cache_route(self) -> str | None:
        """How the compiler cache reaches hipcc's clang here (``cache_hip``, else the layout's usual
        route); None without a ``cache_layout``."""
        if self.cache_layout is None:
            return None
        return self.cache_hip or CACHE_LAYOUTS[self.cache_layout][0]

    def release_build_args(self, rocm: str) -> dict[str, str]:
        """The build arguments that make this profile's image carry ROCm ``rocm`` ({} if none)."""
        release = self.releases.get(rocm)
        return dict(release.build_args) if release is not None else {}

    def toolchain_of(self, rocm: str) -> str | None:
        """The distribution toolchain (``buildkit/rocm/toolchains.yaml``) of ROCm ``rocm`` here."""
        release = self.releases.get(rocm)
        return release.toolchain if release is not None else None


@dataclass(frozen=True)
class _ProfileRelease:
    """One ROCm release of a profile that provides several (``[profiles.NAME.releases."7.2"]``)."""

    rocm: str
    build_args: Mapping[str, str] = field(default_factory=dict)
    toolchain: str | None = None


@dataclass(frozen=True)
class _Sysroot:
    """A compatibility sysroot an image carries (``[profiles.NAME.sysroots."glibc2.31"]``): host code
    compiled against an older glibc and libstdc++ than the image's own."""

    name: str
    path: str  # in the image
    gcc_install_dir: str  # clang's --gcc-install-dir: the GCC whose libstdc++ and crt files are used
    glibc: str  # "2.31"
    policy: str  # the manylinux policy its glibc defines: manylinux_2_31
    source: str = ""

    @property
    def bin_dir(self) -> str:
        """The compiler wrappers (cc, c++, gcc, g++, clang, clang++) that compile against it."""
        return f"{self.path}/bin"

    @property
    def toolchain_file(self) -> str:
        return f"{self.path}/toolchain.cmake"


# field -> its kind in the file: "str", "list" (of strings) or "table" (of strings)
_FIELDS: dict[str, str] = {
    "dockerfile": "str",
    "context_files": "list",
    "wheel_requirements": "list",
    "wheel_python": "str",
    "build_args": "table",
    "description": "str",
    "rocm_releases": "list",
    "rocm_build_arg": "str",
    "package_manager": "str",
    "role": "str",
    "rocm_prefix": "str",
    "pythons": "list",
    "glibc": "str",
    "releases": "tables",
    "sysroots": "tables",
    "cache_layout": "str",
    "cache_hip": "str",
    "rocm_lib_links": "str",
}
_PACKAGE_MANAGERS = ("apt", "dnf")
_ROLES = ("builder", "runtime")
#: AMD's layout: where ROCm is in an image whose profile does not say (``rocm_prefix``)
DEFAULT_ROCM_PREFIX = "/opt/rocm"
#: the compiler-cache layouts a profile may name (``cache_layout``), each with the routes to hipcc's
#: clang it supports (``cache_hip``; the first is the usual one; their meaning: the header of
#: ``docker/profiles.toml``): buildkit/building/ccache.py has one
#: :class:`~buildkit.building.ccache.Layout` per pair (a test keeps the two in step)
CACHE_LAYOUTS: Mapping[str, tuple[str, ...]] = {
    "debian": ("launcher", "build-wrappers"),
    "el": ("image-wrappers",),
}
#: the fields of one ``releases`` / ``sysroots`` entry, and their kinds
_RELEASE_FIELDS: dict[str, str] = {"build_args": "table", "toolchain": "str"}
_SYSROOT_FIELDS: dict[str, str] = {
    "path": "str",
    "gcc_install_dir": "str",
    "glibc": "str",
    "policy": "str",
    "source": "str",
}
_SYSROOT_REQUIRED = ("path", "gcc_install_dir", "glibc", "policy")
_KIND_TEXT = {
    "str": "a string",
    "list": "a list of strings",
    "table": "a table of strings",
    "tables": "a table of tables",
}


class _Locator:
    """Lines of ``[profiles.NAME]`` headers and of the fields under them (a line-based scan: enough
    for the flat tables of this file)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def table(self, name: str) -> int | None:
        spellings = {f"profiles.{name}", f'profiles."{name}"', f"profiles.'{name}'"}
        for number, line in enumerate(self.lines, 1):
            stripped = line.strip()
            if stripped.startswith("[") and stripped.strip("[] \t").replace(" ", "") in spellings:
                return number
        return None

    def key(self, name: str, key: str) -> int | None:
        start = self.table(name)
        if start is None:
            return None
        pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
        for number in range(start + 1, len(self.lines) + 1):
            line = self.lines[number - 1]
            if line.strip().startswith("["):
                break
            if pattern.match(line):
                return number
        return start


def _fail(path: Path, line: int | None, message: str) -> UsageError:
    where = f"{path}:{line}" if line is not None else str(path)
    return UsageError(f"{where}: {message}")


def _check_kind(value: Any, kind: str) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "list":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "tables":
        return isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _profile(path: Path, where: _Locator, name: str, raw: Any) -> Profile:
    _check_fields(path, where, name, raw)
    releases = raw.get("rocm_releases")
    manager = _one_of(path, where, name, "package_manager", raw.get("package_manager"), _PACKAGE_MANAGERS)
    role = _one_of(path, where, name, "role", raw.get("role", "builder"), _ROLES)
    layout = _one_of(path, where, name, "cache_layout", raw.get("cache_layout"), tuple(CACHE_LAYOUTS))
    route = raw.get("cache_hip")
    if route is not None and layout is None:
        raise _fail(path, where.key(name, "cache_hip"), f"profile {name}: cache_hip needs a cache_layout")
    if layout is not None:
        _one_of(path, where, name, "cache_hip", route, CACHE_LAYOUTS[layout], of=f" of cache_layout {layout}")
    entries = _entries(path, where, name, raw)
    return Profile(
        name=name,
        dockerfile=raw["dockerfile"],
        context_files=tuple(raw.get("context_files", ())),
        wheel_requirements=tuple(raw.get("wheel_requirements", ())),
        wheel_python=raw.get("wheel_python", "3.13"),
        build_args=dict(raw.get("build_args", {})),
        description=raw.get("description", ""),
        rocm_releases=tuple(releases) if releases is not None else None,
        rocm_build_arg=raw.get("rocm_build_arg"),
        package_manager=manager,
        role=role,
        cache_layout=layout,
        cache_hip=route,
        rocm_prefix=raw.get("rocm_prefix"),
        pythons=tuple(raw["pythons"]) if "pythons" in raw else None,
        glibc=raw.get("glibc"),
        releases={
            rel: _ProfileRelease(
                rocm=rel, build_args=dict(v.get("build_args", {})), toolchain=v.get("toolchain")
            )
            for rel, v in entries["releases"].items()
        },
        sysroots={sname: _Sysroot(name=sname, **v) for sname, v in entries["sysroots"].items()},
        rocm_lib_links=raw.get("rocm_lib_links"),
    )


def _check_fields(path: Path, where: _Locator, name: str, raw: Any) -> None:
    """``profiles.NAME`` is a table, NAME can name an image, every field is known and of its kind, and
    ``dockerfile`` is there."""
    if not isinstance(raw, dict):
        raise _fail(path, where.table(name), f"profiles.{name} must be a table")
    if not _NAME.match(name):
        raise _fail(
            path,
            where.table(name),
            f"profile name {name!r} cannot name an image (lowercase letters, digits, '.', '_', '-')",
        )
    for key, value in raw.items():
        kind = _FIELDS.get(key)
        if kind is None:
            close = difflib.get_close_matches(key, sorted(_FIELDS), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(sorted(_FIELDS))})"
            raise _fail(path, where.key(name, key), f"profile {name}: unknown field {key!r}{hint}")
        if not _check_kind(value, kind):
            raise _fail(path, where.key(name, key), f"profile {name}: {key} must be {_KIND_TEXT[kind]}")
    if "dockerfile" not in raw:
        raise _fail(path, where.table(name), f"profile {name}: dockerfile is required")


def _one_of(
    path: Path, where: _Locator, name: str, key: str, value: Any, choices: tuple[str, ...], of: str = ""
) -> Any:
    """``value``, the profile's ``key``, when it is None or one of ``choices``."""
    if value is not None and value not in choices:
        raise _fail(
            path,
            where.key(name, key),
            f"profile {name}: {key}{of} must be one of {', '.join(choices)}, not {value!r}",
        )
    return value


def _entries(
    path: Path, where: _Locator, name: str, raw: dict[str, Any]
) -> dict[str, dict[str, dict[str, Any]]]:
    """The profile's ``releases`` and ``sysroots`` entries, each field known and of its kind, each
    release one of ``rocm_releases``, each sysroot complete (and then ``rocm_lib_links`` given)."""
    entries: dict[str, dict[str, dict[str, Any]]] = {}
    for group, fields in (("releases", _RELEASE_FIELDS), ("sysroots", _SYSROOT_FIELDS)):
        entries[group] = {}
        for entry, values in raw.get(group, {}).items():
            for key, value in values.items():
                kind = fields.get(key)
                if kind is None:
                    raise _fail(
                        path,
                        where.table(name),
                        f"profile {name}: {group}.{entry}: unknown field {key!r} "
                        f"(known: {', '.join(sorted(fields))})",
                    )
                if not _check_kind(value, kind):
                    raise _fail(
                        path,
                        where.table(name),
                        f"profile {name}: {group}.{entry}.{key} must be {_KIND_TEXT[kind]}",
                    )
            entries[group][entry] = values
    releases = raw.get("rocm_releases")
    for rel in entries["releases"]:
        if releases is None or rel not in releases:
            raise _fail(
                path,
                where.table(name),
                f"profile {name}: releases.{rel} names a ROCm release not in rocm_releases",
            )
    for sysroot, values in entries["sysroots"].items():
        missing = [k for k in _SYSROOT_REQUIRED if k not in values]
        if missing:
            raise _fail(
                path, where.table(name), f"profile {name}: sysroots.{sysroot} needs {', '.join(missing)}"
            )
    if entries["sysroots"] and "rocm_lib_links" not in raw:
        raise _fail(
            path,
            where.table(name),
            f"profile {name}: sysroots need rocm_lib_links (the folder of links to the image's ROCm "
            "libraries a sysroot build links with)",
        )
    return entries


def parse_profiles(text: str, path: Path) -> dict[str, Profile]:
    """The profiles of ``text`` (the contents of ``path``), validated (see the module docstring)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = _AT_LINE.search(str(exc))
        detail = _AT_LINE.sub("", str(exc)).strip()
        raise _fail(path, int(m.group(1)) if m else None, f"not valid TOML: {detail}") from None
    unknown = sorted(set(data) - {"profiles"})
    if unknown:
        raise _fail(
            path, None, f"unknown top-level key {unknown[0]!r}: the file holds [profiles.NAME] tables"
        )
    profiles = data.get("profiles")
    if not isinstance(profiles, dict) or not profiles:
        raise _fail(path, None, "no [profiles.NAME] table")
    where = _Locator(text)
    return {name: _profile(path, where, name, raw) for name, raw in profiles.items()}


def load_profiles(path: Path) -> dict[str, Profile]:
    """The profiles of the file at ``path`` (UsageError when it cannot be read or is malformed)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the image profiles: {exc}") from None
    return parse_profiles(text, path)


@functools.cache
def _read_profiles(path: str, mtime_ns: int, size: int) -> dict[str, Profile]:
    return load_profiles(Path(path))


def _profiles_at(path: Path) -> dict[str, Profile]:
    """The profiles of the file ``path``, read again only when it changed."""
    st = path.stat()
    return _read_profiles(str(path), st.st_mtime_ns, st.st_size)


class _Profiles(Mapping[str, Profile]):
    """The profiles of ``profiles.toml`` in :func:`docker_dir`, read when first needed."""

    def _current(self) -> dict[str, Profile]:
        return _profiles_at(docker_dir() / PROFILES_FILE)

    def __getitem__(self, name: str) -> Profile:
        return self._current()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())


#: name -> :class:`Profile`, from ``profiles.toml`` beside the Dockerfiles
PROFILES: Mapping[str, Profile] = _Profiles()


def builder_names() -> tuple[str, ...]:
    """The names a recipe's ``image`` may give: the builder profiles, grouped by distribution (their
    package manager: Debian's apt, then EL's dnf, then none), each group in the file's order."""
    rank = {manager: i for i, manager in enumerate(_PACKAGE_MANAGERS)}
    builders = [p for p in PROFILES.values() if p.role == "builder"]
    ordered = sorted(builders, key=lambda p: rank.get(p.package_manager or "", len(rank)))
    return tuple(p.name for p in ordered)


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise UsageError(f"unknown image profile {name!r}; known profiles: {known}") from None


def docker_dir() -> Path:
    """The directory holding ``profiles.toml`` and the Dockerfiles it names: the first of
    ``$BUILDKIT_DOCKER_DIR``, ``docker/`` next to the package (a checkout or an editable install),
    ``<sys.prefix>/share/rocm-buildkit/docker`` (a wheel install: pyproject ships ``docker/*`` there)."""
    candidates: list[Path] = []
    override = os.environ.get("BUILDKIT_DOCKER_DIR")
    if override:
        candidates.append(Path(override))
    candidates.append(Path(__file__).resolve().parents[1] / "docker")
    candidates.append(Path(sysconfig.get_path("data")) / "share" / "rocm-buildkit" / "docker")
    for candidate in candidates:
        if not (candidate / PROFILES_FILE).is_file():
            continue
        profiles = _profiles_at(candidate / PROFILES_FILE)
        if all((candidate / p.dockerfile).is_file() for p in profiles.values()):
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise UsageError(
        f"cannot find the builder Dockerfiles and their {PROFILES_FILE} (tried {tried}); "
        "set BUILDKIT_DOCKER_DIR"
    )


_ARG = re.compile(r"^\s*ARG\s+(.+)$", re.IGNORECASE | re.MULTILINE)


def declared_build_args(dockerfile_text: str) -> tuple[str, ...]:
    """The build arguments a Dockerfile declares (``ARG NAME`` / ``ARG NAME=default``, several per
    line allowed), in order: the only ones a build can pass it (Docker ignores the others with a
    warning, "build-args were not consumed")."""
    names: dict[str, None] = {}
    for match in _ARG.finditer(dockerfile_text.replace("\\\n", " ")):
        try:
            words = shlex.split(match.group(1), comments=True)
        except ValueError:  # an unbalanced quote: the first word still names the argument
            words = match.group(1).split()[:1]
        for word in words:
            name = word.split("=", 1)[0]
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                names[name] = None
    return tuple(names)


def profile_build_args(profile: Profile) -> tuple[str, ...]:
    """The build arguments ``profile``'s Dockerfile declares."""
    return declared_build_args((docker_dir() / profile.dockerfile).read_text(encoding="utf-8"))
