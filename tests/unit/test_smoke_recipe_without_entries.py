"""``buildkit smoke WHEEL --recipe R`` for a recipe without ``smoke:`` (what ``buildkit init`` writes):
it smokes what the recipe has, nothing, and says so as a skipped test (exit 0), before any engine is
asked; a label that selects nothing stays a usage error (issue 36: the reusable workflow's smoke job
ran ``--label cpu`` and failed every such recipe with "no smoke test of the recipe has label(s) cpu")."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from buildkit.cli import cli
from buildkit.errors import UsageError
from buildkit.service.smoke import run_smoke_tests
from tests.helpers.wheel_zip import write_wheel

ROOT = Path(__file__).resolve().parents[2]
RECIPE = f"""\
name: demo
source: {{path: {ROOT / "csrc"}}}
version: {{base: "1.0"}}
python: ["3.13"]
rocm: ["5.7"]
archs: {{list: [gfx90a], toolchain: debian-trixie}}
manylinux: {{policy: manylinux_2_41}}
image: debian-rocm
"""


@pytest.fixture
def wheel_and_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    recipe = tmp_path / "rocm-buildkit.yaml"
    recipe.write_text(RECIPE)
    wheel = write_wheel(
        tmp_path / "demo-1.0-cp313-cp313-manylinux_2_41_x86_64.whl", {"demo/__init__.py": b""}
    )

    def no_engine(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("no container is needed to run no smoke test")

    monkeypatch.setattr("buildkit.service.smoke.connect", no_engine)
    return wheel, recipe


def test_a_recipe_without_smoke_entries_reports_its_smoke_skipped(
    wheel_and_recipe: tuple[Path, Path],
) -> None:
    wheel, recipe = wheel_and_recipe
    (result,) = run_smoke_tests(wheel, recipe=str(recipe))
    assert result.status == "skipped"
    assert result.reason == f"{recipe} has no smoke: entries (`buildkit schema` shows the smoke keys)"
    done = CliRunner().invoke(cli, ["smoke", str(wheel), "--recipe", str(recipe)])
    assert done.exit_code == 0, done.output
    assert "smoke: 0 passed, 0 failed, 1 skipped" in done.output


def test_a_label_that_selects_nothing_is_still_a_usage_error(wheel_and_recipe: tuple[Path, Path]) -> None:
    wheel, recipe = wheel_and_recipe
    with pytest.raises(UsageError, match=r"no smoke test of the recipe has label\(s\) cpu"):
        run_smoke_tests(wheel, recipe=str(recipe), labels=["cpu"])
