"""Refused wheels kept apart: ``<out>/.refused/<job-id>/``, or ``--keep-refused DIR`` -> ``DIR/<job-id>/``
(what is kept there and why: docs/REFERENCE.md), never with a manifest.

The move is all at once: the files are gathered in a hidden ``.<job-id>.incoming-<pid>-*`` folder
beside the job's quarantine folder, which is renamed into place under a lock
(:func:`buildkit.building.output.swap_in`); a newer refusal replaces the older one, and a job that
passes removes its stale quarantine folder (:func:`release`)."""

from __future__ import annotations

import errno
import json
import os
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from buildkit import manifest
from buildkit.building import Echo
from buildkit.building.output import incoming_folder, locked, swap_in
from buildkit.building.staging import sweep_debris
from buildkit.errors import BuildFailed
from buildkit.fsutil import atomic_write
from buildkit.plan.models import Job

_REFUSED_SCHEMA_VERSION = 1
TEXT_SUFFIX = ".check.txt"
JSON_SUFFIX = ".check.json"


def quarantine_root(out_dir: Path, keep_refused: Path | None) -> Path:
    """Where refused wheels go: ``keep_refused`` (``--keep-refused DIR``), else ``<out>/.refused``."""
    return keep_refused if keep_refused is not None else out_dir / manifest.REFUSED_DIR


def shown(path: Path, cwd: Path | None = None) -> str:
    """``path`` relative to ``cwd`` (default: the working directory) when it lies below it, else as is."""
    try:
        return str(path.relative_to(cwd or Path.cwd()))
    except ValueError:
        return str(path)


def examine_command(wheel: Path, recipe: str, job: Job, *, regression_index: str | None = None) -> str:
    """The command that reproduces the refusal of ``wheel``: ``buildkit check`` with the recipe and
    job (``--archs`` too when the build was given other archs), or for a regression, ``buildkit diff``
    against the recipe's index."""
    path, quoted_recipe = shlex.quote(shown(wheel)), shlex.quote(recipe)
    if regression_index is not None:
        return (
            f"buildkit diff --against-index {shlex.quote(regression_index)} {path} --recipe {quoted_recipe} "
            f"--job {job.id} --fail-on-regression"
        )
    command = f"buildkit check {path} --recipe {quoted_recipe} --job {job.id}"
    if job.archs.source == "--archs":
        command += f" --archs {','.join(str(a) for a in job.archs.kept)}"
    return command


def quarantine(
    wheel: Path,
    dest: Path,
    *,
    report: str,
    report_json: Mapping[str, Any],
    record: Mapping[str, Any],
    echo: Echo,
) -> Path:
    """Move ``wheel`` into ``dest`` (the job's quarantine folder) with its reports and the refusal
    ``record``, all at once, replacing an older refusal of the job; returns the quarantined wheel.
    BuildFailed when it cannot (nothing is left half-written: the incoming folder is removed)."""
    parent = dest.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        sweep_debris(parent, echo)
        with locked(parent):
            incoming = incoming_folder(dest)
            try:
                _move(wheel, incoming / wheel.name)
                kept = incoming / wheel.name
                atomic_write(
                    kept.with_name(kept.name + TEXT_SUFFIX),
                    report if report.endswith("\n") else report + "\n",
                )
                atomic_write(
                    kept.with_name(kept.name + JSON_SUFFIX), json.dumps(report_json, indent=2) + "\n"
                )
                document = {
                    "schema": manifest.REFUSED_SCHEMA,
                    "schema_version": _REFUSED_SCHEMA_VERSION,
                    **record,
                }
                atomic_write(
                    manifest.refused_path(kept), json.dumps(document, indent=2, sort_keys=True) + "\n"
                )
                swap_in(incoming, dest)
            finally:
                shutil.rmtree(incoming, ignore_errors=True)
    except OSError as exc:
        raise BuildFailed(f"cannot keep the refused wheel {wheel.name} in {dest}: {exc}") from None
    return dest / wheel.name


def _move(source: Path, target: Path) -> None:
    """Rename ``source`` to ``target``; copied when they lie on different file systems."""
    try:
        os.replace(source, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.copyfile(source, target)


def release(dest: Path, job: Job, echo: Echo) -> bool:
    """After ``job`` passed: remove its quarantine folder ``dest`` (the refusal it holds is
    superseded). A folder that cannot be removed is reported, not an error. True: one was removed."""
    if dest.is_symlink() or not dest.is_dir():
        return False
    aside = dest.with_name(f".{dest.name}.stale-{os.getpid()}-released")
    try:
        with locked(dest.parent):
            os.replace(dest, aside)
    except OSError as exc:
        echo(f"[{job.id}] warning: cannot remove the superseded refusal {dest} ({exc})")
        return False
    shutil.rmtree(aside, ignore_errors=True)
    echo(
        f"[{job.id}] removed {shown(dest)}: the refused wheel kept there is superseded by this passing build"
    )
    return True
