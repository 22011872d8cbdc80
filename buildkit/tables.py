"""Text tables, drawn by rich: the one table renderer (its users: docs/ARCHITECTURE.md).

Plain (a pipe, a file, a CI log, NO_COLOR): columns as wide as their widest cell, separated by ``gap``
spaces, no border, nothing cut or wrapped, no trailing spaces: the layout the golden files pin
(``tests/data/golden/*.table``, ``build-summary.txt``), which people copy and scripts cut.
Styled (a terminal): the same layout, the header bold and the words of ``colours`` coloured.
``buildkit check``'s report stays hand-formatted: rich imports ~60 ms of modules, which its start-up
budget forbids (``tests/unit/test_check_startup.py``).
"""

from __future__ import annotations

import io
import re
from collections.abc import Collection, Mapping, Sequence

#: a console this wide never wraps a table (rich wraps at the console's width)
_UNBOUNDED = 1_000_000
#: what ends a line after its last visible character: spaces and ANSI style codes
_TRAILING = re.compile(r"(?:\s|\x1b\[[0-9;]*m)+$")


def table_lines(
    rows: Sequence[Sequence[str]],
    *,
    header: bool = True,
    gap: int = 2,
    right: Collection[int] = (),
    min_widths: Mapping[int, int] | None = None,
    styled: bool = False,
    colours: Mapping[str, str] | None = None,
) -> list[str]:
    """``rows`` (the first one the header, unless ``header`` is false) as lines: column ``i``
    right-aligned when ``i in right``, at least ``min_widths[i]`` wide. ``styled``: ANSI bold header
    and ``colours`` (a cell's whole text -> a rich colour name)."""
    # rich is imported here, not at the top: `buildkit plan` and the build import this module, and
    # commands that print no table (check, publish) must not pay for rich (start-up time)
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    if not rows:
        return []
    widths = min_widths or {}
    table = Table(box=None, show_header=False, show_edge=False, pad_edge=False, padding=(0, gap, 0, 0))
    for i in range(len(rows[0])):
        table.add_column(
            justify="right" if i in right else "left",
            no_wrap=True,
            overflow="fold",  # never reached (the console is unbounded); "ignore" would drop justify
            min_width=widths.get(i),
        )
    paint = colours or {}
    for n, row in enumerate(rows):
        cells = []
        for cell in row:
            style = ("bold" if n == 0 and header else paint.get(cell, "")) if styled else ""
            cells.append(Text(cell, style=style))
        table.add_row(*cells)
    out = io.StringIO()
    console = Console(
        file=out,
        width=_UNBOUNDED,
        color_system="standard" if styled else None,
        force_terminal=styled,
        highlight=False,
        markup=False,
        emoji=False,
        legacy_windows=False,
    )
    console.print(table)
    return [_rstrip(line) for line in out.getvalue().splitlines()]


def _rstrip(line: str) -> str:
    """The line without trailing spaces, also those rich writes inside a style's codes (a styled line
    then ends with one reset)."""
    tail = _TRAILING.search(line)
    if tail is None:
        return line
    return line[: tail.start()] + ("\x1b[0m" if "\x1b" in tail.group() else "")
