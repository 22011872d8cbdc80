"""Writing one file so that a reader sees the old bytes or the new ones, never a part: every
single-file write buildkit makes goes through :func:`atomic_write` (bytes at hand) or
:func:`atomic_stream` (bytes streamed: a download hashed while it is written). The temporary file
is in the target's own folder (the same file system, so the rename is atomic), and the folder is
synced too, where the file system allows it, so that the rename itself survives a crash.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

#: a new file's permission bits before the umask, as ``open()`` would create it
_DEFAULT_MODE = 0o666


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (``/proc/self/status``);
    elsewhere set and put back at once."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_folder(folder: Path) -> None:
    """Sync the folder entry of a rename; some file systems cannot open or sync a folder: skipped."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def sync_folder(folder: Path) -> None:
    """Make the renames and removals in ``folder`` durable (fsync of the folder; skipped where the file
    system cannot)."""
    _fsync_folder(folder)


@contextlib.contextmanager
def atomic_stream(path: Path, *, mode: int | None = None, suffix: str = ".tmp") -> Iterator[BinaryIO]:
    """A binary file whose bytes replace ``path`` all at once when the block ends without an error:
    the temporary file ``.<name>.<random><suffix>`` beside ``path`` is flushed, synced and renamed over
    it (and the folder synced). When the block raises (a hash that does not match, Ctrl-C), the
    temporary file is removed and ``path`` is left as it was. ``mode`` as :func:`atomic_write` takes it.
    """
    folder = path.parent
    import tempfile  # only when writing: `check` reads and never pays for it

    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=folder)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fchmod(fh.fileno(), (_DEFAULT_MODE & ~_umask()) if mode is None else mode)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_folder(folder)


def atomic_write(path: Path, data: bytes | str, *, mode: int | None = None, encoding: str = "utf-8") -> Path:
    """Replace ``path`` by ``data`` (text is encoded with ``encoding``) as :func:`atomic_stream` does;
    returns ``path``. ``mode``: the file's permission bits; None gives what ``open()`` gives a new file."""
    payload = data.encode(encoding) if isinstance(data, str) else data
    with atomic_stream(path, mode=mode) as fh:
        fh.write(payload)
    return path


def cache_home() -> Path:
    """``$XDG_CACHE_HOME/rocm-buildkit`` (default ``~/.cache/rocm-buildkit``): where every cache of
    rocm-buildkit lives, one folder each (sources, ceilings, probe, build-env, torch-exports, logs)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rocm-buildkit"
