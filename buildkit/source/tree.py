"""The recipe's downloaded source (``sdist`` or ``url``) as a local folder: :func:`unpacked_source`.

What the recipe must fix is a :class:`~buildkit.errors.RecipeError` at its position (``source.sha256``,
``source.sdist``/``source.url``, ``source.subdirectory``). An index or URL that cannot be reached is
:class:`~buildkit.errors.IndexUnavailable` (exit 13, as from every command); what else the network
or the host got wrong is a :class:`~buildkit.errors.BuildFailed`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from buildkit.errors import BuildFailed, IndexUnavailable
from buildkit.fsutil import atomic_write, cache_home
from buildkit.pyindex import redact
from buildkit.recipe import Recipe
from buildkit.source import project as source_project
from buildkit.source import version as source_version
from buildkit.source.fetch import (
    Echo,
    FetchFailed,
    HashMismatch,
    SourceRefused,
    fetch_sdist,
    fetch_url,
)
from buildkit.source.project import cibuildwheel_table
from buildkit.source.unpack import UnsafeArchive, unpack
from buildkit.source.version import VersionDecision, decide_version


def fetch_archive(recipe: Recipe, echo: Echo | None = None) -> Path:
    """The verified archive of the recipe's ``sdist`` or ``url`` source (cached)."""
    src = recipe.source
    assert src.sha256 is not None and src.downloaded
    what = f"the sdist {src.sdist}" if src.sdist is not None else redact(src.url or "")
    try:
        if src.sdist is not None:
            return fetch_sdist(src.sdist, src.sha256, echo)
        assert src.url is not None
        return fetch_url(src.url, src.sha256, echo)
    except HashMismatch as exc:
        raise recipe.error(f"source.sha256: {exc}", ("source", "sha256"), hint=exc.hint) from None
    except SourceRefused as exc:
        raise recipe.error(f"source.{src.kind}: {exc}", src.at, hint=exc.hint) from None
    except FetchFailed as exc:
        raise BuildFailed(f"cannot fetch {what}: {exc}") from None
    except IndexUnavailable as exc:  # exit 13, as every command gives it for an index it cannot reach
        raise IndexUnavailable(f"cannot fetch {what}: {exc}", url=exc.url, reason=exc.reason) from None
    except OSError as exc:  # the cache folder: permissions, a full disk
        raise BuildFailed(f"cannot fetch {what} into the source cache: {exc}") from None


def unpacked_source(recipe: Recipe, into: Path, echo: Echo | None = None) -> Path:
    """The recipe's ``sdist``/``url`` source unpacked into ``into/source`` (a fresh folder), with
    ``subdirectory`` applied: the folder holding pyproject.toml or setup.py."""
    return _unpack(recipe, fetch_archive(recipe, echo), into)


def _unpack(recipe: Recipe, archive: Path, into: Path) -> Path:
    dest = into / "source"
    try:
        unpack(archive, dest)
    except UnsafeArchive as exc:
        raise recipe.error(
            f"source.{recipe.source.kind}: {exc}",
            recipe.source.at,
            hint="the archive was refused as a whole and nothing of it was kept; build from a trusted "
            "archive of the release",
        ) from None
    except OSError as exc:
        raise BuildFailed(f"cannot unpack {archive.name} into {into}: {exc}") from None
    sub = recipe.source.subdirectory
    if not sub:
        return dest
    root = dest.resolve()
    src = (dest / sub).resolve()
    if not src.is_relative_to(root) or not src.is_dir():
        folders = sorted(p.name for p in dest.iterdir() if p.is_dir() and not p.is_symlink())
        shown = ", ".join(folders[:10]) + (", ..." if len(folders) > 10 else "") if folders else "none"
        raise recipe.error(
            f"source.subdirectory {sub!r} is not a folder inside {archive.name}",
            ("source", "subdirectory"),
            hint=f"its top-level folders (the archive's own top folder stripped): {shown}",
        )
    return src


#: the format of a cached source-facts file (bumped by hand when its fields change)
_FACTS_FORMAT = 1


@dataclass(frozen=True)
class SourceFacts:
    """What ``buildkit plan`` reads from a source tree: how it decides its version, and its
    ``[tool.cibuildwheel]`` table (the ``linux`` table kept inside it, as in pyproject.toml)."""

    version: VersionDecision
    cibuildwheel: dict[str, Any]


def read_facts(tree: Path) -> SourceFacts:
    """The facts of the source tree at ``tree`` (read, never run)."""
    return SourceFacts(decide_version(tree), cibuildwheel_table(tree))


def _readers_digest() -> str:
    """A digest of the code that reads the facts: a cached answer of other code is not used."""
    digest = hashlib.sha256(str(_FACTS_FORMAT).encode())
    for module in (source_version, source_project):
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()[:16]


def archive_facts(recipe: Recipe, echo: Echo | None = None) -> SourceFacts:
    """The facts of the recipe's ``sdist``/``url`` source, cached by the archive's sha256 (and the
    subdirectory) in ``$XDG_CACHE_HOME/rocm-buildkit/facts/``: the archive is unpacked only the first
    time (``plan`` on CuPy's sdist, 2,875 files: 3-4 s unpacking, then none). The archive is still
    fetched and hashed (:func:`fetch_archive`), so a wrong pin is refused as before."""
    src = recipe.source
    archive = fetch_archive(recipe, echo)
    assert src.sha256 is not None
    sub = hashlib.sha256((src.subdirectory or "").encode()).hexdigest()[:12]
    path = cache_home() / "facts" / f"{src.sha256}-{sub}-{_readers_digest()}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return SourceFacts(VersionDecision(**data["version"]), dict(data["cibuildwheel"]))
    except (OSError, ValueError, TypeError, KeyError):
        pass  # not cached yet, or unreadable: read the tree again
    with tempfile.TemporaryDirectory(prefix="buildkit-plan-source-") as tmp:
        facts = read_facts(_unpack(recipe, archive, Path(tmp)))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        document = {"version": dataclasses.asdict(facts.version), "cibuildwheel": facts.cibuildwheel}
        atomic_write(path, json.dumps(document, sort_keys=True, default=str))
    except OSError:
        pass  # a cache that cannot be written costs the next plan the unpacking, nothing else
    return facts
