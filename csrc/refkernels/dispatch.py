"""Tuned GEMM dispatch: (gfx, cu_num, M, N, K) -> kernel configuration.

The table is a CSV with the header ``gfx,cu_num,M,N,K,kernel`` (extra columns are kept as
notes). The ``gfx`` column is mandatory: a table keyed only by (cu_num, M, N, K) lets a row
tuned on gfx942 be picked on gfx950 (or the reverse), so a table without it is refused, as
is a table with two rows for the same key.

Selection (:func:`select_kernel`), never using a row of another gfx:

1. ``exact``: the row with the same (gfx, cu_num, M, N, K);
2. ``nearest``: otherwise, among rows of the same gfx, those with the same cu_num if there are
   any (else all rows of that gfx), the row nearest in shape, distance
   ``|log2(M/m)| + |log2(N/n)| + |log2(K/k)|``; ties go to the earlier row of the CSV;
3. ``default``: otherwise (a gfx the table does not know) the generic ``gemm_tile16``, which
   is valid on every compiled arch.

gfx names are compared without target features: ``gfx90a:sramecc+:xnack-`` looks up ``gfx90a``.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources

from .errors import TunedTableError

__all__ = [
    "DEFAULT_KERNEL",
    "KERNELS",
    "KernelConfig",
    "Selection",
    "TunedTable",
    "default_table",
    "load_table",
    "select_kernel",
]

REQUIRED_COLUMNS = ("gfx", "cu_num", "M", "N", "K", "kernel")


@dataclass(frozen=True)
class KernelConfig:
    """A GEMM kernel compiled into the extension and its work-group tile."""

    name: str
    tile_m: int
    tile_n: int
    tile_k: int


KERNELS: Mapping[str, KernelConfig] = {
    "gemm_tile16": KernelConfig("gemm_tile16", 16, 16, 16),
    "gemm_tile32": KernelConfig("gemm_tile32", 32, 32, 32),
}
DEFAULT_KERNEL = "gemm_tile16"

Key = tuple[str, int, int, int, int]


@dataclass(frozen=True)
class Row:
    gfx: str
    cu_num: int
    m: int
    n: int
    k: int
    kernel: KernelConfig
    line: int
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def key(self) -> Key:
        return (self.gfx, self.cu_num, self.m, self.n, self.k)


@dataclass(frozen=True)
class Selection:
    """The kernel chosen for a problem and why (``exact``, ``nearest`` or ``default``)."""

    config: KernelConfig
    source: str
    row: Row | None

    @property
    def kernel(self) -> str:
        return self.config.name


def base_gfx(gfx: str) -> str:
    """``gfx90a:sramecc+:xnack-`` -> ``gfx90a`` (lower case)."""
    return gfx.split(":", 1)[0].strip().lower()


class TunedTable:
    """Rows of a tuned CSV, indexed by (gfx, cu_num, M, N, K)."""

    def __init__(self, rows: Iterable[Row], source: str = "<memory>") -> None:
        self.source = source
        self.rows: tuple[Row, ...] = tuple(rows)
        self._exact: dict[Key, Row] = {}
        self._by_gfx: dict[str, list[Row]] = {}
        for row in self.rows:
            first = self._exact.setdefault(row.key, row)
            if first is not row:
                raise TunedTableError(
                    f"{source}:{row.line}: duplicate key (gfx, cu_num, M, N, K) = {row.key}, "
                    f"first defined on line {first.line}"
                )
            self._by_gfx.setdefault(row.gfx, []).append(row)

    @property
    def gfx_archs(self) -> tuple[str, ...]:
        return tuple(sorted(self._by_gfx))

    def select(self, gfx: str, cu_num: int, m: int, n: int, k: int) -> Selection:
        arch = base_gfx(gfx)
        row = self._exact.get((arch, cu_num, m, n, k))
        if row is not None:
            return Selection(row.kernel, "exact", row)
        candidates = self._by_gfx.get(arch, [])
        same_cu = [r for r in candidates if r.cu_num == cu_num]
        pool = same_cu or candidates
        if not pool:
            return Selection(KERNELS[DEFAULT_KERNEL], "default", None)
        best = min(pool, key=lambda r: _shape_distance(r, m, n, k))  # min keeps the first of equals
        return Selection(best.kernel, "nearest", best)


def _shape_distance(row: Row, m: int, n: int, k: int) -> float:
    return sum(abs(math.log2(a / b)) for a, b in ((row.m, m), (row.n, n), (row.k, k)))


def _positive_int(value: str | None, column: str, where: str) -> int:
    try:
        number = int(value or "")
    except ValueError:
        raise TunedTableError(f"{where}: column {column} must be an integer, got {value!r}") from None
    if number <= 0:
        raise TunedTableError(f"{where}: column {column} must be positive, got {number}")
    return number


def parse_table(lines: Iterable[str], source: str = "<memory>") -> TunedTable:
    """Parse tuned CSV text (an iterable of lines). Raises TunedTableError."""
    reader = csv.DictReader(lines)
    header = [name.strip() for name in (reader.fieldnames or [])]
    missing = [name for name in REQUIRED_COLUMNS if name not in header]
    if missing:
        hint = (
            " (a table without gfx collides across archs, e.g. gfx942 and gfx950)" if "gfx" in missing else ""
        )
        raise TunedTableError(f"{source}: missing column(s) {', '.join(missing)}{hint}; header is {header}")
    reader.fieldnames = header
    rows = []
    for record in reader:
        where = f"{source}:{reader.line_num}"
        if None in record:
            raise TunedTableError(f"{where}: more fields than the header has")
        gfx = base_gfx(record["gfx"] or "")
        if not gfx.startswith("gfx"):
            raise TunedTableError(
                f"{where}: column gfx must name an arch such as gfx942, got {record['gfx']!r}"
            )
        kernel_name = (record["kernel"] or "").strip()
        if kernel_name not in KERNELS:
            raise TunedTableError(
                f"{where}: unknown kernel {kernel_name!r}; compiled kernels: {sorted(KERNELS)}"
            )
        rows.append(
            Row(
                gfx=gfx,
                cu_num=_positive_int(record["cu_num"], "cu_num", where),
                m=_positive_int(record["M"], "M", where),
                n=_positive_int(record["N"], "N", where),
                k=_positive_int(record["K"], "K", where),
                kernel=KERNELS[kernel_name],
                line=reader.line_num,
                extra={k: v or "" for k, v in record.items() if k not in REQUIRED_COLUMNS},
            )
        )
    return TunedTable(rows, source)


def load_table(path: str | os.PathLike[str]) -> TunedTable:
    """Load a tuned CSV from a file."""
    with open(path, newline="", encoding="utf-8") as handle:
        return parse_table(handle, os.fspath(path))


_DEFAULT: TunedTable | None = None


def default_table() -> TunedTable:
    """The table shipped in the package (``refkernels/tuned/gemm.csv``), loaded once."""
    global _DEFAULT
    if _DEFAULT is None:
        text = resources.files(__package__).joinpath("tuned/gemm.csv").read_text(encoding="utf-8")
        _DEFAULT = parse_table(text.splitlines(keepends=True), "refkernels/tuned/gemm.csv")
    return _DEFAULT


def select_kernel(
    gfx: str, cu_num: int, m: int, n: int, k: int, *, table: TunedTable | None = None
) -> Selection:
    """The kernel for a GEMM of shape (M, N, K) on ``gfx`` with ``cu_num`` CUs (see module doc)."""
    for name, value in (("M", m), ("N", n), ("K", k)):
        if value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")
    return (table or default_table()).select(gfx, cu_num, m, n, k)
