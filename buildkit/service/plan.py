"""A recipe's plan as every command makes it: the recipe loaded, expanded into jobs, with the runtime
images' ceilings read through the one reader a command injects (the plan stage never talks to a
Docker engine itself).

:func:`load_plan` is that sequence, written once: ``build``, ``plan``, ``check --recipe --job``,
``verify`` and ``publish --recipe`` all go through it (or :func:`plan_of`, for a recipe already
loaded), so that a job's ceilings are the same whichever command expands it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from buildkit.errors import RecipeError
from buildkit.plan.expansion import expand
from buildkit.plan.feasibility import partial_problems
from buildkit.plan.from_image import CeilingsReader
from buildkit.plan.models import Job, Plan
from buildkit.plan.source_version import with_source_version
from buildkit.recipe import PartialRecipe, Recipe, load_recipe


def image_ceilings(images: Sequence[str]) -> Mapping[str, str]:
    """The ceilings reader the commands inject (:func:`buildkit.image.ceilings.ceilings_from_images`:
    the runtime images' libraries, read in throwaway containers)."""
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


def command_plan(recipe_path: str | Path, *, cli_archs: str | None, echo: Callable[[str], None]) -> Plan:
    """``buildkit plan``'s plan: :func:`load_plan`, then the source's version rule against the plan's
    versions (an sdist/url source fetched and cached; ``echo`` shows what is fetched)."""
    return with_source_version(load_plan(recipe_path, cli_archs=cli_archs).plan, echo=echo)
