"""The recipe's ``source:`` (the four forms: docs/REFERENCE.md, "A recipe").

:func:`_parse_source` adds what a schema cannot say: a PEP 440 version in the pin, no ``sha256`` on
a source that downloads nothing, and no ``version.from: git-tag`` for a source without tags.
Fetching is :mod:`buildkit.source`'s job; loading a recipe never touches the network.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from buildkit.recipe.section import Context, ErrorAt, Section
from buildkit.recipe.yamlspan import Path as JsonPath


@dataclass(frozen=True)
class Source:
    path: str | None = None  # relative to the recipe, as written
    git: str | None = None
    ref: str | None = None
    subdirectory: str | None = None
    sdist: str | None = None  # "name==version", as written
    url: str | None = None
    sha256: str | None = None  # lower-case hex, with sdist and url

    @property
    def kind(self) -> str:
        """``path``, ``git``, ``sdist`` or ``url``."""
        for kind in ("path", "git", "sdist", "url"):
            if getattr(self, kind) is not None:
                return kind
        raise AssertionError("a validated source has one of path, git, sdist, url")

    @property
    def downloaded(self) -> bool:
        """An archive fetched and unpacked (``sdist`` and ``url``)."""
        return self.sdist is not None or self.url is not None

    @property
    def at(self) -> JsonPath:
        """The JSON path of the key that names the source (``("source", "sdist")`` ...)."""
        return ("source", self.kind)

    def pin(self) -> tuple[NormalizedName, Version]:
        """An sdist source's (canonical name, version)."""
        assert self.sdist is not None
        name, _, version = self.sdist.partition("==")
        return canonicalize_name(name), Version(version)


def _parse_source(data: Mapping[str, Any], err: ErrorAt) -> Source:
    """The validated ``source`` of recipe ``data`` (which the schema has checked)."""
    src = data["source"]
    source = Source(
        path=src.get("path"),
        git=src.get("git"),
        ref=src.get("ref"),
        subdirectory=src.get("subdirectory"),
        sdist=src.get("sdist"),
        url=src.get("url"),
        sha256=src["sha256"].lower() if "sha256" in src else None,
    )
    if source.sha256 is not None and not source.downloaded:
        raise err(
            f"source.sha256 pins a downloaded archive, and a {source.kind} source downloads none",
            ("source", "sha256"),
            key=True,
            hint=f"remove sha256, or fetch a release instead of the {source.kind}: "
            'sdist: "name==version" or url: https://.../name-version.tar.gz',
        )
    if source.sdist is not None:
        name, _, version = source.sdist.partition("==")
        try:
            Version(version)
        except InvalidVersion:
            raise err(
                f"source.sdist: {version!r} is not a PEP 440 version",
                ("source", "sdist"),
                hint=f'pin one release as PyPI lists it, e.g. sdist: "{name}==1.2.3"',
            ) from None
    if data.get("version", {}).get("from") == "git-tag" and source.downloaded:
        what = "an sdist" if source.sdist else "an archive"
        example = f'"{source.pin()[1]}"' if source.sdist else '"1.2.3"'
        raise err(
            f"version.from: git-tag needs a git or path source; {what} has no tags",
            ("version", "from"),
            hint=f"write the release's version: version: {{base: {example}}}",
        )
    return source


def _parse(ctx: Context) -> Source:
    return _parse_source(ctx.data, ctx.err)


SECTION = Section("source", ("source", "version"), _parse, "source")
