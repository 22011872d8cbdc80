"""The source of a job: fetched, checked, staged into a private folder, digested; and the folders
that killed builds left in ``--out``.

The staging folder (:func:`staging_folder`, ``<out>/.staging-<job>-<pid>-*``) is a dot-folder
``publish`` never reads; the recipe's pre-build checks run before any compiler starts."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from buildkit.building import Echo
from buildkit.building.tuned import check_tuned_csvs
from buildkit.errors import BuildFailed, UsageError
from buildkit.plan.models import Job
from buildkit.recipe import Recipe
from buildkit.source.tree import unpacked_source

#: SOURCE_DATE_EPOCH when the source has no git history: 1980-01-01, the zip format's epoch
_DEFAULT_EPOCH = 315532800
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
_SOURCE_IGNORE = shutil.ignore_patterns(
    ".git", "build", "dist", "wheelhouse", "*.egg-info", "__pycache__", "*.pyc", ".pytest_cache", "*.so"
)


def source_date_epoch(source: Path, override: int | None = None) -> int:
    """``override``, ``$SOURCE_DATE_EPOCH``, else the time of the last commit touching the source
    folder, else :data:`_DEFAULT_EPOCH` (never "now")."""
    if override is not None:
        return override
    if "SOURCE_DATE_EPOCH" in os.environ:
        value = os.environ["SOURCE_DATE_EPOCH"]
        if not value.isdigit():
            raise UsageError(f"SOURCE_DATE_EPOCH={value!r} is not a number of seconds since 1970")
        return int(value)
    try:
        out = subprocess.run(
            ["git", "-C", str(source), "log", "-1", "--format=%ct", "--", "."],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
        return int(out) if out else _DEFAULT_EPOCH
    except (OSError, subprocess.SubprocessError, ValueError):
        return _DEFAULT_EPOCH


def fetch_source(recipe: Recipe, into: Path, echo: Echo | None = None) -> Path:
    """The recipe's source as a local folder: a path source as is, a git source cloned at its ref,
    an sdist or url source fetched (cached, sha256-verified) and unpacked (:mod:`buildkit.source`)."""
    local = recipe.source_dir()
    if local is not None:
        if not local.is_dir():
            raise recipe.error(f"source.path: {local} is not a directory", ("source", "path"))
        return local
    if recipe.source.downloaded:
        return unpacked_source(recipe, into, echo)
    assert recipe.source.git is not None
    dest = into / "git"
    ref = recipe.source.ref or "HEAD"
    steps = [
        ["git", "init", "--quiet", str(dest)],
        ["git", "-C", str(dest), "fetch", "--quiet", "--depth", "1", "--", recipe.source.git, ref],
        ["git", "-C", str(dest), "checkout", "--quiet", "FETCH_HEAD"],
    ]
    for cmd in steps:  # fetch by ref works for branches, tags and commit ids alike
        try:
            subprocess.run(cmd, check=True, capture_output=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            raise BuildFailed(
                f"cannot fetch {recipe.source.git} at {ref}: {detail.decode(errors='replace').strip()}"
            ) from None
    root = dest.resolve()
    src = (dest / recipe.source.subdirectory).resolve() if recipe.source.subdirectory else root
    if not src.is_relative_to(root) or not src.is_dir():
        raise recipe.error(
            f"source.subdirectory {recipe.source.subdirectory!r} is not a folder inside the repository",
            ("source", "subdirectory"),
        )
    return src


def run_prebuild_checks(recipe: Recipe, source: Path) -> list[Path]:
    return check_tuned_csvs(source, recipe.tuned_csv, recipe=recipe)


def stage_source(source: Path, dest: Path, ca_bundle: Path | None, skip: Sequence[Path] = ()) -> bool:
    """Copy ``source`` to ``dest`` without build litter nor the folders ``skip`` (``--out`` and
    ``--log-dir`` when they lie inside the source); add the CA bundle pip needs in the container."""
    skipped = {path.resolve() for path in (*skip, dest)}

    def ignore(folder: str, names: list[str]) -> set[str]:
        ignored = set(_SOURCE_IGNORE(folder, names))
        base = Path(folder).resolve()
        ignored.update(name for name in names if base / name in skipped)
        return ignored

    shutil.copytree(source, dest, ignore=ignore, symlinks=True)
    if ca_bundle is not None and ca_bundle.is_file():
        (dest / ".buildkit").mkdir(exist_ok=True)
        shutil.copyfile(ca_bundle, dest / ".buildkit" / "ca-bundle.crt")
        return True
    return False


def tree_digest(root: Path) -> str:
    """sha256 over the relative paths, modes and bytes of every file under ``root`` (sorted)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() or p.is_symlink()):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".buildkit/"):
            continue  # the CA bundle does not change what is built
        digest.update(rel.encode() + b"\0")
        if path.is_symlink():
            digest.update(b"link:" + os.readlink(path).encode())
        else:
            digest.update(b"x" if os.access(path, os.X_OK) else b"-")
            digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


#: a job's staging folder inside ``--out`` (a dot-folder: ``publish`` skips it), and below, the swap
#: folders of :mod:`buildkit.building.output`
_STAGING_PREFIX = ".staging-"
_STAGING = re.compile(r"\.staging-(?P<job>.+)-(?P<pid>\d+)-[^-]+")
_SWAP = re.compile(r"\.(?P<job>.+)\.(?P<kind>incoming|previous|stale)-(?P<pid>\d+)-[^-]+")


def staging_folder(out_dir: Path, job: Job) -> Path:
    """A private folder for one job inside ``out_dir`` (same file system as the final rename)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"{_STAGING_PREFIX}{job.id}-{os.getpid()}-", dir=out_dir))
    except OSError as exc:
        raise UsageError(f"--out {out_dir}: cannot create a staging folder for {job.id}: {exc}") from None


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as another user
        return True
    return True


def sweep_debris(out_dir: Path, echo: Echo) -> list[Path]:
    """Remove the staging and swap folders that killed builds left in ``out_dir`` (their pid no longer
    runs on this host); a ``.previous`` folder whose job folder is missing (a build killed in the instant
    of its swap) is put back instead. Nothing else is touched (not ``.refused``: the quarantine sweeps its
    own with this function). Returns the folders removed."""
    try:
        entries = sorted(out_dir.iterdir())
    except OSError:
        return []
    removed: list[Path] = []
    for entry in entries:
        match = _STAGING.fullmatch(entry.name) or _SWAP.fullmatch(entry.name)
        if match is None or entry.is_symlink() or not entry.is_dir() or _running(int(match["pid"])):
            continue
        dest = out_dir / match["job"]
        if match.groupdict().get("kind") == "previous" and not dest.exists():
            with contextlib.suppress(OSError):
                os.replace(entry, dest)
                echo(f"restored {dest} from {entry.name} (a build was killed while replacing it)")
                continue
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            removed.append(entry)
    if removed:
        names = ", ".join(p.name for p in removed)
        echo(f"removed {len(removed)} folder(s) left in {out_dir} by killed builds: {names}")
    return removed
