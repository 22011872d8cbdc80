"""``buildkit check WHEEL...``: inspect each wheel (streaming) and apply the gate (exit codes:
docs/REFERENCE.md; an unreadable wheel does not stop the others' reports). The logic is
:func:`buildkit.service.check.run_check`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from buildkit.cli.options import colour_verdicts, gate_options
from buildkit.cli.options import verbose as global_verbose
from buildkit.gate.options import GateFlags
from buildkit.gate.report import render_all, to_json
from buildkit.service.check import run_check


@click.command("check")
@click.argument("wheels", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@gate_options()
@click.option(
    "--recipe",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Recipe giving the gate rules: with --job, exactly what `buildkit build` gates that job's wheel "
    "with (size_budget, the recipe's gate.waive waivers, RECORD hashes and the job's name, version, Python "
    "and platform tags included); "
    "the flags above then adjust it as their help says.",
)
@click.option("--job", help="Job id in the recipe's plan, e.g. cp312-rocm7.2-torch2.10.")
@click.option(
    "--rocm-from-pip",
    "rocm_from_pip",
    metavar="REQUIREMENT",
    help="ROCm comes from pip, pinned as REQUIREMENT (rocm[libraries]==7.2.*): every ROCm library must be "
    "reached through the wheel's RPATH in a wheel its Requires-Dist installs, at the release of --rocm-sdk "
    "that REQUIREMENT admits (rocm-pip-* rules).",
)
@click.option(
    "--rocm-sdk",
    "rocm_sdk",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A folder holding the ROCm SDK's wheels (rocm, rocm-sdk-*), such as a static PEP 503 index, for "
    "--rocm-from-pip.",
)
@click.option(
    "--verify-record/--no-verify-record",
    default=True,
    help="Hash every member and compare with RECORD (the default, as `buildkit build`: reads every member "
    "whole, ~15 % slower on small wheels, measured on real wheels). --no-verify-record checks RECORD's names "
    "and sizes only and reads ELF members only up to their dynamic data, so a corrupted member can pass; "
    "the report says which was done.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON report.")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="List every gfx object and every finding (without it, more than 12 gfx objects are summarised "
    "and each rule shows at most 20 errors and 5 warnings; --json always lists everything).",
)
def check(
    wheels: tuple[Path, ...],
    gate: GateFlags,
    recipe: Path | None,
    job: str | None,
    rocm_from_pip: str | None,
    rocm_sdk: Path | None,
    verify_record: bool,
    as_json: bool,
    verbose: bool,
) -> None:
    """Gate WHEEL...: manylinux tag, symbol ceilings, external libraries, gfx targets, size, torch pin,
    the torch ABI (with --torch-abi) and integrity (RECORD, WHEEL tags, RPATH/RUNPATH, load order, host
    code in pure wheels)."""
    run = run_check(
        wheels,
        gate,
        recipe=recipe,
        job=job,
        rocm_from_pip=rocm_from_pip,
        rocm_sdk=rocm_sdk,
        verify_record=verify_record,
    )
    if as_json:
        click.echo(json.dumps(to_json(run.verdicts, run.failures), indent=2))
    else:
        text = render_all(run.verdicts, run.failures, verbose=verbose or global_verbose())
        click.echo(colour_verdicts(text, tty=sys.stdout.isatty(), env=os.environ))
    failure = run.failure()
    if failure is not None:
        raise failure
