"""The README reads as a user's guide (issue 27): no table cell runs to paragraphs. Long explanations are
short sections or lists below a table, and the table links to them. Parsed with markdown-it-py (rich's
Markdown parser, installed with it) so that code fences, escaped pipes and code spans count as GitHub
renders them."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAX_CELL = 160


def _cells(text: str) -> list[tuple[int, str]]:
    """Every table cell of a Markdown text: (line number, its source text)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    cells: list[tuple[int, str]] = []
    line = 0
    for before, token in itertools.pairwise(tokens):
        if token.type == "tr_open" and token.map:
            line = token.map[0] + 1
        if token.type == "inline" and before.type in ("td_open", "th_open"):
            cells.append((line, token.content))
    return cells


def _anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but - and _ dropped, spaces to dashes."""
    tokens = MarkdownIt("commonmark").parse(text)
    anchors: set[str] = set()
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            title = tokens[i + 1].content.lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def test_no_readme_table_cell_runs_to_paragraphs() -> None:
    cells = _cells(README)
    assert len(cells) > 100  # the tables were found: commands, recipe keys, recipes, benchmarks, exit codes
    long = [(line, len(cell), cell[:60]) for line, cell in cells if len(cell) > MAX_CELL]
    assert long == [], f"README table cells over {MAX_CELL} characters (line, length, start): {long}"


def test_the_checker_sees_a_long_cell() -> None:
    text = "| a | b |\n| --- | --- |\n| `x` | " + "word " * 40 + "|\n\n```\n| " + "y" * 300 + " |\n```\n"
    cells = _cells(text)
    assert [len(c) for _, c in cells] == [1, 1, 3, 199]  # the fenced "table" is no table


def test_every_link_inside_the_readme_has_its_heading() -> None:
    anchors = _anchors(README)
    targets = set(re.findall(r"\]\(#([^)]+)\)", README))
    assert targets, "the key table links to its sections"
    assert targets - anchors == set()
