"""The malformed-recipe corpus: every file under tests/data/recipes/bad/ states on its first line
the error it must produce (``# expect: LINE:COL: message | hint: text``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from buildkit.errors import RecipeError
from buildkit.recipe import load_recipe, parse_recipe

BAD = Path(__file__).parent.parent / "data" / "recipes" / "bad"
CORPUS = sorted(BAD.glob("*.yaml"))


def _expectation(path: Path) -> tuple[int, int, str, str | None]:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name}: first line must be '# expect: L:C: message'"
    spec = first[len("# expect: ") :]
    message, _, hint = spec.partition(" | hint: ")
    line, column, text = message.split(":", 2)
    return int(line), int(column), text.strip(), hint or None


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_bad_recipe_message(path: Path) -> None:
    line, column, message, hint = _expectation(path)
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    err = info.value
    assert (err.line, err.column) == (line, column), str(err)
    assert err.detail == message
    assert err.hint == hint
    assert str(err).startswith(f"{path}:{line}:{column}: error: {message}")
    assert err.exit_code == 3


def test_cli_exit_code_3_without_traceback() -> None:
    path = BAD / "python_float.yaml"
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", str(path)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{path}:7:10: error: python[0]: expected a string" in proc.stderr
    assert 'quote it: "3.10"' in proc.stderr
    assert proc.stdout == ""


def test_missing_file_is_a_recipe_error(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="cannot read the recipe"):
        load_recipe(tmp_path / "nope.yaml")


def test_not_utf8(tmp_path: Path) -> None:
    p = tmp_path / "latin1.yaml"
    p.write_bytes("name: d\xe9mo\n".encode("latin-1"))
    with pytest.raises(RecipeError, match="not UTF-8"):
        load_recipe(p)


def test_alias_bomb_is_bounded(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    with pytest.raises(RecipeError, match="more than 200000 values"):
        parse_recipe("\n".join(lines) + "\n", path=tmp_path / "bomb.yaml")


def test_several_problems_are_counted(tmp_path: Path) -> None:
    text = (BAD.parent / "bad" / "unknown_top_key.yaml").read_text().replace("name: demo", "nam: demo")
    with pytest.raises(RecipeError, match=r"\(and 3 more problems\)") as info:
        parse_recipe(text, path=tmp_path / "r.yaml")
    assert info.value.line == 2  # 'nam' comes first in the file
    assert info.value.hint == "did you mean 'name'?"
