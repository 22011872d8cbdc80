"""What ``buildkit check`` does, as library calls (:func:`run_check`): its options ->
a :class:`~buildkit.gate.config.GateConfig` (:func:`gate_config`; with ``--recipe``/``--job`` the one
``build`` uses, :meth:`GateConfig.from_job` with the recipe, adjusted by the options' merge rules of
:mod:`buildkit.gate.options`), then every wheel judged (:func:`buildkit.judge.judge_wheels`);
:meth:`CheckRun.failure` is the command's verdict.

Light on purpose (``tests/unit/test_check_startup.py``): the recipe layer, the SDK's wheels, the
Docker SDK and the torch's exports load only for the options that need them, and the result is a
NamedTuple (a dataclass on check's path costs its start-up)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from buildkit.errors import BuildkitError, GateFailed, UsageError, WheelReadError
from buildkit.gate.config import GateConfig
from buildkit.gate.options import GateFlags, apply_options
from buildkit.gate.report import ReadFailure
from buildkit.gate.verdict import Verdict
from buildkit.judge import judge_wheels

if TYPE_CHECKING:
    from buildkit.gate.torchabi import TorchExports
    from buildkit.plan.from_image import CeilingsReader
    from buildkit.plan.models import Job
    from buildkit.recipe import Recipe


def find_job(
    recipe_path: Path, job_id: str, ceilings_reader: CeilingsReader | None = None
) -> tuple[Recipe, Job]:
    """The recipe at ``recipe_path`` and the job ``job_id`` of its plan (UnknownJob naming the known ones),
    expanded with ``ceilings_reader`` as ``build`` does: its ceilings are the ones it was gated with."""
    # only with --recipe: a plain check does not load the recipe layer (PyYAML, jsonschema)
    from buildkit.service.plan import load_plan

    loaded = load_plan(recipe_path, ceilings_reader=ceilings_reader)
    return loaded.recipe, loaded.job(job_id)


def config_for_job(recipe: Recipe, job: Job, flags: GateFlags) -> GateConfig:
    """``build``'s configuration for ``job`` with the options ``flags`` applied by their merge rules."""
    return apply_options(GateConfig.from_job(job, recipe), flags)


def gate_config(
    flags: GateFlags,
    *,
    recipe: Path | None = None,
    job: str | None = None,
    ceilings_reader: CeilingsReader | None = None,
) -> GateConfig:
    """The configuration ``check`` gates with: :func:`config_for_job` with a recipe and job (both or
    neither), else the options applied to the defaults."""
    if recipe is None and job is None:
        return apply_options(GateConfig(), flags)
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
    """The SONAME globs of the libraries provided at run time, exactly as ``buildkit check`` with the same
    options takes them (:func:`gate_config`): the sets expand for ``rocm``, else the job's ROCm release,
    else every release (an unknown ``rocm``: UsageError), for :func:`buildkit.compare.diff.diff_wheels`."""

    flags = GateFlags(exclude=tuple(exclude), exclude_sets=tuple(exclude_sets), rocm=rocm)
    return tuple(gate_config(flags, recipe=recipe, job=job).exclude_globs)


def torch_from_image(image: str) -> TorchExports:
    """``--torch-abi IMAGE``: the exports of the torch installed in a runtime image."""
    # the Docker SDK only for an image: a check against a torch wheel never loads it
    from buildkit.compare.torch_exports import exports_from_tables
    from buildkit.image.torch import image_torch

    found = image_torch(image)
    return exports_from_tables(image, "image", found.version, found.tables)


def with_rocm_from_pip(config: GateConfig, requirement: str | None, sdk: Path | None) -> GateConfig:
    """``config`` with the SDK's wheels in ``sdk`` read into its ROCm-from-pip facts
    (:func:`buildkit.judge.rocm_pip.gather`); ``requirement`` and ``sdk``: both or neither (UsageError)."""
    if (requirement is None) != (sdk is None):
        raise UsageError("--rocm-from-pip and --rocm-sdk go together")
    if requirement is None or sdk is None:
        return config
    # the SDK's wheels are read only for ROCm from pip (start-up of a plain check)
    from buildkit.judge.rocm_pip import find_wheels, gather

    facts = gather(requirement, find_wheels(sdk), source=str(sdk))
    return config._replace(rocm_pip=facts).validated()


class CheckRun(NamedTuple):
    """What ``check`` found: a verdict per wheel read, a failure per wheel that could not be."""

    verdicts: list[Verdict]
    failures: list[ReadFailure]

    def failure(self) -> BuildkitError | None:
        """What the command exits with: WheelReadError when a wheel could not be read (the others are
        still reported), GateFailed when one failed the gate; None when every wheel passed."""
        if self.failures:
            return WheelReadError(
                f"{len(self.failures)} wheel(s) could not be read: "
                + "; ".join(f"{f.wheel}: {f.error}" for f in self.failures)
            )
        failed = [v.wheel for v in self.verdicts if not v.passed]
        if failed:
            return GateFailed(f"gate failed: {', '.join(failed)}")
        return None


def run_check(
    wheels: Sequence[Path],
    flags: GateFlags,
    *,
    recipe: Path | None = None,
    job: str | None = None,
    rocm_from_pip: str | None = None,
    rocm_sdk: Path | None = None,
    verify_record: bool = True,
) -> CheckRun:
    """``buildkit check`` (module docstring): the configuration, ROCm from pip, the torch ``--torch-abi``
    names read once (an image's through :func:`torch_from_image`), and every wheel judged."""
    reader = None
    if recipe is not None:
        # the recipe layer only with --recipe (runtime images' ceilings, as build reads them): a plain
        # check never loads it
        from buildkit.service.plan import image_ceilings

        reader = image_ceilings
    config = gate_config(flags, recipe=recipe, job=job, ceilings_reader=reader)
    config = with_rocm_from_pip(config, rocm_from_pip, rocm_sdk)
    torch = None
    if config.torch_abi:
        from buildkit.compare.torch_exports import load_torch_exports  # only when a torch is asked for

        torch = load_torch_exports(config.torch_abi, image_reader=torch_from_image)
    verdicts, failures = judge_wheels(list(wheels), config, verify_record=verify_record, torch=torch)
    return CheckRun(verdicts, failures)
