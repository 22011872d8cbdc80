"""The one table renderer (buildkit/tables.py, rich underneath) draws, in plain mode, exactly what the
hand-written renderers it replaced drew (columns as wide as their widest cell, two spaces apart, no
trailing space): the golden files of the plan and the build summary pin it. Styled, it adds only ANSI
codes: the same text once they are removed."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from buildkit.tables import table_lines

SGR = re.compile(r"\x1b\[[0-9;]*m")
CELL = st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=12) | st.sampled_from(["", "a b"])


def _hand_written(rows: list[list[str]]) -> list[str]:
    """What plan/render.py and building/summary.py computed before rich drew their tables."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


@given(
    st.integers(1, 5).flatmap(
        lambda n: st.lists(st.lists(CELL, min_size=n, max_size=n), min_size=1, max_size=6)
    )
)
def test_plain_tables_are_the_hand_written_ones(rows: list[list[str]]) -> None:
    assert table_lines(rows) == _hand_written(rows)


@given(st.lists(st.lists(CELL, min_size=3, max_size=3), min_size=1, max_size=6))
def test_styled_tables_only_add_escapes(rows: list[list[str]]) -> None:
    styled = table_lines(rows, styled=True, colours={"a b": "red"})
    assert [SGR.sub("", line) for line in styled] == table_lines(rows)


def test_right_alignment_minimum_width_gap_and_colours() -> None:
    rows = [["PROFILE", "SIZE", "STATE"], ["debian-rocm", "1.26 GB", "current"], ["x", "412 MB", "stale"]]
    assert table_lines(rows, right={1}) == [
        "PROFILE         SIZE  STATE",
        "debian-rocm  1.26 GB  current",
        "x             412 MB  stale",
    ]
    assert table_lines([["ROCm", "LLVM"], ["7.2", "x"]], gap=1, min_widths={0: 6}) == [
        "ROCm   LLVM",
        "7.2    x",
    ]
    styled = table_lines(rows, styled=True, colours={"stale": "yellow"})
    assert styled[0].startswith("\x1b[1mPROFILE")  # the header bold
    assert styled[2].endswith("\x1b[33mstale\x1b[0m") and "\x1b" not in styled[1]
    assert "\x1b[1m" not in "".join(table_lines(rows, header=False, styled=True))
    assert table_lines([]) == []


def test_markup_and_emoji_codes_are_text() -> None:
    assert table_lines([["[bold]x[/bold]", ":smile:"]]) == ["[bold]x[/bold]  :smile:"]
