"""The README reads as a user's guide (issue 27): no table cell runs to paragraphs. Long explanations are
short sections or lists below a table, and the table links to them. Issue 36: the README is the user's
(install, the quick start, a minimal recipe, CI, troubleshooting) in at most 300 lines; the reference (every
command, key, rule, exit code) is docs/REFERENCE.md, held to the same rules. Parsed with markdown-it-py
(rich's Markdown parser, installed with it) so that code fences, escaped pipes and code spans count as
GitHub renders them."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
REFERENCE = (ROOT / "docs" / "REFERENCE.md").read_text(encoding="utf-8")
MAX_CELL = 160
MAX_README_LINES = 300


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


@pytest.mark.parametrize("name", ["README.md", "docs/REFERENCE.md"])
def test_no_readme_table_cell_runs_to_paragraphs(name: str) -> None:
    cells = _cells((ROOT / name).read_text(encoding="utf-8"))
    long = [(line, len(cell), cell[:60]) for line, cell in cells if len(cell) > MAX_CELL]
    assert long == [], f"{name} table cells over {MAX_CELL} characters (line, length, start): {long}"


def test_the_reference_keeps_its_tables() -> None:
    assert len(_cells(REFERENCE)) > 100  # commands, recipe keys, recipes, exit codes


def test_the_readme_is_a_users_guide_of_at_most_300_lines() -> None:
    """Issue 36: the README was 825 lines, most of it reference."""
    assert len(README.splitlines()) <= MAX_README_LINES
    sections = re.findall(r"^## (.+)$", README, flags=re.M)
    for wanted in ("Install", "Quick start (five minutes)", "A minimal recipe", "In GitHub Actions"):
        assert wanted in sections
    trouble = README.split("## Troubleshooting", 1)[1].split("\n## ", 1)[0]
    for topic in ("No registry", "No GPU", "glibc"):
        assert topic in trouble
    assert "](docs/REFERENCE.md)" in README


def test_the_checker_sees_a_long_cell() -> None:
    text = "| a | b |\n| --- | --- |\n| `x` | " + "word " * 40 + "|\n\n```\n| " + "y" * 300 + " |\n```\n"
    cells = _cells(text)
    assert [len(c) for _, c in cells] == [1, 1, 3, 199]  # the fenced "table" is no table


def test_every_link_inside_the_readme_has_its_heading() -> None:
    anchors = _anchors(REFERENCE)
    targets = set(re.findall(r"\]\(#([^)]+)\)", REFERENCE))
    assert targets, "the key table links to its sections"
    assert targets - anchors == set()
    # the README's links into the reference, and to files, hold
    assert set(re.findall(r"\]\(docs/REFERENCE\.md#([^)]+)\)", README)) - anchors == set()
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README):
        assert (ROOT / target).exists(), target
