"""``buildkit cache export|import DIR|FILE.tar``: the compiler-cache volumes carried off the machine
and back (logic in buildkit.building.cache_store)."""

from __future__ import annotations

from pathlib import Path

import click

from buildkit.building.cache_store import export_cache, import_cache
from buildkit.docker_engine import ENGINE_ERRORS, connect, engine_failed


@click.group("cache")
def cache() -> None:
    """The compiler cache: export it for a CI cache, import it on another machine."""


@cache.command("export")
@click.argument("dest", type=click.Path(path_type=Path))
@click.option("--volume", "volumes", multiple=True, help="Only this cache volume (repeatable).")
def export(dest: Path, volumes: tuple[str, ...]) -> None:
    """Write the cache volumes into DEST: a folder, or a FILE.tar."""
    try:
        carried = export_cache(connect(), dest.absolute(), list(volumes) or None)
    except ENGINE_ERRORS as exc:
        raise engine_failed(exc, during="exporting the compiler cache") from None
    click.echo(f"exported {carried.describe()} to {dest}")


@cache.command("import")
@click.argument("source", type=click.Path(path_type=Path))
def import_(source: Path) -> None:
    """Read the cache volumes of SOURCE (a folder or FILE.tar of an export) into the engine."""
    try:
        carried = import_cache(connect(), source.absolute())
    except ENGINE_ERRORS as exc:
        raise engine_failed(exc, during="importing the compiler cache") from None
    click.echo(f"imported {carried.describe()} from {source}")
