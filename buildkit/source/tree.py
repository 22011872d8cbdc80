"""The recipe's downloaded source (``sdist`` or ``url``) as a local folder: :func:`unpacked_source`.

Fetched (or taken from the cache) by :mod:`buildkit.source.fetch`, unpacked by
:func:`buildkit.source.unpack.unpack` into a fresh folder, ``subdirectory`` applied. What the recipe
must fix is a :class:`~buildkit.errors.RecipeError` at its position: a hash mismatch at
``source.sha256``, a release that does not exist, an archive that is too large or refused as unsafe
at ``source.sdist``/``source.url``, a subdirectory the archive lacks at ``source.subdirectory``.
What the network or the host got wrong is a :class:`~buildkit.errors.BuildFailed`.
"""

from __future__ import annotations

from pathlib import Path

from buildkit.errors import BuildFailed
from buildkit.recipe import Recipe
from buildkit.source.fetch import (
    Echo,
    FetchFailed,
    HashMismatch,
    SourceRefused,
    fetch_sdist,
    fetch_url,
    redact,
)
from buildkit.source.unpack import UnsafeArchive, unpack


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
    except OSError as exc:  # the cache folder: permissions, a full disk
        raise BuildFailed(f"cannot fetch {what} into the source cache: {exc}") from None


def unpacked_source(recipe: Recipe, into: Path, echo: Echo | None = None) -> Path:
    """The recipe's ``sdist``/``url`` source unpacked into ``into/source`` (a fresh folder), with
    ``subdirectory`` applied: the folder holding pyproject.toml or setup.py."""
    archive = fetch_archive(recipe, echo)
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
