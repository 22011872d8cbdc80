"""Pre-build check of tuned-kernel CSV files (recipe ``checks.tuned_csv``).

aiter-style packages ship tuned GEMM configurations as CSV rows keyed by ``(gfx, cu_num, M, N, K)``.
A file without a ``gfx`` column cannot say which GPU a row was tuned on, and two rows with the same
key make the chosen kernel depend on file order: both are errors, reported at ``file:line``.

The patterns come from a recipe, which may be hostile: a pattern must be relative and stay in the
source, every matched file must resolve (symlinks followed) to a regular file under the source root,
and a message never quotes more than :data:`MAX_QUOTED` characters of a file's content."""

from __future__ import annotations

import csv
import os
import stat
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, TextIO

from buildkit.errors import RecipeError

if TYPE_CHECKING:
    from buildkit.recipe import Recipe

_KEY_COLUMNS: tuple[str, ...] = ("gfx", "cu_num", "M", "N", "K")
#: At most this many characters of a CSV's content are quoted in an error message.
MAX_QUOTED = 80


def _quote(text: str) -> str:
    """``text`` cut to :data:`MAX_QUOTED` characters (``...`` marks the cut)."""
    return text if len(text) <= MAX_QUOTED else text[: MAX_QUOTED - 3] + "..."


def _is_inside(path: Path, root: Path) -> bool:
    """True when ``path`` resolves (every symlink followed) to somewhere under ``root``."""
    try:
        path.resolve(strict=True).relative_to(root.resolve(strict=True))
    except (OSError, RuntimeError, ValueError):  # missing, symlink loop, outside
        return False
    return True


def check_tuned_csv(path: str | Path, *, display: str | None = None, root: Path | None = None) -> None:
    """Raise :class:`RecipeError` at ``file:line`` for a missing key column or a duplicate key. With
    ``root``, ``path`` must resolve under it; a FIFO or a device is refused, never read."""
    p = Path(path)
    name = display or str(path)
    if root is not None and not _is_inside(p, root):
        raise RecipeError(
            "tuned CSV resolves outside the source tree (a symlink?); it is not read", file=name
        )
    try:
        # non-blocking: opening a FIFO must not hang; it is refused just below
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise RecipeError(f"cannot read tuned CSV: {exc.strerror or exc}", file=name) from None
    with os.fdopen(fd, "r", newline="", encoding="utf-8") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RecipeError("tuned CSV is not a regular file", file=name)
        _check_rows(handle, name)


def _check_rows(handle: TextIO, name: str) -> None:
    reader = csv.reader(handle)
    try:
        header = next(reader)
    except StopIteration:
        raise RecipeError("tuned CSV is empty: expected a header row", file=name, line=1) from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise RecipeError(f"tuned CSV is unreadable: {exc}", file=name, line=1) from None
    columns = [c.strip() for c in header]
    missing = [k for k in _KEY_COLUMNS if k not in columns]
    if missing:
        raise RecipeError(
            f"tuned CSV has no {', '.join(repr(m) for m in missing)} column"
            f"{'s' if len(missing) > 1 else ''} (header: {_quote(', '.join(columns))})",
            file=name,
            line=1,
            hint="every tuned row must name the GPU it was tuned on (gfx) and its key (cu_num, M, N, K)",
        )
    index = [columns.index(k) for k in _KEY_COLUMNS]
    seen: dict[tuple[str, ...], int] = {}
    row_start = reader.line_num + 1
    try:
        for row in reader:
            line = row_start
            row_start = reader.line_num + 1
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) < len(columns):
                raise RecipeError(
                    f"tuned CSV row has {len(row)} fields, the header has {len(columns)}",
                    file=name,
                    line=line,
                )
            key = tuple(row[i].strip() for i in index)
            first = seen.get(key)
            if first is not None:
                shown = ", ".join(f"{k}={v}" for k, v in zip(_KEY_COLUMNS, key, strict=True))
                raise RecipeError(
                    f"duplicate tuned key ({_quote(shown)}), first at line {first}",
                    file=name,
                    line=line,
                    hint="keep one row per (gfx, cu_num, M, N, K)",
                )
            seen[key] = line
    except (csv.Error, UnicodeDecodeError) as exc:
        raise RecipeError(f"tuned CSV is unreadable: {exc}", file=name, line=row_start) from None


def _pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` could leave the source root, or None."""
    if not pattern:
        return "is empty"
    if pattern.startswith("/"):
        return "is absolute; write it relative to the source"
    if ".." in PurePosixPath(pattern).parts:
        return "has a '..' component; it must stay inside the source"
    return None


def check_tuned_csvs(
    root: Path, patterns: Iterable[str] | None = None, *, recipe: Recipe | None = None
) -> list[Path]:
    """Check every CSV matched by ``patterns`` (globs relative to ``root``, default the recipe's
    ``checks.tuned_csv``); a pattern matching nothing is an error too. Returns the files checked,
    sorted. With ``recipe``, a bad pattern's error is at its ``file:line:column`` in the recipe."""
    if patterns is None:
        patterns = recipe.tuned_csv if recipe is not None else ()

    def error(message: str, i: int, hint: str | None = None) -> RecipeError:
        if recipe is not None and i < len(recipe.tuned_csv):
            return recipe.error(message, ("checks", "tuned_csv", i), hint=hint)
        return RecipeError(message, hint=hint)

    checked: list[Path] = []
    for i, pattern in enumerate(patterns):
        problem = _pattern_problem(pattern)
        if problem is not None:
            raise error(f"checks.tuned_csv[{i}]: {pattern!r} {problem}", i)
        try:
            found = sorted(root.glob(pattern))
        except (ValueError, NotImplementedError, OSError) as exc:
            raise error(f"checks.tuned_csv[{i}]: {pattern!r} is not a usable glob: {exc}", i) from None
        matches = [p for p in found if p.is_file() or p.is_symlink()]
        if not matches:
            raise error(
                f"checks.tuned_csv[{i}]: {pattern!r} matches no file under {root}",
                i,
                hint="patterns are globs relative to the source (source.path/subdirectory or the git clone)",
            )
        for m in matches:
            check_tuned_csv(m, display=str(m.relative_to(root)), root=root)
        checked += matches
    return sorted(set(checked))
