"""A job's output folder ``<out>/<job-id>/``: checked writable, filled all at once, discarded when stale.

A folder is filled by one rename under a lock on ``<out>``; the previous one is set aside for the
instant of the swap and put back if the swap fails (:func:`swap_in`, which the quarantine uses too)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from buildkit import manifest
from buildkit.building import Echo, provenance
from buildkit.building.key import up_to_date
from buildkit.errors import BuildFailed, UsageError
from buildkit.plan.models import Job


def check_writable(folder: Path, what: str) -> None:
    """``folder`` is, or can become, a writable folder (its nearest existing ancestor is a writable
    folder): checked before any image or compiler starts, leaving nothing behind. A folder is made
    and removed there: root passes every access check, and /proc or a read-only mount refuses only
    the write itself."""
    if folder.is_symlink() and not os.path.exists(folder):
        raise UsageError(
            f"{what} {folder}: a symbolic link to {os.readlink(folder)}, which does not resolve (missing, "
            "or a loop)"
        )
    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise UsageError(f"{what} {folder}: {probe} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {folder}: {probe} is not writable")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".buildkit-probe-", dir=probe))
    except OSError as err:
        raise UsageError(f"{what} {folder}: cannot write in {probe}: {err.strerror or err}") from None


def discard_output(dest: Path) -> list[str]:
    """Remove a job's output folder (renamed aside first: a reader sees all of it or nothing);
    returns the names of the wheels it held. OSError when it cannot be removed."""
    if dest.is_symlink() or not dest.is_dir():
        return []
    wheels = sorted(p.name for p in dest.glob("*.whl"))
    aside = dest.with_name(f".{dest.name}.stale-{os.getpid()}-{secrets.token_hex(4)}")
    os.replace(dest, aside)
    shutil.rmtree(aside)
    return wheels


def drop_stale_output(dest: Path, job: Job, echo: Echo, *, keep_key: str | None) -> Path | None:
    """After a failed or gate-refused job: remove its previous output, which ``publish`` would
    otherwise publish although it no longer matches the recipe or source. Kept only when it was
    built from exactly the current inputs (``keep_key``: a ``--force`` rebuild that failed)."""
    if keep_key is not None and up_to_date(dest, keep_key) is not None:
        return None
    try:
        wheels = discard_output(dest)
    except OSError as exc:
        echo(
            f"[{job.id}] warning: cannot remove the previous output {dest} ({exc}): it no longer matches "
            "the recipe/source; remove it before `buildkit publish`"
        )
        return None
    if not wheels:
        return None
    echo(
        f"[{job.id}] removed the previous wheel of {job.id}: it no longer matches the recipe/source "
        f"({', '.join(wheels)})"
    )
    return dest


def publish_to_out(wheels: Path | Sequence[Path], dest: Path) -> None:
    """Put the wheels (the job's one, or a split's host and device wheels) and their companions
    (manifest, attestation, lock) into ``dest`` all at once: copied into :func:`incoming_folder` (the
    same file system as ``dest``, whatever the staging folder's), then :func:`swap_in`."""
    wheels = [wheels] if isinstance(wheels, Path) else list(wheels)
    files: list[Path] = []
    for wheel in wheels:
        lock = manifest.lock_path(wheel)
        files += [wheel, manifest.manifest_path(wheel), *provenance.companions(wheel)]
        files += [lock] if lock.exists() else []
    wheel = wheels[0]
    dest.parent.mkdir(parents=True, exist_ok=True)
    with locked(dest.parent):
        incoming = incoming_folder(dest)
        try:
            for path in files:
                shutil.copyfile(path, incoming / path.name)
            swap_in(incoming, dest)
        except OSError as exc:
            raise BuildFailed(f"cannot move {wheel.name} into {dest}: {exc}") from None
        finally:
            shutil.rmtree(incoming, ignore_errors=True)


@contextlib.contextmanager
def locked(parent: Path) -> Iterator[None]:
    """An exclusive lock on the folder ``parent`` (flock on its descriptor: no lock file is left) while its
    job folders are swapped: two builds of the same job into one --out could otherwise find ``dest``
    gone between their two renames."""
    folder = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        yield
    finally:
        os.close(folder)  # releases the lock


def incoming_folder(dest: Path) -> Path:
    """A new hidden folder beside ``dest`` (``.<name>.incoming-<pid>-*``: the same file system, a
    name :func:`~buildkit.building.staging.sweep_debris` removes after a killed build) to fill before
    :func:`swap_in`."""
    return Path(tempfile.mkdtemp(prefix=f".{dest.name}.incoming-{os.getpid()}-", dir=dest.parent))


def swap_in(incoming: Path, dest: Path) -> None:
    """Rename the filled folder ``incoming`` (from :func:`incoming_folder`) to ``dest``, under
    :func:`locked` of their parent. A previous ``dest`` is set aside for the instant of the swap
    (``.<name>.previous-<pid>-*``), put back if the rename fails, else removed. OSError on failure."""
    parent = dest.parent
    previous = parent / f".{dest.name}.previous-{os.getpid()}-{incoming.name.rsplit('-', 1)[-1]}"
    os.chmod(incoming, 0o755)
    had_previous = dest.exists()
    if had_previous:
        os.replace(dest, previous)
    try:
        os.replace(incoming, dest)
    except OSError:
        if had_previous:
            os.replace(previous, dest)
        raise
    if had_previous:
        shutil.rmtree(previous, ignore_errors=True)
