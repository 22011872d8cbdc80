"""All-or-nothing updates of a static index: staged files, one commit record, replayed after a crash.

Every new file of a batch is first a temporary file beside its final place. :func:`commit` writes the
list of renames (``ROOT/.buildkit-index.journal``, atomically), then performs them in order and
removes the journal. The journal is the commit point: killed before it exists, :func:`recover`
removes the temporary files (and the folders created that hold nothing else): the index is as
before; killed once it exists, :func:`recover` performs the renames not done yet (idempotent: a
temporary file already moved is gone): the index is as after. :func:`recover` runs under the index
lock at the start of every update, so no publisher builds on an interrupted one."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from buildkit.errors import UsageError
from buildkit.fsutil import atomic_write, sync_folder

_JOURNAL_NAME = ".buildkit-index.journal"
#: what the temporary files of a batch are called (:func:`temporary`): ``.<name>.tmp-<pid>``
_TMP_MARK = ".tmp-"


def temporary(final: Path) -> Path:
    """Where a batch stages ``final``: a dot-file beside it (hidden from pip, never listed)."""
    return final.with_name(f".{final.name}{_TMP_MARK}{os.getpid()}")


def commit(root: Path, moves: Sequence[tuple[Path, Path]]) -> None:
    """Record ``moves`` (temporary file, final path; in the order to perform them) in the journal, then
    rename each, then remove the journal. Paths are stored relative to ``root``."""
    record = {"moves": [[str(tmp.relative_to(root)), str(final.relative_to(root))] for tmp, final in moves]}
    journal = root / _JOURNAL_NAME
    atomic_write(journal, json.dumps(record, indent=1) + "\n")  # the commit point
    _replay(root, record["moves"])
    journal.unlink()
    sync_folder(root)


def _replay(root: Path, moves: list[list[str]]) -> None:
    folders: dict[Path, None] = {}
    for tmp, final in moves:
        source, target = root / tmp, root / final
        if source.exists():
            os.replace(source, target)
        folders[target.parent] = None
    for folder in folders:
        sync_folder(folder)


def recover(root: Path, scan: Sequence[Path]) -> str | None:
    """Finish or undo an interrupted batch at ``root`` (hold the index lock; ``scan``: the folders where a
    batch's temporary files live). Returns what was done (None: nothing to do)."""
    done: list[str] = []
    journal = root / _JOURNAL_NAME
    if journal.is_file():
        try:
            moves = json.loads(journal.read_text(encoding="utf-8"))["moves"]
            moves = [[str(tmp), str(final)] for tmp, final in moves]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(
                f"{journal}: the record of an interrupted update is unreadable ({exc}); check the index "
                "and remove the file by hand"
            ) from None
        _replay(root, moves)
        journal.unlink()
        done.append(f"completed an interrupted update ({len(moves)} file(s))")
    stray = [p for p in root.glob(f".{_JOURNAL_NAME}.*.tmp") if p.is_file()]
    for folder in scan:
        if folder.is_dir():
            stray += [p for p in folder.iterdir() if p.name.startswith(".") and _is_temporary(p.name)]
    for path in stray:
        path.unlink(missing_ok=True)
    if stray:
        done.append(f"removed {len(stray)} temporary file(s) of an update that never committed")
    for folder in sorted(scan, key=lambda p: len(p.parts), reverse=True):  # deepest first
        if folder.is_dir() and folder != root and not any(folder.iterdir()):
            folder.rmdir()
    sync_folder(root)
    return "; ".join(done) or None


def _is_temporary(name: str) -> bool:
    """A batch's (``.<name>.tmp-<pid>``) or an atomic write's (``.<name>.<random>.tmp``) file."""
    head, mark, pid = name.rpartition(_TMP_MARK)
    return bool(head and mark and pid.isdigit()) or name.endswith(".tmp")
