"""The refusal rules of ``publish``: which wheels under DIST are candidates, and why one is refused.
:func:`check_all` refuses the whole batch for any one refusal.

A ``build --keep-refused DIR`` folder that lies in the publish tree has each of its wheels refused
by name, with the errors its ``<wheel>.refused.json`` records, whatever else lies beside it."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from buildkit import manifest
from buildkit.errors import PublishRefused, UsageError
from buildkit.publish.target import Target
from buildkit.recipe import Recipe
from buildkit.targets import known_processors
from buildkit.version import PYPI_LOCAL_REASON


@dataclass(frozen=True)
class Candidate:
    """A wheel whose manifest was read and whose sha256 was recomputed."""

    wheel: Path
    sha256: str
    manifest: Mapping[str, Any]


@dataclass(frozen=True)
class Refusal:
    wheel: Path
    reason: str


def collect(dist: Path, target: Target | None = None) -> list[Path]:
    """Every ``*.whl`` under ``dist`` (recursively, sorted), but under a dot-component below ``dist``
    (temporary files, ``build``'s staging and quarantine folders) or, with a ``directory`` target inside
    ``dist``, the index's own copies (they have no manifest beside them)."""
    if dist.is_file() and dist.suffix == ".whl":
        return [dist]
    if not dist.is_dir():
        raise UsageError(f"{dist}: no such directory")
    index = _index_inside(dist, target)
    return sorted(
        p
        for p in dist.rglob("*.whl")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(dist).parts)
        and not (index is not None and p.resolve().is_relative_to(index))
    )


def _index_inside(dist: Path, target: Target | None) -> Path | None:
    """The resolved root of a directory ``target`` that lies in ``dist`` (or is it), else None."""
    if target is None or target.kind != "directory":
        return None
    root = Path(target.location).resolve()
    return root if root.is_relative_to(dist.resolve()) else None


def examine(wheel: Path) -> Candidate | Refusal:
    """Read the manifest of ``wheel`` and recompute its sha256: a Candidate, or the Refusal's reason."""
    try:
        parse_wheel_filename(wheel.name)
    except InvalidWheelFilename as exc:
        return Refusal(wheel, f"not a valid wheel file name: {exc}")
    refused = _refused_by_build(wheel)
    if refused is not None:
        return refused
    path = manifest.manifest_path(wheel)
    if not path.is_file():
        return Refusal(wheel, f"no manifest ({path.name} missing): build and gate it with `buildkit build`")
    try:
        data = manifest.read(wheel)
    except (ValueError, OSError) as exc:
        return Refusal(wheel, f"manifest {path.name} is unreadable: {exc}")
    if not isinstance(data, dict) or data.get("schema") != manifest.SCHEMA:
        return Refusal(wheel, f"manifest {path.name} is not a {manifest.SCHEMA} document")
    verdict = data.get("verdict")
    if not isinstance(verdict, dict) or verdict.get("passed") is not True:
        errors = []
        if isinstance(verdict, dict):
            errors = [
                str(f.get("message", f))
                for f in verdict.get("findings", [])
                if isinstance(f, dict) and f.get("severity", "error") == "error" and not f.get("waived")
            ]
        detail = f": {'; '.join(errors[:3])}" if errors else ""
        return Refusal(wheel, f"the gate failed on this wheel (manifest verdict.passed is not true){detail}")
    recorded = data.get("wheel", {}).get("sha256") if isinstance(data.get("wheel"), dict) else None
    if not isinstance(recorded, str):
        return Refusal(wheel, f"manifest {path.name} names no wheel.sha256")
    named = data["wheel"].get("filename")
    if named is not None and named != wheel.name:
        return Refusal(wheel, f"manifest {path.name} is for another file ({named})")
    actual = manifest.sha256_file(wheel)
    if actual != recorded:
        return Refusal(
            wheel,
            f"sha256 mismatch: the wheel is {actual}, the manifest names {recorded} "
            "(the gate did not see these bytes)",
        )
    return Candidate(wheel, actual, data)


def _refused_by_build(wheel: Path) -> Refusal | None:
    """A Refusal when ``wheel`` is one ``buildkit build`` refused and kept apart (its
    ``<wheel>.refused.json`` lies beside it), naming the errors recorded there."""
    record = manifest.refused_path(wheel)
    if not record.is_file():
        return None
    errors: list[str] = []
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("errors"), list):
            errors = [str(e) for e in data["errors"]]
    except (OSError, ValueError):
        pass
    detail = f": {'; '.join(errors[:3])}" if errors else ""
    return Refusal(
        wheel,
        f"the gate refused this wheel in `buildkit build` ({record.name}{detail}); a refused wheel is "
        f"kept only to be examined and is never published: move {wheel.parent} out of the publish tree",
    )


def _refused_wheels(dist: Path) -> list[Path]:
    """The wheels ``build`` kept apart in ``dist``'s own quarantine (``dist/.refused/<job-id>/``)."""
    root = dist / manifest.REFUSED_DIR
    return sorted(p for p in root.glob("*/*.whl") if p.is_file()) if root.is_dir() else []


def _refuse_for_pypi(candidate: Candidate) -> Refusal | None:
    version = parse_wheel_filename(candidate.wheel.name)[1]
    if version.local is not None:
        return Refusal(candidate.wheel, f"local version label '+{version.local}': {PYPI_LOCAL_REASON}")
    return None


def project_of(wheel: Path) -> str:
    """The canonical (PEP 503) project name in a wheel's file name."""
    return canonicalize_name(parse_wheel_filename(wheel.name)[0])


def _device_wheel_of(project: str, recipe: Recipe) -> bool:
    """``project`` names a device wheel a ``wheel.split: per-target`` recipe's builds make
    (:func:`buildkit.split.metadata.device_distribution`, of a processor LLVM defines)."""
    if recipe.wheel.split != "per-target":
        return False
    prefix = canonicalize_name(recipe.name) + "-device-"
    target = project.removeprefix(prefix)
    return project.startswith(prefix) and target in known_processors()


def refuse_for_recipe(candidate: Candidate, recipe: Recipe) -> Refusal | None:
    """A Refusal when the manifest does not record ``recipe`` as the recipe the wheel was built from: its
    ``build_sha256`` (what can change a wheel or its gate: an edit of ``publish:`` or ``smoke:`` keeps the
    wheel the recipe's), or the file's sha256 in a manifest of an older build that records none. The message
    names both recipes (file, name, sha256)."""
    recorded = candidate.manifest.get("recipe")
    given = f"--recipe {recipe.display_path} ({recipe.name}, sha256 {recipe.sha256[:12]})"
    project = project_of(candidate.wheel)
    if not isinstance(recorded, dict) or not isinstance(recorded.get("sha256"), str):
        return Refusal(
            candidate.wheel,
            f"project {project}: the manifest records no recipe (recipe.sha256), so the wheel cannot be "
            f"tied to {given}; publish it with --to",
        )
    same = (
        recorded["build_sha256"] == recipe.build_sha256
        if isinstance(recorded.get("build_sha256"), str)
        else recorded["sha256"] == recipe.sha256
    )
    if same:
        if project != canonicalize_name(recipe.name) and not _device_wheel_of(project, recipe):
            return Refusal(
                candidate.wheel,
                f"project {project} is not the distribution {given} names "
                f"({canonicalize_name(recipe.name)}): the recipe's name is its wheels' distribution name",
            )
        return None
    built = (
        f"recipe {recorded.get('file', '?')} ({recorded.get('name', '?')}, "
        f"sha256 {str(recorded['sha256'])[:12]})"
    )
    keys = recipe.changed_build_keys(recorded)
    changed = f" ({', '.join(keys)} changed)" if keys else ""
    return Refusal(
        candidate.wheel,
        f"project {project} was built from {built}, not from {given}{changed}: publish it with the recipe "
        "it was built from (or rebuild it, if this recipe was edited since outside publish: and smoke:)",
    )


def check_all(
    wheels: list[Path],
    target: Target,
    recipe: Recipe | None = None,
    *,
    dist: Path | None = None,
    verify: Callable[[list[Candidate]], list[Refusal]] | None = None,
) -> list[Candidate]:
    """Examine every wheel (and, with ``recipe``, that it was built from that recipe file); any
    refusal raises one PublishRefused listing them all. ``dist``: the tree they were collected
    from, whose refused wheels an empty batch names. ``verify``: the refusals among the wheels that
    passed every other check (``publish`` runs the gate again there: :mod:`buildkit.publish.trust`)."""
    if not wheels:
        kept = _refused_wheels(dist) if dist is not None and dist.is_dir() else []
        note = (
            f"; {len(kept)} wheel(s) the gate refused are kept in {dist / manifest.REFUSED_DIR}, never "
            f"published (examine one with `buildkit check`, see its .refused.json)"
            if kept and dist is not None
            else ""
        )
        raise PublishRefused(f"no wheels to publish (no *.whl found){note}")
    candidates: list[Candidate] = []
    refusals: list[Refusal] = []
    for wheel in wheels:
        result = examine(wheel)
        if isinstance(result, Candidate) and recipe is not None:
            result = refuse_for_recipe(result, recipe) or result
        if isinstance(result, Candidate) and target.kind == "pypi":
            result = _refuse_for_pypi(result) or result
        if isinstance(result, Candidate):
            candidates.append(result)
        else:
            refusals.append(result)
    if verify is not None and candidates:
        later = verify(candidates)
        refused = {r.wheel for r in later}
        candidates = [c for c in candidates if c.wheel not in refused]
        refusals += later
    if refusals:
        refusals.sort(key=lambda r: wheels.index(r.wheel) if r.wheel in wheels else len(wheels))
        lines = [f"publish refused: {len(refusals)} of {len(wheels)} wheel(s); nothing was published"]
        lines += [f"  {r.wheel}: {r.reason}" for r in refusals]
        raise PublishRefused("\n".join(lines), refusals=[(str(r.wheel), r.reason) for r in refusals])
    return candidates
