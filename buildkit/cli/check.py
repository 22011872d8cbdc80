"""``buildkit check WHEEL...``: inspect each wheel (streaming) and apply the gate.

Exit 0 when every wheel passes, 7 (GateFailed) when one fails a rule, 6 (WheelReadError) when one
cannot be read (the others are still reported), 4 (ArchError) for an invalid ``--archs`` target id.
The logic (flags and ``--recipe``/``--job`` to a gate configuration, the checks) is
:mod:`buildkit.service.check`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from buildkit.build.wheel_gate import check_wheels
from buildkit.cli.options import colour_verdicts, gate_options
from buildkit.cli.options import verbose as global_verbose
from buildkit.errors import GateFailed, UsageError, WheelReadError
from buildkit.gate.options import GateFlags
from buildkit.gate.report import render_all, to_json
from buildkit.service.check import gate_config

if TYPE_CHECKING:
    from buildkit.gate.torchabi import TorchExports


def torch_from_image(image: str) -> TorchExports:
    """``--torch-abi IMAGE``: the exports of the torch installed in a runtime image."""
    # the Docker SDK only for an image: a check against a torch wheel never loads it
    from buildkit.compare.torch_exports import exports_from_tables
    from buildkit.image.torch import image_torch

    found = image_torch(image)
    return exports_from_tables(image, "image", found.version, found.tables)


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
    reader = None
    if recipe is not None:
        # the recipe layer only with --recipe (runtime images' ceilings, as build reads them): a plain
        # check never loads it
        from buildkit.service.plan import image_ceilings

        reader = image_ceilings
    config = gate_config(gate, recipe=recipe, job=job, ceilings_reader=reader)
    if (rocm_from_pip is None) != (rocm_sdk is None):
        raise UsageError("--rocm-from-pip and --rocm-sdk go together")
    if rocm_from_pip is not None and rocm_sdk is not None:
        # the SDK's wheels are read only for ROCm from pip (start-up of a plain check)
        from buildkit.build.rocm_pip import find_wheels, gather

        sdk = gather(rocm_from_pip, find_wheels(rocm_sdk), source=str(rocm_sdk))
        config = config._replace(rocm_pip=sdk).validated()
    verdicts, failures = check_wheels(
        list(wheels), config, verify_record=verify_record, image_reader=torch_from_image
    )
    if as_json:
        click.echo(json.dumps(to_json(verdicts, failures), indent=2))
    else:
        text = render_all(verdicts, failures, verbose=verbose or global_verbose())
        click.echo(colour_verdicts(text, tty=sys.stdout.isatty(), env=os.environ))
    if failures:
        raise WheelReadError(
            f"{len(failures)} wheel(s) could not be read: "
            + "; ".join(f"{f.wheel}: {f.error}" for f in failures)
        )
    failed = [v.wheel for v in verdicts if not v.passed]
    if failed:
        raise GateFailed(f"gate failed: {', '.join(failed)}")
