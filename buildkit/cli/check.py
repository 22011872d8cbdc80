"""``buildkit check WHEEL...``: inspect each wheel (streaming) and apply the gate.

Exit 0 when every wheel passes, 7 (GateFailed) when one fails a rule, 6 (WheelReadError) when one
cannot be read (the others are still reported), 4 (ArchError) for an invalid ``--archs`` target id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from buildkit.errors import ArchError, GateFailed, UsageError, WheelReadError
from buildkit.gate import DEFAULT_SIZE_WARN, GateConfig, Verdict, evaluate
from buildkit.report import ReadFailure, render_all, to_json


def parse_size(text: str) -> int:
    """``"100MiB"``, ``"1.5GB"``, ``"4096"`` -> bytes (the recipe's size syntax)."""
    from buildkit.recipe import parse_size as recipe_parse_size

    try:
        return recipe_parse_size(text)
    except ValueError:
        if text.strip().isdigit():
            return int(text.strip())
        raise UsageError(f"not a size: {text!r} (use e.g. 100MiB, 2GB or a number of bytes)") from None


def parse_archs(text: str | None) -> list[str]:
    """``--archs "gfx908, gfx90a:xnack-"`` -> canonical target ids, each validated the way ``plan`` and
    ``archs`` do (:func:`buildkit.archs.parse_target_id`): an invalid one is ArchError (exit 4),
    not a gate failure for a target no wheel could carry. Not given or blank: no arch rule."""
    if text is None or not text.strip():
        return []
    from buildkit.archs import parse_target_id, split_arch_list

    names = split_arch_list(text)
    if not names:
        raise ArchError(f"--archs {text!r} names no GPU arch (give e.g. gfx90a,gfx942)")
    return list(dict.fromkeys(str(parse_target_id(name)) for name in names))


def _exclude_set_globs(sets: tuple[str, ...], rocm: str | None) -> list[str]:
    if not sets:
        return []
    from buildkit import rocm as rocm_data

    globs: list[str] = list(rocm_data.exclude_globs(list(sets), rocm))
    return globs


def _config_from_job(recipe: Path, job_id: str, overrides: dict[str, Any]) -> GateConfig:
    from buildkit.plan import expand
    from buildkit.recipe import load_recipe

    plan = expand(load_recipe(recipe))
    for job in plan.jobs:
        if job.id == job_id:
            return GateConfig.from_job(job, **overrides)
    known = ", ".join(j.id for j in plan.jobs) or "none"
    raise UsageError(f"no job {job_id!r} in {recipe}; jobs: {known}")


def build_config(
    *,
    policy: str | None,
    max_glibc: str | None,
    max_glibcxx: str | None,
    max_cxxabi: str | None,
    max_gcc: str | None,
    exclude: tuple[str, ...],
    exclude_set: tuple[str, ...],
    rocm: str | None,
    archs: str | None,
    match_features: bool,
    torch: str | None,
    size_warn: str | None,
    size_limit: str | None,
    recipe: Path | None,
    job: str | None,
) -> GateConfig:
    globs = [*exclude, *_exclude_set_globs(exclude_set, rocm)]
    arch_list = parse_archs(archs)
    warn = DEFAULT_SIZE_WARN if size_warn is None else parse_size(size_warn)
    limit = None if size_limit is None else parse_size(size_limit)
    if recipe is not None or job is not None:
        if recipe is None or job is None:
            raise UsageError("--recipe and --job go together")
        overrides: dict[str, Any] = {"size_warn": warn, "match_features": match_features}
        if limit is not None:
            overrides["size_limit"] = limit
        if policy:
            overrides["policy"] = policy
        if globs:
            overrides["exclude_globs"] = tuple(globs)
        if arch_list:
            overrides["archs"] = tuple(arch_list)
        if torch:
            overrides["torch"] = torch
        config = _config_from_job(recipe, job, overrides)
        flags = {"GLIBC": max_glibc, "GLIBCXX": max_glibcxx, "CXXABI": max_cxxabi, "GCC": max_gcc}
        given = {k: v for k, v in flags.items() if v}
        if given:
            config = GateConfig(**{**_fields(config), "ceilings": {**config.ceilings, **given}})
        return config
    return GateConfig.from_flags(
        policy=policy,
        max_glibc=max_glibc,
        max_glibcxx=max_glibcxx,
        max_cxxabi=max_cxxabi,
        max_gcc=max_gcc,
        exclude_globs=globs,
        archs=arch_list,
        match_features=match_features,
        torch=torch,
        size_warn=warn,
        size_limit=limit,
    )


def _fields(config: GateConfig) -> dict[str, Any]:
    return {name: getattr(config, name) for name in config.__dataclass_fields__}


def run_check(
    wheels: list[Path], config: GateConfig, *, verify_record: bool = False
) -> tuple[list[Verdict], list[ReadFailure]]:
    from buildkit.inspect import inspect_wheel

    verdicts: list[Verdict] = []
    failures: list[ReadFailure] = []
    for wheel in wheels:
        try:
            report = inspect_wheel(wheel, verify_record=verify_record)
        except WheelReadError as exc:
            # the message names the wheel (inspect_wheel's rule); the report names it on its own
            failures.append(ReadFailure(wheel.name, str(exc).removeprefix(f"{wheel.name}: ")))
            continue
        verdicts.append(evaluate(report, config))
    return verdicts, failures


@click.command("check")
@click.argument("wheels", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--policy", help="manylinux policy to enforce, e.g. manylinux_2_28 (default: the file name's).")
@click.option("--max-glibc", help="GLIBC ceiling, e.g. 2.28 (default: the policy's).")
@click.option("--max-glibcxx", help="GLIBCXX ceiling, e.g. 3.4.24.")
@click.option("--max-cxxabi", help="CXXABI ceiling, e.g. 1.3.11.")
@click.option("--max-gcc", help="GCC (libgcc_s) ceiling, e.g. 7.0.0.")
@click.option("--exclude", multiple=True, help="SONAME glob provided at run time, e.g. 'librocblas.so*'.")
@click.option(
    "--exclude-set",
    multiple=True,
    type=click.Choice(["rocm", "rocm-system", "torch"]),
    help="Named exclusion set.",
)
@click.option("--rocm", help="ROCm release whose runtime libraries --exclude-set rocm expands to, e.g. 7.2.")
@click.option("--archs", help="Comma-separated gfx target ids every HIP object must carry.")
@click.option("--match-features", is_flag=True, help="Compare target-id features (xnack-, sramecc+) too.")
@click.option("--torch", help="torch MAJOR.MINOR the wheel was built against, e.g. 2.10.")
@click.option("--size-warn", help="Warn above this size (default 100MiB).")
@click.option("--size-limit", help="Fail above this size.")
@click.option(
    "--recipe", type=click.Path(path_type=Path, dir_okay=False), help="Recipe giving the gate rules."
)
@click.option("--job", help="Job id in the recipe's plan, e.g. cp312-rocm7.2-torch2.10.")
@click.option(
    "--verify-record/--no-verify-record",
    default=False,
    show_default=True,
    help="Hash every member and compare with RECORD (reads every member whole: ~15 % slower on small "
    "wheels, see bench/README.md). Off: RECORD is checked for names and sizes, ELF members are read only "
    "up to their dynamic data. `buildkit build` always verifies.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON report.")
def check(
    wheels: tuple[Path, ...],
    policy: str | None,
    max_glibc: str | None,
    max_glibcxx: str | None,
    max_cxxabi: str | None,
    max_gcc: str | None,
    exclude: tuple[str, ...],
    exclude_set: tuple[str, ...],
    rocm: str | None,
    archs: str | None,
    match_features: bool,
    torch: str | None,
    size_warn: str | None,
    size_limit: str | None,
    recipe: Path | None,
    job: str | None,
    verify_record: bool,
    as_json: bool,
) -> None:
    """Gate WHEEL...: manylinux tag, symbol ceilings, external libraries, gfx targets, size, torch pin,
    and integrity (RECORD, WHEEL tags, RPATH/RUNPATH, load order, host code in pure wheels)."""
    config = build_config(
        policy=policy,
        max_glibc=max_glibc,
        max_glibcxx=max_glibcxx,
        max_cxxabi=max_cxxabi,
        max_gcc=max_gcc,
        exclude=exclude,
        exclude_set=exclude_set,
        rocm=rocm,
        archs=archs,
        match_features=match_features,
        torch=torch,
        size_warn=size_warn,
        size_limit=size_limit,
        recipe=recipe,
        job=job,
    )
    verdicts, failures = run_check(list(wheels), config, verify_record=verify_record)
    if as_json:
        click.echo(json.dumps(to_json(verdicts, failures), indent=2))
    else:
        click.echo(render_all(verdicts, failures))
    if failures:
        raise WheelReadError(
            f"{len(failures)} wheel(s) could not be read: "
            + "; ".join(f"{f.wheel}: {f.error}" for f in failures)
        )
    failed = [v.wheel for v in verdicts if not v.passed]
    if failed:
        raise GateFailed(f"gate failed: {', '.join(failed)}")
