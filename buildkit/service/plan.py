"""A recipe's plan as every command makes it: the recipe loaded, expanded into jobs, with the runtime
images' ceilings read through the one reader a command injects (the plan stage never talks to a
Docker engine itself). :func:`load_plan` (or :func:`plan_of`) is that sequence, written once, so that
a job's ceilings are the same whichever command expands it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from buildkit import manifest
from buildkit.errors import RecipeError
from buildkit.plan.expansion import expand
from buildkit.plan.feasibility import partial_problems
from buildkit.plan.from_image import CeilingsReader
from buildkit.plan.models import Job, Plan
from buildkit.plan.source_version import with_source_version
from buildkit.recipe import PartialRecipe, Recipe, load_recipe


def image_ceilings(images: Sequence[str]) -> Mapping[str, str]:
    """The ceilings reader the commands inject (:func:`buildkit.image.ceilings.ceilings_from_images`)."""
    # deferred: the Docker SDK loads only for a recipe that names from_image images, so a plan
    # without them starts as fast as before (bench/plan_matrix.py)
    from buildkit.image.ceilings import ceilings_from_images

    return ceilings_from_images(images)


#: what a plan is given to read runtime images' ceilings: a reader, None (the caller knows no image is
#: read), or ``"images"``: :func:`image_ceilings`, looked up when the plan is made
_Reader = CeilingsReader | None | Literal["images"]


@dataclass(frozen=True)
class _LoadedPlan:
    recipe: Recipe
    plan: Plan

    def job(self, job_id: str) -> Job:
        """The job ``job_id`` (:class:`~buildkit.errors.UnknownJob` naming the known ones)."""
        return self.plan.job(job_id)


def plan_of(
    recipe: Recipe,
    *,
    cli_archs: str | None = None,
    env: Mapping[str, str] | None = None,
    ceilings_reader: _Reader = "images",
) -> Plan:
    """The plan of a loaded ``recipe`` (``env``: the environment ``archs: {from: env}`` reads, default
    ``os.environ``; ``ceilings_reader``: :data:`_Reader`)."""
    reader = image_ceilings if ceilings_reader == "images" else ceilings_reader
    return expand(recipe, env, cli_archs=cli_archs, ceilings_reader=reader)


def load_plan(
    recipe_path: str | Path,
    *,
    cli_archs: str | None = None,
    env: Mapping[str, str] | None = None,
    ceilings_reader: _Reader = "images",
) -> _LoadedPlan:
    """The recipe at ``recipe_path`` (a :class:`~buildkit.errors.RecipeError` at ``file:line:col``)
    and its plan (:func:`plan_of`). A recipe that fails to load gets the plan's own checks on what of it
    did load too (its ROCm releases, what its image provides): every mistake in one run."""
    try:
        recipe = load_recipe(recipe_path)
    except RecipeError as exc:
        if not isinstance(exc.partial, PartialRecipe):
            raise
        more = partial_problems(exc.partial)
        if not more:
            raise
        raise RecipeError.combine([exc, *more]) from None
    return _LoadedPlan(recipe, plan_of(recipe, cli_archs=cli_archs, env=env, ceilings_reader=ceilings_reader))


def command_plan(
    recipe_path: str | Path, *, cli_archs: str | None, echo: Callable[[str], None], out: Path | None = None
) -> Plan:
    """``buildkit plan``'s plan: :func:`load_plan`, the source's version rule against the plan's versions
    (``echo`` shows what is fetched), and with ``out`` the :func:`stale_notes`."""
    the_plan = with_source_version(load_plan(recipe_path, cli_archs=cli_archs).plan, echo=echo)
    stale = stale_notes(the_plan.recipe, out) if out is not None else ()
    return dataclasses.replace(the_plan, notes=(*the_plan.notes, *stale)) if stale else the_plan


# --------------------------------------------------------------------------- stale wheels
def _recorded_recipe(wheel: Path) -> Mapping[str, Any] | None:
    try:
        data = manifest.read(wheel)
    except (OSError, ValueError):
        return None
    recipe = data.get("recipe") if isinstance(data, dict) else None
    return recipe if isinstance(recipe, dict) else None


def stale_notes(recipe: Recipe, out: Path) -> tuple[str, ...]:
    """One note per set of changed keys, naming the wheels under ``out`` that an edit of ``recipe`` made
    stale: ``buildkit plan``'s note. A wheel of the recipe's project whose manifest's ``build_sha256``
    is not the recipe's now is stale (``publish --recipe`` refuses it until ``build`` makes it again); the
    note names the changed ``build_keys`` (an older manifest records none: the note says so). Wheels in
    dot-folders and wheels without a readable manifest are not read."""
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
