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


def _doubling_merges(levels: int) -> str:
    """``{<<: [&a0 {k: 1}, *a0]}`` nested ``levels`` deep: 2**levels merged entries."""
    inner = "{k: 1}"
    for i in range(levels):
        inner = f"{{<<: [&a{i} {inner}, *a{i}]}}"
    return inner


def test_alias_bomb_is_bounded(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    with pytest.raises(RecipeError, match="more than 200000 values"):
        parse_recipe("\n".join(lines) + "\n", path=tmp_path / "bomb.yaml")


def _nested_mapping(levels: int) -> str:
    return "".join(" " * i + "a:\n" for i in range(levels)) + " " * levels + "1\n"


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        # the 64th bracket would hold values 65 levels below the root
        pytest.param("name: " + "[" * 5000 + "]" * 5000 + "\n", 1, 70, id="flow-sequence"),
        pytest.param("name: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n", 1, 259, id="flow-mapping"),
        pytest.param(_nested_mapping(1000), 65, 65, id="block-mapping"),
    ],
)
def test_deep_nesting_is_a_recipe_error_where_it_exceeds_the_limit(
    tmp_path: Path, text: str, line: int, column: int
) -> None:
    with pytest.raises(RecipeError) as info:
        parse_recipe(text, path=tmp_path / "deep.yaml")
    assert (info.value.line, info.value.column) == (line, column), str(info.value)
    assert info.value.detail == "the recipe nests deeper than 64 levels"
    assert info.value.exit_code == 3


def test_nesting_up_to_the_limit_is_read(tmp_path: Path) -> None:
    # 64 levels parse (and then fail the schema, as any odd name does), 65 do not
    with pytest.raises(RecipeError) as info:
        parse_recipe("name: " + "[" * 63 + "x" + "]" * 63 + "\n", path=tmp_path / "r.yaml")
    assert "nests deeper" not in info.value.detail


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # merge keys chained past the depth bound, doubling per level, nested inside one another
        pytest.param(
            "m0: &m0 {x: 1}\n" + "".join(f"m{i}: &m{i} {{<<: *m{i - 1}}}\n" for i in range(1, 3000)),
            "more than 200000 values or 64 levels",
            id="merge-chain",
        ),
        pytest.param(
            "x: " + _doubling_merges(20) + "\n", "more than 200000 values or 64 levels", id="merge-bomb"
        ),
        pytest.param(
            "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 3000)),
            "more than 200000 values or 64 levels",
            id="alias-chain",
        ),
        # a key of ten to the 9th list elements (str() of it would never end)
        pytest.param(
            "? &k0 [x, x, x, x, x, x, x, x, x, x]\n: 1\n"
            + "".join(f"? &k{i} [{', '.join([f'*k{i - 1}'] * 10)}]\n: 1\n" for i in range(1, 9)),
            "a mapping key must be a name, not a sequence",
            id="key-bomb",
        ),
    ],
)
def test_alias_and_merge_bombs_are_bounded(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(RecipeError, match=message) as info:
        parse_recipe(text, path=tmp_path / "bomb.yaml")
    assert info.value.line is not None and info.value.column is not None


def test_merge_keys_still_merge(tmp_path: Path) -> None:
    from buildkit.recipe.yamlspan import load_with_spans

    data, spans = load_with_spans("b: &b {x: 1}\nc: &c {y: 2}\nd: {<<: [*b, *c], z: 3}\n", "r.yaml")
    assert data["d"] == {"x": 1, "y": 2, "z": 3}
    assert spans.key(("d", "x")) == (1, 8)  # where the merged entry was written
    with pytest.raises(RecipeError, match="takes a mapping or a list of mappings, not a scalar"):
        load_with_spans("d: {<<: 1}\n", "r.yaml")


@pytest.mark.parametrize(
    "command",
    [
        ["plan"],
        ["build", "--out", "{out}"],
        ["check", "{wheel}", "--job", "cp312-rocm7.2"],
        ["archs", "--rocm", "7.2"],
    ],
    ids=["plan", "build", "check", "archs"],
)
def test_deep_recipe_exits_3_without_traceback_from_every_command(tmp_path: Path, command: list[str]) -> None:
    recipe = tmp_path / "deep.yaml"
    recipe.write_text("name: " + "[" * 5000 + "]" * 5000 + "\n")
    wheel = tmp_path / "demo-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    args = [a.format(out=tmp_path / "dist", wheel=wheel) for a in command]
    args = (
        [*args[:1], str(recipe), *args[1:]]
        if command[0] in ("plan", "build")
        else [*args, "--recipe", str(recipe)]
    )
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", *args], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr
    assert f"{recipe}:1:70: error: the recipe nests deeper than 64 levels" in proc.stderr
    assert not (tmp_path / "dist").exists()


def test_several_problems_are_counted(tmp_path: Path) -> None:
    text = (BAD.parent / "bad" / "unknown_top_key.yaml").read_text().replace("name: demo", "nam: demo")
    # every problem is listed (issue 27): the two misspelt keys, not their missing twins as well
    with pytest.raises(RecipeError, match=r"r\.yaml: 2 problems$") as info:
        parse_recipe(text, path=tmp_path / "r.yaml")
    assert info.value.line == 2  # 'nam' comes first in the file
    assert info.value.hint == "did you mean 'name'?"
    assert [p.line for p in info.value.problems] == [2, 7]
