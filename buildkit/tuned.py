"""Pre-build check of tuned-kernel CSV files (recipe ``checks.tuned_csv``).

aiter-style packages ship tuned GEMM configurations as CSV rows keyed by
``(gfx, cu_num, M, N, K)``. A file without a ``gfx`` column cannot say which GPU a row was tuned
on, and two rows with the same key make the chosen kernel depend on file order: both are errors,
reported at ``file:line``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

from buildkit.errors import RecipeError

KEY_COLUMNS: tuple[str, ...] = ("gfx", "cu_num", "M", "N", "K")


def check_tuned_csv(path: str | Path, *, display: str | None = None) -> None:
    """Raise :class:`RecipeError` at ``file:line`` for a missing key column or a duplicate key."""
    p = Path(path)
    name = display or str(path)
    try:
        handle = p.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise RecipeError(f"cannot read tuned CSV: {exc.strerror or exc}", file=name) from None
    with handle:
        reader = csv.reader(handle)
        try:
            header = next(reader)
        except StopIteration:
            raise RecipeError("tuned CSV is empty: expected a header row", file=name, line=1) from None
        except (csv.Error, UnicodeDecodeError) as exc:
            raise RecipeError(f"tuned CSV is unreadable: {exc}", file=name, line=1) from None
        columns = [c.strip() for c in header]
        missing = [k for k in KEY_COLUMNS if k not in columns]
        if missing:
            raise RecipeError(
                f"tuned CSV has no {', '.join(repr(m) for m in missing)} column"
                f"{'s' if len(missing) > 1 else ''} (header: {', '.join(columns)})",
                file=name,
                line=1,
                hint="every tuned row must name the GPU it was tuned on (gfx) and its key (cu_num, M, N, K)",
            )
        index = [columns.index(k) for k in KEY_COLUMNS]
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
                    shown = ", ".join(f"{k}={v}" for k, v in zip(KEY_COLUMNS, key, strict=True))
                    raise RecipeError(
                        f"duplicate tuned key ({shown}), first at line {first}",
                        file=name,
                        line=line,
                        hint="keep one row per (gfx, cu_num, M, N, K)",
                    )
                seen[key] = line
        except (csv.Error, UnicodeDecodeError) as exc:
            raise RecipeError(f"tuned CSV is unreadable: {exc}", file=name, line=row_start) from None


def check_tuned_csvs(root: Path, patterns: Iterable[str]) -> list[Path]:
    """Check every CSV matched by ``patterns`` (globs relative to ``root``); a pattern matching
    nothing is an error too. Returns the files checked, sorted."""
    checked: list[Path] = []
    for pattern in patterns:
        matches = sorted(p for p in root.glob(pattern) if p.is_file())
        if not matches:
            raise RecipeError(f"checks.tuned_csv: {pattern!r} matches no file under {root}")
        for m in matches:
            check_tuned_csv(m, display=str(m.relative_to(root)))
        checked += matches
    return sorted(set(checked))
