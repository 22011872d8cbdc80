"""How each ROCm release is installed on EL8 (the manylinux_2_28 base), as data: ``install.yaml`` (its
rows, sources and AMD's repository layouts: docs/PRODUCTION_BUILDER.md). This module renders the
repository URLs (directories without a trailing ``.0``), the yum repository file and the package
list, passed to the Dockerfile as build arguments (:func:`buildkit.image.rocm_build_args`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from buildkit.rocm import UnknownRelease, _load, get_release, version_key

__all__ = [
    "El8Install",
    "PackageSet",
    "PublishedVersion",
    "el8_install",
    "el8_installs",
    "gpg_key",
    "package_sets",
    "published_names",
    "published_runtime",
    "published_versions",
    "repo_directory",
    "runtime_package",
]

#: the package sets every image installs, in this order (install.yaml ``package_sets``)
_DEFAULT_SETS = ("compiler", "torch", "libraries")
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)*$")


@dataclass(frozen=True)
class PackageSet:
    name: str
    packages: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class PublishedVersion:
    """A package version of a ROCm release as a source saw it (install.yaml ``published.versions``)."""

    package: str
    release: str  # the patch release the file belongs to: "7.2.3"
    file: str  # the package file name (or install spec) it was read from
    source: str
    version: str | None = None


@dataclass(frozen=True)
class El8Install:
    """ROCm ``rocm`` (a release of releases.yaml) as the manylinux_2_28 image installs it."""

    rocm: str
    version: str  # the patch release installed: "7.1.1"
    graphics_version: str  # the graphics (6.x: amdgpu) repository's release: usually ``version``
    layout: str
    rocm_repo: str
    graphics_repo: str
    gpg_key: str
    source: str
    directory_source: str
    unverified: str | None = None

    def packages(self, sets: Sequence[str] = _DEFAULT_SETS, extra: Iterable[str] = ()) -> tuple[str, ...]:
        """The RPMs to install: the named sets in order, then ``extra``; each name once."""
        known = package_sets()
        names: dict[str, None] = {}
        for name in sets:
            if name not in known:
                raise UnknownRelease(f"unknown package set {name!r} (known: {', '.join(known)})")
            names.update(dict.fromkeys(known[name].packages))
        names.update(dict.fromkeys(extra))
        return tuple(names)

    def repo_file(self) -> str:
        """``/etc/yum.repos.d/rocm.repo`` for this release (what the Dockerfile writes from the same
        build arguments)."""
        return (
            f"[rocm]\nname=ROCm {self.version}\nbaseurl={self.rocm_repo}\nenabled=1\npriority=50\n"
            f"gpgcheck=1\ngpgkey={self.gpg_key}\n\n"
            f"[amdgraphics]\nname=AMD graphics for ROCm {self.version} (not needed to compile)\n"
            f"baseurl={self.graphics_repo}\nenabled=1\npriority=50\nskip_if_unavailable=1\n"
            f"gpgcheck=1\ngpgkey={self.gpg_key}\n"
        )

    def to_json(self) -> dict[str, Any]:
        # hand-written, no JsonShape (buildkit/records.py): packages() is computed
        return {
            "rocm": self.rocm,
            "version": self.version,
            "graphics_version": self.graphics_version,
            "layout": self.layout,
            "rocm_repo": self.rocm_repo,
            "graphics_repo": self.graphics_repo,
            "gpg_key": self.gpg_key,
            "packages": list(self.packages()),
            "source": self.source,
            "directory_source": self.directory_source,
            "unverified": self.unverified,
        }


def repo_directory(version: str) -> str:
    """The directory name AMD gives release ``version`` on repo.radeon.com: no trailing ``.0``
    (``7.1.0`` -> ``7.1``, ``7.0.2`` -> ``7.0.2``, ``6.4.0`` -> ``6.4``)."""
    if not _VERSION.match(version):
        raise ValueError(f"{version!r} is not a release version such as 7.1.1")
    parts = version.split(".")
    while len(parts) > 2 and parts[-1] == "0":
        parts.pop()
    return ".".join(parts)


@functools.cache
def _data() -> Mapping[str, Any]:
    data: Mapping[str, Any] = _load("install.yaml")
    return data


@functools.cache
def package_sets() -> dict[str, PackageSet]:
    sets: dict[str, PackageSet] = {}
    for name, body in _data()["package_sets"].items():
        if not body.get("source"):
            raise ValueError(f"install.yaml package set {name}: missing source")
        sets[str(name)] = PackageSet(str(name), tuple(str(p) for p in body["packages"]), str(body["source"]))
    return sets


def gpg_key() -> str:
    return str(_data()["gpg_key"]["url"])


def _install(row: Mapping[str, Any]) -> El8Install:
    rocm = str(row["rocm"])
    release = get_release(rocm)
    version = str(row["install"])
    if ".".join(version.split(".")[:2]) != release.version:
        raise ValueError(f"install.yaml {rocm}: install {version} is not a {release.version} release")
    if version not in release.patches:
        raise ValueError(f"install.yaml {rocm}: {version} is not among the patches of releases.yaml")
    layouts = _data()["layouts"]
    layout = str(row["layout"])
    if layout not in layouts:
        raise ValueError(f"install.yaml {rocm}: unknown layout {layout!r}")
    for name in ("source", "directory_source"):
        if not row.get(name):
            raise ValueError(f"install.yaml {rocm}: missing {name}")
    graphics = str(row.get("graphics") or version)
    fill = {"rocm_dir": repo_directory(version), "graphics_dir": repo_directory(graphics)}
    return El8Install(
        rocm=release.version,
        version=version,
        graphics_version=graphics,
        layout=layout,
        rocm_repo=str(layouts[layout]["rocm"]).format(**fill),
        graphics_repo=str(layouts[layout]["graphics"]).format(**fill),
        gpg_key=gpg_key(),
        source=str(row["source"]),
        directory_source=str(row["directory_source"]),
        unverified=str(row["unverified"]).strip() if row.get("unverified") else None,
    )


@functools.cache
def _installs() -> tuple[El8Install, ...]:
    rows = tuple(_install(row) for row in _data()["el8"])
    return tuple(sorted(rows, key=lambda i: version_key(i.rocm)))


def el8_installs() -> list[El8Install]:
    """Every release the manylinux_2_28 image can install, oldest first."""
    return list(_installs())


def el8_install(rocm: str) -> El8Install:
    """How release ``rocm`` ("7.2", "7.2.2", "rocm7.2") is installed on EL8; :class:`UnknownRelease`
    for a release without an install row (its repositories are not in the data)."""
    release = get_release(rocm)
    for install in _installs():
        if install.rocm == release.version:
            return install
    known = ", ".join(i.rocm for i in _installs())
    raise UnknownRelease(
        f"no EL8 install data for ROCm {release.version} (the manylinux_2_28-rocm image installs {known}); "
        "add its repositories to buildkit/rocm/install.yaml"
    )


def published_names() -> tuple[str, ...]:
    """The package names AMD's package table writes (Ubuntu's ``-dev`` spelling; ``-devel`` on RPM
    systems), install.yaml ``published.names``."""
    return tuple(str(n) for n in _data()["published"]["names"])


def published_runtime() -> dict[str, str]:
    """Library name -> AMD's runtime package that ships it (install.yaml ``published.runtime``)."""
    return {str(k): str(v) for k, v in _data()["published"]["runtime"].items()}


def runtime_package(library: str) -> str | None:
    """AMD's runtime package that ships ``library`` (``libamdhip64`` -> ``hip-runtime-amd``), or None."""
    return published_runtime().get(library)


def published_versions(rocm: str) -> tuple[PublishedVersion, ...]:
    """The package versions of release ``rocm`` seen in stored sources (empty: none)."""
    rows = _data()["published"]["versions"].get(get_release(rocm).version) or ()
    return tuple(
        PublishedVersion(
            package=str(r["package"]),
            release=str(r["release"]),
            file=str(r["file"]),
            source=str(r["source"]),
            version=None if r.get("version") is None else str(r["version"]),
        )
        for r in rows
    )
