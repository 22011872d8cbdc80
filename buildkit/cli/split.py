"""``buildkit split WHEEL --out DIR``: a host wheel and one device wheel per gfx processor, each gated
(exit codes: docs/REFERENCE.md; an output the gate refuses keeps every output, with its reports, in
``DIR/.refused/split-<stem>/`` and none in ``DIR``). The logic is :mod:`buildkit.split`.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click

from buildkit.cli.options import verbose as global_verbose
from buildkit.errors import GateFailed
from buildkit.gate.report import render_all
from buildkit.split import BUNDLE_REASON, SplitResult, split_wheel
from buildkit.units import format_size


def _examine(result: SplitResult) -> list[str]:
    lines = []
    for o in result.outputs:
        if not o.verdict.passed:
            device = f" --device-target {o.target}" if o.target is not None else ""
            lines.append(f"buildkit check{device} -v {shlex.quote(str(o.path))}")
    return lines


def render(result: SplitResult, *, verbose: bool = False) -> str:
    """The human report of a split."""
    host = result.host
    placed = sum(o.code_objects for o in result.devices)
    lines = [
        f"{result.source.name} ({format_size(result.source_size)}): {placed} standalone code object(s) "
        f"split by GPU target into {len(result.outputs)} wheels",
    ]
    width = max(len(o.path.name) for o in result.outputs)
    for o in result.outputs:
        verdict = "PASS" if o.verdict.passed else "FAIL"
        what = (
            f"{o.files} files"
            if o.role == "host"
            else (f"{o.code_objects} code objects ({format_size(o.code_object_bytes)} inflated)")
        )
        lines.append(
            f"  {o.target or 'host':<8} {o.path.name:<{width}}  {format_size(o.size):>10}  {what}  {verdict}"
        )
    if result.by_header:
        lines.append(
            f"  {result.by_header} code object(s) in folders named after no processor were placed by "
            "their ELF header"
        )
    for b in result.bundles:
        lines.append(
            f"  kept in the host wheel: {b.member} carries {', '.join(b.targets)} code "
            f"({format_size(b.bytes)}) inside its offload bundles"
        )
    if result.bundles:
        lines.append(f"  why it is not split: {BUNDLE_REASON}")
    if result.passed:
        targets = ",".join(o.target for o in result.devices if o.target)
        first = next(o.target for o in result.devices if o.target)
        lines.append(f"  written to {host.path.parent}")
        name = host.distribution
        lines.append(
            f"  install: pip install '{name}[{first}]' (one GPU), '{name}[{targets}]' (all), "
            f"'{name}' (host only)"
        )
    else:
        lines.append(f"  REFUSED: every output is kept in {result.refused}, none was written as passing")
        lines += [f"  examine: {line}" for line in _examine(result)]
    if verbose or not result.passed:
        failing = [o.verdict for o in result.outputs if verbose or not o.verdict.passed]
        lines.append("")
        lines.append(render_all(failing, verbose=verbose).rstrip("\n"))
    return "\n".join(lines)


@click.command("split")
@click.argument("wheel", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder the host wheel and the device wheels are written to (not the input's own folder: the "
    "host wheel has the input's file name).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the versioned JSON report (`buildkit schema split`)."
)
@click.option("-v", "--verbose", is_flag=True, help="Print every output's gate report.")
def split(wheel: Path, out: Path, as_json: bool, verbose: bool) -> None:
    """Split WHEEL into a host wheel and one device wheel per gfx processor: each standalone code
    object (.co, .hsaco: an AMDGPU ELF) goes to the wheel of the processor its ELF header names
    (`pkg-device-gfx942`), the host wheel gains the extras that install them (`pkg[gfx942]`). Every
    output is gated; they are written only together. Device code inside host ELFs (offload bundles)
    stays in the host wheel: the report says why."""
    result = split_wheel(wheel, out)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        click.echo(render(result, verbose=verbose or global_verbose()))
    if not result.passed:
        failed = [o.path.name for o in result.outputs if not o.verdict.passed]
        raise GateFailed(
            f"split refused: {', '.join(failed)} failed the gate; every output is kept in {result.refused}"
        )
