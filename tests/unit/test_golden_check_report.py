"""Golden files for the human ``buildkit check`` report, on real PyPI wheels of the pinned corpus
(tests/corpus/wheels.toml: fetched once per machine, sha256-verified): a clean pass, a wheel needing
a library it does not ship, a ROCm wheel gated with the ROCm exclusion set, archs and a release
(warnings summarised, a located rpath error), and that library wheel gated with a recipe's waivers
(tests/data/recipes/waivers.yaml: three findings waived, one waiver unused). ``BUILDKIT_REGEN_GOLDEN=1``
rewrites the files; a change in wording, order or layout shows up as a diff to review."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.corpus.fetch import fetch, load_corpus

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
WAIVERS = Path(__file__).resolve().parents[1] / "data" / "recipes" / "waivers.yaml"
REGEN = os.environ.get("BUILDKIT_REGEN_GOLDEN") == "1"

PYODBC = "pyodbc-5.2.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
CASES = {
    "check-pass": ("MarkupSafe-3.0.2-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", []),
    "check-external": ("pyodbc-5.2.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", []),
    "check-rocm": (
        "jax_rocm60_plugin-0.5.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        ["--exclude-set", "rocm", "--archs", "gfx90a,gfx942,gfx1100", "--rocm", "6.4"],
    ),
}


@pytest.fixture(scope="module")
def corpus() -> dict[str, Path]:
    wanted = {name for name, _ in CASES.values()} | {PYODBC}
    return {w.filename: fetch(w) for w in load_corpus() if w.filename in wanted}


@pytest.mark.parametrize("case", sorted(CASES))
def test_human_check_report(case: str, corpus: dict[str, Path]) -> None:
    filename, flags = CASES[case]
    path = corpus[filename]
    result = subprocess.run(
        [sys.executable, "-m", "buildkit", "check", *flags, path.name],
        cwd=path.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    text = result.stdout + "--- stderr\n" + result.stderr
    golden = GOLDEN / f"{case}.txt"
    if REGEN:
        golden.write_text(text, encoding="utf-8")
    assert result.returncode == (0 if case == "check-pass" else 7)
    assert text == golden.read_text(encoding="utf-8"), f"regenerate with BUILDKIT_REGEN_GOLDEN=1 ({golden})"


def test_human_check_report_with_waivers(corpus: dict[str, Path], tmp_path: Path) -> None:
    """``check --recipe waivers.yaml --job cp312-rocm6.4``, run beside a copy of the recipe (the
    report names the recipe as given: the same text on every machine)."""
    shutil.copyfile(WAIVERS, tmp_path / WAIVERS.name)
    args = ["check", str(corpus[PYODBC]), "--recipe", WAIVERS.name, "--job", "cp312-rocm6.4"]
    result = subprocess.run(
        [sys.executable, "-m", "buildkit", *args], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    text = result.stdout + "--- stderr\n" + result.stderr
    golden = GOLDEN / "check-waived.txt"
    if REGEN:
        golden.write_text(text, encoding="utf-8")
    assert result.returncode == 7  # the unused rpath waiver; the three others pass their findings
    assert text == golden.read_text(encoding="utf-8"), f"regenerate with BUILDKIT_REGEN_GOLDEN=1 ({golden})"
