"""``buildkit rocm``: show what rocm-buildkit knows about ROCm releases (data in buildkit/rocm/)."""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path

import click

from buildkit import rocm as rocmdata
from buildkit.cli.options import colour_wanted, enveloped, json_errors
from buildkit.records import to_data
from buildkit.tables import table_lines


@click.group("rocm")
def rocm() -> None:
    """ROCm releases, runtime-library sets and toolchains known to rocm-buildkit."""


def _since(value: str | None) -> datetime.date | None:
    if value is None:
        return None
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a day (YYYY-MM-DD)", param_hint="--since") from None


@rocm.command("ls")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--since",
    metavar="YYYY-MM-DD",
    help="Only the releases AMD published on or after this day (releases.yaml `released`), and what "
    "the data refresh read from AMD's wheels since then (observed.yaml).",
)
def ls(as_json: bool, since: str | None) -> None:
    """List known releases and toolchains."""
    with json_errors("rocm ls", as_json):
        _ls(as_json, _since(since))


def _ls(as_json: bool, day: datetime.date | None) -> None:
    releases = [r for r in rocmdata.releases() if day is None or (r.released or "") >= day.isoformat()]
    observed = rocmdata.observed_since(day) if day is not None else []
    toolchains = rocmdata.toolchains()
    if as_json:
        data: dict[str, object] = {
            "releases": [
                {
                    "version": r.version,
                    "archs": list(r.archs),
                    "torch_index": r.torch_index,
                    "released": r.released,
                    "llvm": r.llvm,
                    "hip": r.hip,
                }
                for r in releases
            ],
            "toolchains": to_data(toolchains),
        }
        if day is not None:
            data["observed"] = [o.to_json() for o in observed]
        click.echo(json.dumps(enveloped("rocm-ls", data), indent=2, sort_keys=True))
        return
    # columns as wide as their widest cell: nothing is cut (an LLVM string runs to 40 characters)
    styled = colour_wanted(sys.stdout)
    rows = [["ROCm", "released", "LLVM", "torch (download.pytorch.org)", "archs"]]
    rows += [
        [r.version, r.released or "-", r.llvm, ", ".join(r.torch_versions) or "-", " ".join(r.archs)]
        for r in releases
    ]
    if day is not None:
        click.echo(f"releases published on or after {day.isoformat()}:")
    for line in table_lines(rows, gap=1, min_widths={0: 6}, styled=styled):
        click.echo(line)
    if day is not None:  # what changed: the refresh's readings of AMD's wheels, not the toolchains
        click.echo("")
        click.echo(f"read from AMD's wheels on PyPI on or after {day.isoformat()} (observed.yaml):")
        for entry in observed or ():
            click.echo(f"  {entry.describe()}")
        if not observed:
            click.echo("  nothing")
        return
    click.echo("")
    click.echo("toolchains (not AMD releases):")
    rows = [[t.id, f"ROCm {t.rocm} hipcc {t.hipcc} LLVM {t.llvm}: {' '.join(t.archs)}"] for t in toolchains]
    for line in table_lines(rows, header=False, gap=1, min_widths={0: 16}):
        click.echo(f"  {line}")


@rocm.command("show")
@click.argument("version")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def show(version: str, as_json: bool) -> None:
    """Show one release: targets, runtime libraries with their SONAMEs, torch indexes, how the
    production image installs it (AMD's repositories, packages), sources."""
    with json_errors("rocm show", as_json):
        _show(version, as_json)


def _show(version: str, as_json: bool) -> None:
    from buildkit.rocm import install as installs  # its YAML is read only by this command (start-up time)

    release = rocmdata.get_release(version)
    data = release.to_json()
    try:
        el8: installs.El8Install | None = installs.el8_install(release.version)
    except rocmdata.UnknownRelease:
        el8 = None
    data["el8_install"] = el8.to_json() if el8 else None
    if as_json:
        click.echo(json.dumps(enveloped("rocm-show", data), indent=2, sort_keys=True))
        return
    echo = click.echo
    echo(f"ROCm {release.version}  (patch releases: {', '.join(release.patches) or '-'})")
    if release.released:
        echo(f"released: {release.released}  ({release.released_source})")
    echo(f"LLVM: {release.llvm}" + (f"   HIP: {release.hip}" if release.hip else ""))
    for fact in release.verified:
        echo(f"  verified: {fact}")
    echo(f"archs (accepted by buildkit archs): {' '.join(release.archs)}")
    firsts = {a: m for a, m in data["arch_min_release"].items() if m != rocmdata.releases()[0].version}
    if firsts:
        echo("  first release: " + ", ".join(f"{a} {m}" for a, m in firsts.items()))
    echo(f"official (AMD compatibility matrix): {' '.join(release.official)}")
    echo(f"  source: {release.official_source}")
    echo(f"library targets (rocBLAS kernels): {' '.join(release.library_targets)}")
    echo(f"  source: {release.library_source}")
    for arch, reason in release.withheld.items():
        echo(f"withheld {arch}: {reason}")
    echo("runtime libraries excluded at repair (set 'rocm'):")
    for lib in data["runtime_libraries"]:
        echo(f"  {lib['glob']:<28} {lib['soname'] or '(SONAME major not confirmed)'}")
    echo("torch:")
    for index in data["torch"]["pytorch_org"]:
        echo(f"  {index['index']}  torch {', '.join(index['torch'])}")
    if not data["torch"]["pytorch_org"]:
        echo("  no download.pytorch.org index known")
    if release.amd_torch:
        echo(f"  AMD-built PyTorch (compatibility matrix): {', '.join(release.amd_torch)}")
    echo(f"  source: {release.torch_source}")
    if el8 is None:
        echo("EL8 install (manylinux_2_28-rocm): no data (this rocm-buildkit has no install data for it)")
    else:
        echo(f"EL8 install (manylinux_2_28-rocm): ROCm {el8.version}")
        echo(f"  ROCm repository:     {el8.rocm_repo}")
        echo(f"  graphics repository: {el8.graphics_repo} (optional)")
        echo(f"  GPG key: {el8.gpg_key}")
        echo(f"  packages: {' '.join(el8.packages())}")
        echo(f"  source: {el8.source}")
        if el8.unverified:
            echo(f"  unverified: {el8.unverified}")
    for note in release.notes:
        echo(f"note: {note}")
    for text in release.unverified:
        echo(f"unverified: {text}")


@rocm.command("refresh")
@click.option("--write", is_flag=True, help="Store the readings in the installed ROCm data (observed.yaml).")
@click.option("--all", "everything", is_flag=True, help="Read every release again, not only new ones.")
@click.option("--from", "first", metavar="X.Y.Z", help="Only ROCm patch releases from this one on.")
@click.option(
    "--wheels",
    type=click.Path(file_okay=False, path_type=Path),
    help="A folder of AMD's wheels already downloaded (read before downloading).",
)
def refresh(write: bool, everything: bool, first: str | None, wheels: Path | None) -> None:
    """Read AMD's wheels on PyPI (hip-python, rocm-bindings-*, rocm-llvm-python) for the ROCm releases
    they ship: HIP and LLVM versions, TheRock's system libraries. Prints the diff against the stored
    data (Markdown, for the weekly workflow's pull request)."""
    # deferred (start-up time: the index client, PyYAML): `buildkit rocm ls` never loads it
    from buildkit.service.rocm import run_refresh

    lines = run_refresh(write=write, everything=everything, first=first, wheels=wheels)
    click.echo("## ROCm data refresh")
    click.echo("")
    for line in lines or ["- no change"]:
        click.echo(line)
