"""Every recipe problem in one run: the schema's and those of the rules a schema cannot state, each
at ``file:line:column`` with its hint, sorted by position, exit 3 as for one problem.

``tests/data/recipes/five_typos.yaml`` has five typos (two unknown keys, a misspelt matrix axis and two
enum values); its stderr is kept in ``tests/data/golden/five-typos.txt`` (``BUILDKIT_REGEN_GOLDEN=1``
rewrites it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit.errors import RecipeError
from buildkit.recipe import parse_recipe

DATA = Path(__file__).resolve().parents[1] / "data"
FIVE = DATA / "recipes" / "five_typos.yaml"
GOLDEN = DATA / "golden" / "five-typos.txt"
REGEN = os.environ.get("BUILDKIT_REGEN_GOLDEN") == "1"
REPO = Path(__file__).resolve().parents[2]

GOOD = """\
name: demo
source:
  path: ../csrc
version:
  base: "1.0"
python: ["3.12", "3.13"]
rocm: ["6.4", "7.2"]
archs:
  list: [gfx90a, gfx942]
manylinux:
  policy: manylinux_2_28
image: manylinux_2_28-rocm
"""


def _problems(text: str, tmp_path: Path) -> RecipeError:
    with pytest.raises(RecipeError) as info:
        parse_recipe(text, path=tmp_path / "r.yaml")
    return info.value


def test_five_typos_in_one_run_snapshot() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", FIVE.name],
        cwd=FIVE.parent,
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == ""
    if REGEN:
        GOLDEN.write_text(proc.stderr, encoding="utf-8")
    assert proc.stderr == GOLDEN.read_text(encoding="utf-8"), (
        f"regenerate with BUILDKIT_REGEN_GOLDEN=1 ({GOLDEN})"
    )


def test_five_typos_each_positioned_with_its_hint_in_order() -> None:
    with pytest.raises(RecipeError) as info:
        parse_recipe(FIVE.read_text(encoding="utf-8"), path=FIVE)
    err = info.value
    assert err.exit_code == 3
    got = [(p.line, p.column, p.detail, p.hint) for p in err.problems]
    assert got == [
        (7, 3, "unknown key 'locl' in version", "did you mean 'local'?"),
        (10, 1, "unknown key 'arch' in the recipe", "did you mean 'archs' or 'torch'?"),
        (13, 15, "matrix.zip: unknown axis 'pyton'", "did you mean 'python'?"),
        (
            17,
            20,
            'repair.exclude.sets[0]: expected one of "rocm", "rocm-system", "torch", got a string (\'rcom\')',
            "did you mean 'rocm'?",
        ),
        (
            18,
            17,
            'build_frontend: expected one of "build", "build[uv]", "pip", "uv", got a string (\'buld\')',
            "did you mean 'build' or 'build[uv]'?",
        ),
    ]
    # the error's own position and hint are the first problem's; the text lists every one, then the count
    assert (err.line, err.column, err.hint) == (7, 3, "did you mean 'local'?")
    lines = str(err).splitlines()
    assert [ln for ln in lines if ": error: " in ln] == [
        f"{FIVE}:{p.line}:{p.column}: error: {p.detail}" for p in err.problems
    ]
    assert lines[-1] == f"{FIVE}: 5 problems"


def test_a_misspelt_required_key_is_one_problem_not_two(tmp_path: Path) -> None:
    err = _problems(GOOD.replace("archs:", "arch:"), tmp_path)
    assert [p.detail for p in err.problems] == ["unknown key 'arch' in the recipe"]
    assert "problems" not in str(err)


def test_a_missing_key_without_a_lookalike_is_reported(tmp_path: Path) -> None:
    err = _problems(GOOD.replace('version:\n  base: "1.0"\n', ""), tmp_path)
    assert [p.detail for p in err.problems] == ["the recipe: missing required key 'version'"]


def test_semantic_problems_are_all_reported_sorted(tmp_path: Path) -> None:
    text = GOOD.replace(
        'python: ["3.12", "3.13"]',
        'python: ["3.12", "3.99"]\nenv: {GPU_TARGETS: "gfx90a", CIBW_BUILD: "cp312-*"}',
    ).replace("policy: manylinux_2_28", 'policy: manylinux_2_28\n  ceilings: {GLIBC: "2.99"}')
    err = _problems(text, tmp_path)
    details = [p.detail for p in err.problems]
    assert len(details) == 4, str(err)
    assert details[0].startswith("python[1]: cibuildwheel ") and "cannot build CPython 3.99" in details[0]
    assert details[1].startswith("env.GPU_TARGETS: GPU_TARGETS is an arch variable")
    assert details[2] == "env.CIBW_BUILD: CIBW_BUILD is a cibuildwheel option, not a build variable"
    assert details[3] == "manylinux.ceilings.GLIBC 2.99 is above what manylinux_2_28 allows (2.28)"
    assert [p.line for p in err.problems] == sorted(p.line or 0 for p in err.problems)


def test_schema_and_rule_problems_together(tmp_path: Path) -> None:
    # the schema refuses the unknown key; the rules still check python, the part the schema accepted
    text = GOOD.replace('python: ["3.12", "3.13"]', 'python: ["3.99"]\npythn_extra: 1')
    err = _problems(text, tmp_path)
    assert [p.line for p in err.problems] == [6, 7]
    assert "cannot build CPython 3.99" in err.problems[0].detail
    assert err.problems[1].detail == "unknown key 'pythn_extra' in the recipe"


def test_a_part_the_schema_refused_is_not_checked_again(tmp_path: Path) -> None:
    # torch is malformed: the matrix and version rules that read it are skipped, not misreported
    text = GOOD + "torch: [{version: 2.10}]\nmatrix: {zip: [rocm, torch]}\n"
    err = _problems(text, tmp_path)
    assert [p.detail for p in err.problems] == ["torch[0].version: expected a string, got a number (2.1)"]


def test_a_failed_part_skips_its_dependants(tmp_path: Path) -> None:
    # the duplicate torch series fails torch: matrix.zip (which names torch) is not checked against it
    text = GOOD + 'torch: [{version: "2.10"}, {version: "2.10.1"}]\nmatrix: {zip: [rocm, torch]}\n'
    err = _problems(text, tmp_path)
    assert len(err.problems) == 1
    assert err.problems[0].detail.startswith("torch 2.10 is pinned twice")


def test_combine_sorts_and_drops_repeats() -> None:
    a = RecipeError("b", file="f", line=3, column=1)
    b = RecipeError("a", file="f", line=1, column=5, hint="h")
    c = RecipeError("b", file="f", line=3, column=1)
    err = RecipeError.combine([a, b, c])
    assert [(p.line, p.detail) for p in err.problems] == [(1, "a"), (3, "b")]
    assert (err.line, err.column, err.detail, err.hint) == (1, 5, "a", "h")
    assert str(err) == "f:1:5: error: a\n  hint: h\nf:3:1: error: b\nf: 2 problems"
    assert str(RecipeError.combine([a])) == "f:3:1: error: b"
