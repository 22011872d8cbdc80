"""``buildkit diff OLD.whl NEW.whl`` / ``buildkit diff --against-index URL NEW.whl``: release diff
(exit codes: docs/REFERENCE.md).

The libraries provided at run time (``--exclude``, ``--exclude-set``, ``--rocm``, ``--recipe R --job
ID``) are the ones ``buildkit check`` with the same options takes
(:func:`buildkit.service.check.run_time_globs`); the logic is :func:`buildkit.service.diff.run_diff`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from buildkit.cli.options import JsonOutput, enveloped, gate_options, refusing_in_json
from buildkit.errors import GateFailed
from buildkit.gate.options import GateFlags
from buildkit.records import to_data

#: ``--rocm`` here only chooses what ``--exclude-set rocm`` expands to
ROCM_HELP = (
    "ROCm release whose runtime libraries --exclude-set rocm expands to, e.g. 7.2 (default: the job's)."
)


@click.command("diff")
@click.argument("wheels", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--against-index",
    "index_url",
    metavar="URL",
    help="PEP 503 simple index (file:// or http(s)://): diff NEW against its newest earlier release there.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON document.")
@click.option("--fail-on-regression", is_flag=True, help="Exit 7 when the new wheel regresses.")
@gate_options(
    "exclude",
    "exclude_sets",
    "rocm",
    help={"rocm": ROCM_HELP},
)
@click.option(
    "--recipe",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Recipe giving the libraries provided at run time: with --job, exactly the exclude globs "
    "`buildkit build` repairs and gates that job's wheel with (as `buildkit check --recipe R --job ID`); "
    "--exclude and --exclude-set add to them.",
)
@click.option("--job", help="Job id in the recipe's plan, e.g. cp312-rocm7.2-torch2.10.")
@click.option(
    "--require-baseline", is_flag=True, help="With --against-index: fail (exit 2) when no earlier release."
)
@refusing_in_json("diff")
def diff(
    wheels: tuple[Path, ...],
    index_url: str | None,
    out: JsonOutput,
    fail_on_regression: bool,
    gate: GateFlags,
    recipe: Path | None,
    job: str | None,
    require_baseline: bool,
) -> None:
    """Compare OLD.whl with NEW.whl: symbol versions per library, tags, external libraries, gfx
    targets per object, size, members. A regression: a newer runtime needed, a tag, arch or
    platform dropped, or a new external library. For ROCm wheels name the libraries provided at run
    time (--exclude-set rocm, or --recipe R --job ID) as for `buildkit check`: otherwise each one is
    external and the manylinux tag is linux_x86_64."""
    # deferred (heavy: the wheel inspection and the gate): `buildkit diff --help` stays fast
    from buildkit.compare.diff import render_human
    from buildkit.service.diff import run_diff

    as_json = out.enabled
    run = run_diff(
        wheels,
        gate,
        index_url=index_url,
        recipe=recipe,
        job=job,
        require_baseline=require_baseline,
        note=lambda line: click.echo(line, err=True),
    )
    result, baseline = run.result, run.baseline
    if result is None:
        assert baseline is not None
        if as_json:
            out.echo(enveloped("diff", {"baseline": to_data(baseline)}))
        else:
            click.echo(f"{run.nothing_to_compare(wheels[0])}: nothing to compare")
            for note in baseline.notes:
                click.echo(f"  skipped {note}")
        return
    baseline_json: dict[str, Any] | None = None if baseline is None else to_data(baseline)
    label = None if baseline is None else f"from {baseline.page}"
    if as_json:
        out.echo(enveloped("diff", result.to_json(baseline=baseline_json)))
    else:
        click.echo(render_human(result, baseline=label))
    if fail_on_regression and result.regression:
        raise GateFailed(f"{len(result.regressions)} regression(s) against {result.old.filename}")
