"""``buildkit verify``'s rebuild as a library call: the recorded job expanded again from its recipe
(:func:`recorded_job`), rebuilt and compared (:mod:`buildkit.building.verify`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from buildkit.building import Echo
from buildkit.building.verify import (
    Recorded,
    VerifyResult,
    check_manifest,
    prepare_keep,
    read_manifest,
    read_recorded,
    rebuild,
)
from buildkit.errors import ArchError
from buildkit.manifest import manifest_path
from buildkit.plan.models import Job
from buildkit.recipe import Recipe, load_recipe
from buildkit.service.plan import plan_of


def recorded_job(recorded: Recorded) -> tuple[Recipe, Job]:
    """The recipe and the recorded job as it expands now: with the recipe's own archs first (no host
    variables), with the recorded arch list when they fail or differ from it."""
    recipe = load_recipe(recorded.recipe_path)
    archs = recorded.job.get("pytorch_rocm_arch")
    try:
        job = plan_of(recipe, env={}).job(recorded.job_id)
    except ArchError:
        job = plan_of(recipe, env={}, cli_archs=archs).job(recorded.job_id)
    if archs and job.archs.pytorch_rocm_arch() != archs:
        job = plan_of(recipe, env={}, cli_archs=archs).job(recorded.job_id)
    return recipe, job


def verify_rebuild(
    wheel: Path,
    *,
    recipe: Path | None = None,
    cwd: Path | None = None,
    use_cache: bool = False,
    keep: Path | None = None,
    wheelhouse: Path | None = None,
    echo: Echo = lambda _line: None,
    client: Any = None,
    verbose: bool = False,
) -> VerifyResult:
    """Rebuild the job recorded beside ``wheel`` and compare (:mod:`buildkit.building.verify`). A ``recipe``
    given is checked as every command checks one, after ``keep`` and the manifest, before its bytes are."""
    if recipe is not None:
        if keep is not None:
            prepare_keep(keep)
        check_manifest(read_manifest(wheel.absolute()), manifest_path(wheel.absolute()))
        load_recipe(recipe)
    recorded = read_recorded(wheel, recipe=recipe, cwd=cwd or Path.cwd(), keep=keep)
    the_recipe, job = recorded_job(recorded)
    return rebuild(
        recorded,
        the_recipe,
        job,
        use_cache=use_cache,
        keep=keep,
        wheelhouse=wheelhouse,
        echo=echo,
        client=client,
        verbose=verbose,
    )
