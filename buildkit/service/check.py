"""What ``buildkit check`` does, as library calls: its gate options and ``--recipe``/``--job`` -> a
:class:`~buildkit.gate.config.GateConfig`; then every wheel is inspected (streaming) and gated
(:func:`buildkit.build.wheel_gate.check_wheels`, the one way ``build``, ``check`` and ``publish`` gate
wheel files).

With ``recipe`` and ``job`` the configuration is the one ``build`` uses,
:meth:`GateConfig.from_recipe_job` (the job's policy, ceilings, exclude globs, archs, torch pin and
ROCm SONAMEs, the recipe's ``size_budget``, waivers and required members), and the options given
adjust it, each by its merge rule (replace, add, tighten: the table of
:mod:`buildkit.gate.options`, :func:`~buildkit.gate.options.apply_options`). Without a recipe the
options apply to the defaults by the same rules. RECORD hashes are verified by default, with or
without a recipe and job (what ``build`` does); ``--no-verify-record`` skips the hashing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from buildkit.errors import UsageError
from buildkit.gate.config import GateConfig
from buildkit.gate.options import GateFlags, apply_options

if TYPE_CHECKING:
    from buildkit.plan.from_image import CeilingsReader
    from buildkit.plan.models import Job
    from buildkit.recipe import Recipe


def find_job(
    recipe_path: Path, job_id: str, ceilings_reader: CeilingsReader | None = None
) -> tuple[Recipe, Job]:
    """The recipe at ``recipe_path`` and the job ``job_id`` of its plan (UnknownJob naming the known
    ones). ``ceilings_reader``: what ``build`` expands with, so that the job's ceilings are the ones its
    build was gated with (the command injects it: the gate never talks to a Docker engine itself)."""
    # only with --recipe: a plain check does not load the recipe layer (PyYAML, jsonschema)
    from buildkit.service.plan import load_plan

    loaded = load_plan(recipe_path, ceilings_reader=ceilings_reader)
    return loaded.recipe, loaded.job(job_id)


def config_for_job(recipe: Recipe, job: Job, flags: GateFlags) -> GateConfig:
    """``build``'s configuration for ``job`` (:meth:`GateConfig.from_recipe_job`) with the options
    ``flags`` applied by their merge rules."""
    return apply_options(GateConfig.from_recipe_job(recipe, job), flags)


def config_from_flags(flags: GateFlags) -> GateConfig:
    """The configuration of the options alone (no recipe): applied to the defaults."""
    return apply_options(GateConfig(), flags)


def gate_config(
    flags: GateFlags,
    *,
    recipe: Path | None = None,
    job: str | None = None,
    ceilings_reader: CeilingsReader | None = None,
) -> GateConfig:
    """The configuration ``check`` gates with: :func:`config_for_job` when a recipe and job are
    given (both or neither; ``ceilings_reader`` as :func:`find_job` takes it), else
    :func:`config_from_flags`."""
    if recipe is None and job is None:
        return config_from_flags(flags)
    if recipe is None or job is None:
        raise UsageError("--recipe and --job go together")
    loaded, found = find_job(recipe, job, ceilings_reader)
    return config_for_job(loaded, found, flags)


def run_time_globs(
    *,
    exclude: Sequence[str] = (),
    exclude_sets: Sequence[str] = (),
    rocm: str | None = None,
    recipe: Path | None = None,
    job: str | None = None,
) -> tuple[str, ...]:
    """The SONAME globs of the libraries provided at run time, exactly as ``buildkit check`` with the
    same options takes them (:func:`gate_config`): with ``recipe`` and ``job`` (both
    or neither: UsageError) the job's exclude globs, which ``build`` repairs and gates with, plus
    ``exclude`` and ``exclude_sets``; the sets expand for ``rocm``, else for the job's ROCm release,
    else for every release (an unknown ``rocm``: UsageError naming the known ones). ``buildkit diff``
    compares the wheels' facts with these globs (:func:`buildkit.compare.diff.diff_wheels`)."""

    flags = GateFlags(exclude=tuple(exclude), exclude_sets=tuple(exclude_sets), rocm=rocm)
    return tuple(gate_config(flags, recipe=recipe, job=job).exclude_globs)
