"""Wheels a recipe edit made stale: ``buildkit plan``'s note on the build's output folder.

A wheel's manifest records the recipe it was built from (:meth:`buildkit.recipe.Recipe.record`): its
``build_sha256`` (what can change a wheel or its gate: the recipe less ``publish:`` and ``smoke:``) and, per
top-level key, the digest of its value (``build_keys``). A wheel of this recipe's project whose
``build_sha256`` is not the recipe's now was built from an earlier version of it: ``publish --recipe``
refuses it until ``build`` makes it again. The note names the wheels and the keys that changed (the digests
compared key by key; a manifest of an older build records none, and the note says so). An edit of
``publish:`` or ``smoke:`` alone changes no ``build_sha256``: no note. Wheels in dot-folders (the gate's
quarantine ``.refused/``) and wheels without a readable manifest are not read."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from buildkit import manifest
from buildkit.recipe import Recipe


def _recorded_recipe(wheel: Path) -> Mapping[str, Any] | None:
    try:
        data = manifest.read(wheel)
    except (OSError, ValueError):
        return None
    recipe = data.get("recipe") if isinstance(data, dict) else None
    return recipe if isinstance(recipe, dict) else None


def stale_notes(recipe: Recipe, out: Path) -> tuple[str, ...]:
    """One note per set of changed keys, naming the wheels under ``out`` built from an earlier version of
    ``recipe`` (its project's wheels whose manifest's ``build_sha256`` is not the recipe's)."""
    if not out.is_dir():
        return ()
    groups: dict[tuple[str, ...] | None, list[str]] = {}
    for wheel in sorted(out.rglob("*.whl")):
        if any(part.startswith(".") for part in wheel.relative_to(out).parts[:-1]):
            continue
        recorded = _recorded_recipe(wheel)
        if recorded is None or recorded.get("name") != recipe.name:
            continue
        built = recorded.get("build_sha256")
        if not isinstance(built, str) or built == recipe.build_sha256:
            continue  # an older manifest without the digest: publish --recipe compares the file's sha256
        groups.setdefault(recipe.changed_build_keys(recorded), []).append(str(out / wheel.relative_to(out)))
    notes = []
    for keys, wheels in groups.items():
        if keys is None:
            what = "what can change a wheel changed (the manifest of this older build names no keys)"
        else:
            what = f"{', '.join(keys) or 'what can change a wheel'} changed"
        notes.append(
            f"{', '.join(wheels)} {'was' if len(wheels) == 1 else 'were'} built "
            f"from an earlier version of {recipe.path.name}: {what}; `buildkit build` makes "
            f"{'it' if len(wheels) == 1 else 'them'} again (publish --recipe refuses a stale wheel)"
        )
    return tuple(notes)
