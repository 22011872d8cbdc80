"""``buildkit diff OLD.whl NEW.whl`` / ``buildkit diff --against-index URL NEW.whl``: release diff.

Exit 0 without a regression (or without ``--fail-on-regression``), 7 (GateFailed) with
``--fail-on-regression`` and a regression, 6 when a wheel cannot be read or the index's hash does
not match, 2 for usage errors (an index that cannot be read, a ``file://`` index directory that does
not exist, and ``--require-baseline`` when the index has no earlier release).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import click

from buildkit.errors import GateFailed, UsageError


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
@click.option("--exclude", multiple=True, help="SONAME glob provided at run time, e.g. 'libamdhip64.so*'.")
@click.option(
    "--require-baseline", is_flag=True, help="With --against-index: fail (exit 2) when no earlier release."
)
def diff(
    wheels: tuple[Path, ...],
    index_url: str | None,
    as_json: bool,
    fail_on_regression: bool,
    exclude: tuple[str, ...],
    require_baseline: bool,
) -> None:
    """Compare OLD.whl with NEW.whl: symbol versions per library, tags, external libraries, gfx
    targets per object, size, members. A regression: a newer runtime needed, a tag, arch or
    platform dropped, or a new external library."""
    from buildkit.diff import WheelDiff, diff_against_index, diff_wheels, render_human

    if index_url is None and len(wheels) != 2:
        raise UsageError("buildkit diff takes OLD.whl NEW.whl (or --against-index URL NEW.whl)")
    if index_url is not None and len(wheels) != 1:
        raise UsageError("with --against-index give only NEW.whl")
    baseline_json: dict[str, Any] | None = None
    label = None
    result: WheelDiff | None
    if index_url is not None:
        with tempfile.TemporaryDirectory(prefix="buildkit-diff-") as tmp:
            baseline, result = diff_against_index(
                index_url, wheels[0], exclude_globs=exclude, workdir=Path(tmp)
            )
        if result is None:
            message = f"no earlier compatible release of {wheels[0].name} at {baseline.page}"
            if require_baseline:
                raise UsageError(message)
            if as_json:
                click.echo(json.dumps({"schema_version": 1, "baseline": baseline.to_json()}, indent=2))
            else:
                click.echo(f"{message}: nothing to compare")
                for note in baseline.notes:
                    click.echo(f"  skipped {note}")
            return
        baseline_json = baseline.to_json()
        label = f"from {baseline.page}"
    else:
        result = diff_wheels(wheels[0], wheels[1], exclude_globs=exclude)
    if as_json:
        click.echo(json.dumps(result.to_json(baseline=baseline_json), indent=2))
    else:
        click.echo(render_human(result, baseline=label))
    if fail_on_regression and result.regression:
        raise GateFailed(f"{len(result.regressions)} regression(s) against {result.old.filename}")
