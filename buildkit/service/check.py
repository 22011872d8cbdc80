"""What ``buildkit check`` does, as library calls: flags -> a :class:`~buildkit.gate.config.GateConfig`,
then every wheel inspected (streaming) and gated (:func:`buildkit.build.wheel_gate.check_wheels`, the one
way ``build``, ``check`` and ``publish`` gate wheel files).

With ``recipe`` and ``job`` the configuration is the one ``build`` uses,
:meth:`GateConfig.from_recipe_job` (the job's policy, ceilings, exclude globs, archs, torch pin and
ROCm SONAMEs, the recipe's ``size_budget``), and explicit flags adjust it:

* ``exclude`` / ``exclude_sets`` ADD globs to the job's (a flag never drops an exclusion the build had);
* each ``max_*`` ceiling flag overrides that one ceiling; ``policy``, ``torch``, ``archs``,
  ``size_warn``, ``size_limit`` and ``size_per_target`` override the job's / recipe's value;
  ``match_features`` turns feature matching on; ``policy`` also becomes the platform tag the
  job-identity rule expects;
* ``rocm`` replaces the job's ROCm pin (the runtime SONAMEs the ``rocm-soname`` rule expects);
* ``exclude_sets`` expand for ``rocm``, else for the job's ROCm release.

Without a recipe the flags are the whole configuration (:meth:`GateConfig.from_flags`; ``rocm``
pins the SONAMEs there too). RECORD hashes are verified by default, with or without a recipe and
job (what ``build`` does); ``--no-verify-record`` skips the hashing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from buildkit.errors import ArchError, UsageError
from buildkit.gate.config import DEFAULT_SIZE_WARN, GateConfig, rocm_pin
from buildkit.gatespec import Required
from buildkit.policy import policy_tag
from buildkit.targets import parse_target_id, split_arch_list
from buildkit.units import parse_size

if TYPE_CHECKING:
    from buildkit.plan.from_image import CeilingsReader
    from buildkit.plan.models import Job
    from buildkit.recipe import Recipe


class GateFlags(NamedTuple):
    """The gate options of ``buildkit check`` as given (None / empty: not given)."""

    policy: str | None = None
    max_glibc: str | None = None
    max_glibcxx: str | None = None
    max_cxxabi: str | None = None
    max_gcc: str | None = None
    exclude: tuple[str, ...] = ()
    exclude_sets: tuple[str, ...] = ()
    rocm: str | None = None
    toolchain: str | None = None
    archs: str | None = None
    match_features: bool = False
    torch: str | None = None
    size_warn: str | None = None
    size_limit: str | None = None
    size_per_target: str | None = None
    required: tuple[str, ...] = ()  # --require GLOB
    torch_abi: str | None = None  # a torch wheel, an installed torch folder or an image
    device_target: str | None = None  # a device wheel of `split`: its gfx processor

    @property
    def ceilings(self) -> dict[str, str]:
        given = {"GLIBC": self.max_glibc, "GLIBCXX": self.max_glibcxx, "CXXABI": self.max_cxxabi}
        given["GCC"] = self.max_gcc
        return {k: v for k, v in given.items() if v}


def parse_size_option(text: str) -> int:
    """``"100MiB"``, ``"1.5GB"``, ``"4096"`` -> bytes (the recipe's size syntax)."""
    try:
        return parse_size(text)
    except ValueError:
        if text.strip().isdigit():
            return int(text.strip())
        raise UsageError(f"not a size: {text!r} (use e.g. 100MiB, 2GB or a number of bytes)") from None


def parse_archs(text: str | None) -> list[str]:
    """``"gfx908, gfx90a:xnack-"`` -> canonical target ids, each validated the way ``plan`` and
    ``archs`` do (:func:`buildkit.targets.parse_target_id`): an invalid one is ArchError (exit 4),
    not a gate failure for a target no wheel could carry. None or blank: no arch rule."""
    if text is None or not text.strip():
        return []
    names = split_arch_list(text)
    if not names:
        raise ArchError(f"--archs {text!r} names no GPU arch (give e.g. gfx90a,gfx942)")
    return list(dict.fromkeys(str(parse_target_id(name)) for name in names))


def device_processor(text: str) -> str:
    """``--device-target``: a gfx processor (``GFX942`` -> ``gfx942``), validated as ``--archs`` is
    (ArchError, exit 4, for an unknown one); target-id features are a UsageError: a device wheel holds
    every code object of its processor, whatever their xnack/sramecc modes."""
    target = parse_target_id(text)
    if target.features:
        raise UsageError(f"--device-target {text!r}: give the processor alone, e.g. {target.name}")
    return target.name


def exclude_set_globs(sets: Sequence[str], rocm: str | None) -> list[str]:
    """The SONAME globs of named exclusion sets (``rocm``, ``rocm-system``, ``torch``) for ``rocm``."""
    if not sets:
        return []
    from buildkit import rocm as rocm_data  # the ROCm data only with --exclude-set (start-up time)

    return list(rocm_data.exclude_globs(list(sets), rocm))


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


def _union(first: Iterable[str], then: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*first, *then]))


def config_for_job(recipe: Recipe, job: Job, flags: GateFlags) -> GateConfig:
    """``build``'s configuration for ``job`` (:meth:`GateConfig.from_recipe_job`) adjusted by ``flags``
    as the module docstring says."""
    base = GateConfig.from_recipe_job(recipe, job)
    overrides: dict[str, Any] = {}
    added = [*flags.exclude, *exclude_set_globs(flags.exclude_sets, flags.rocm or job.rocm)]
    if added:
        overrides["exclude_globs"] = _union(base.exclude_globs, added)
    if flags.ceilings:
        overrides["ceilings"] = {**base.ceilings, **flags.ceilings}
    archs = parse_archs(flags.archs)
    if archs:
        overrides["archs"] = tuple(archs)
    if flags.policy:
        overrides["policy"] = flags.policy
        if base.identity is not None:
            overrides["identity"] = base.identity._replace(platform_tag=policy_tag(flags.policy))
    if flags.rocm or flags.toolchain:
        overrides.update(rocm_pin(flags.rocm, flags.toolchain))
    if flags.torch:
        overrides["torch"] = flags.torch
    if flags.match_features:
        overrides["match_features"] = True
    if flags.size_warn is not None:
        overrides["size_warn"] = parse_size_option(flags.size_warn)
    if flags.size_limit is not None:
        overrides["size_limit"] = parse_size_option(flags.size_limit)
    if flags.size_per_target is not None:
        overrides["size_per_target"] = parse_size_option(flags.size_per_target)
    if flags.required:
        overrides["required"] = (*base.required, *_required(flags.required))
    if flags.torch_abi:
        overrides["torch_abi"] = flags.torch_abi
    if flags.device_target:
        overrides["device_target"] = device_processor(flags.device_target)
    return GateConfig.from_recipe_job(recipe, job, **overrides)


def _required(globs: Sequence[str]) -> tuple[Required, ...]:
    for glob in globs:
        if not glob.strip() or glob.startswith("/"):
            raise UsageError(f"--require {glob!r}: give a glob on wheel member paths, e.g. pkg/kernels/*.co")
    return tuple(Required(glob, "--require") for glob in dict.fromkeys(globs))


def config_from_flags(flags: GateFlags) -> GateConfig:
    """The configuration of flags alone (no recipe)."""
    config = GateConfig.from_flags(
        policy=flags.policy,
        max_glibc=flags.max_glibc,
        max_glibcxx=flags.max_glibcxx,
        max_cxxabi=flags.max_cxxabi,
        max_gcc=flags.max_gcc,
        exclude_globs=[*flags.exclude, *exclude_set_globs(flags.exclude_sets, flags.rocm)],
        archs=parse_archs(flags.archs),
        match_features=flags.match_features,
        torch=flags.torch,
        size_warn=DEFAULT_SIZE_WARN if flags.size_warn is None else parse_size_option(flags.size_warn),
        size_limit=None if flags.size_limit is None else parse_size_option(flags.size_limit),
        size_per_target=None if flags.size_per_target is None else parse_size_option(flags.size_per_target),
        rocm=flags.rocm,
        toolchain=flags.toolchain,
        torch_abi=flags.torch_abi,
    )
    if flags.required:
        config = config._replace(required=_required(flags.required))
    if flags.device_target:
        config = config._replace(device_target=device_processor(flags.device_target)).validated()
    return config


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
