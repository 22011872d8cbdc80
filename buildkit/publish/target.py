"""Where ``publish`` puts wheels: a :class:`Target` parsed from ``--to`` (:func:`parse_target`) or a
recipe's ``publish`` section (:func:`target_of`); the kinds: :mod:`buildkit.publish.run`."""

from __future__ import annotations

import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from buildkit.errors import UsageError
from buildkit.publish.scrub import strip_userinfo
from buildkit.recipe import Recipe, load_recipe

PYPI_UPLOAD = "https://upload.pypi.org/legacy/"
_PYPI_HOSTS = {
    "upload.pypi.org": "https://pypi.org/simple/",
    "test.pypi.org": "https://test.pypi.org/simple/",
}


@dataclass(frozen=True)
class Target:
    kind: str  # "directory" | "index" | "pypi"
    location: str  # a directory path, or an upload URL (credentials stripped)
    simple_url: str | None = None  # where the index's PEP 503 pages are read (index / pypi)

    def describe(self) -> str:
        return f"{self.kind} {self.location}"


def parse_target(text: str, *, simple_url: str | None = None) -> Target:
    """``pypi``, an upload URL, ``file://DIR`` or a directory path -> :class:`Target`."""
    if text == "pypi":
        return Target("pypi", PYPI_UPLOAD, simple_url or _PYPI_HOSTS["upload.pypi.org"])
    parts = urllib.parse.urlsplit(text)
    if parts.scheme == "file":
        return Target("directory", _directory(text, urllib.request.url2pathname(parts.path)))
    if parts.scheme in ("http", "https"):
        if parts.username is not None or parts.password is not None:
            raise UsageError(
                f"--to {strip_userinfo(text)}: credentials in the URL are refused (they end up in shell "
                "history and logs); set TWINE_USERNAME/TWINE_PASSWORD or store them in the keyring"
            )
        host = parts.hostname or ""
        if host in _PYPI_HOSTS:
            return Target("pypi", text, simple_url or _PYPI_HOSTS[host])
        return Target("index", text, simple_url or f"{text.rstrip('/')}/simple/")
    if parts.scheme and len(parts.scheme) > 1:
        raise UsageError(
            f"--to {text!r}: unsupported scheme {parts.scheme!r} (use a path, file://, http(s)://)"
        )
    return Target("directory", _directory(text, text))


def recipe_target(recipe: str | Path) -> Target:
    """The :class:`Target` named by the ``publish`` section of the recipe at ``recipe``: a directory
    relative to the recipe's folder, ``pypi``, or an index URL (UsageError when it has no such section)."""
    return target_of(load_recipe(recipe))


def target_of(recipe: Recipe, *, simple_url: str | None = None) -> Target:
    """The :class:`Target` of a loaded recipe's ``publish`` section (see :func:`recipe_target`);
    ``simple_url`` overrides where an index's PEP 503 pages are read (a directory has none: UsageError)."""
    spec = recipe.publish
    if spec is None:
        raise UsageError(f"{recipe.display_path} has no publish section: pass --to")
    if spec.kind == "directory":
        if simple_url is not None:
            raise UsageError(
                f"--simple-url: {recipe.display_path} publishes to a directory, which has no simple pages"
            )
        return parse_target(str(Path(recipe.path).parent / spec.target))
    return parse_target("pypi" if spec.kind == "pypi" else spec.target, simple_url=simple_url)


def _directory(text: str, path: str) -> str:
    """The directory of a ``directory`` target; an empty one would silently mean the current directory."""
    if not path.strip():
        raise UsageError(
            f"--to {text!r}: empty directory path (give a directory, e.g. --to ./site/index or "
            "--to file:///srv/index)"
        )
    return path
