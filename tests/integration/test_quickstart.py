"""The README's quick start as a new user runs it (issue 27): rocm-buildkit built into a wheel, installed
in a fresh virtual environment (no checkout on its path), ``buildkit init`` on a real project's PyPI sdist
(CuPy 13.6.0, the archive recipes/cupy.yaml pins: from the source cache, else PyPI), ``buildkit plan`` of
what it wrote, and the five-typo recipe's problems all in one run, as in the README. The minimal recipe
of the README plans as it is."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from buildkit.recipe import load_recipe
from buildkit.source.tree import fetch_archive
from tests.helpers.quickstart import ROOT, installed_venv, readme, readme_section, venv_env

README = readme()

pytestmark = pytest.mark.slow


def _section(title: str, fence: str) -> str:
    return readme_section(title, fence)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return installed_venv(tmp_path_factory.mktemp("quickstart"))


def _buildkit(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = venv_env(venv)
    return subprocess.run(
        ["buildkit", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def test_the_installed_command_is_the_wheels(venv: Path, tmp_path: Path) -> None:
    proc = _buildkit(venv, "--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("buildkit, version ")
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import buildkit; print(buildkit.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert where.stdout.startswith(str(venv))  # not this checkout
    # the reference texts a message points to are in the installed package
    assert _buildkit(venv, "rules", cwd=tmp_path).stdout.startswith("# Gate rules")
    assert '"title": "rocm-buildkit recipe"' in _buildkit(venv, "schema", cwd=tmp_path).stdout


def test_quick_start_on_a_real_sdist(venv: Path, tmp_path: Path) -> None:
    quick = _section("Quick start (five minutes)", "bash")
    assert "buildkit init ." in quick and "buildkit plan rocm-buildkit.yaml" in quick
    archive = fetch_archive(load_recipe(ROOT / "recipes" / "cupy.yaml"))
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path, filter="data")
    project = tmp_path / "cupy-13.6.0"
    init = _buildkit(venv, "init", ".", cwd=project)
    assert init.returncode == 0, init.stderr
    assert "wrote rocm-buildkit.yaml for cupy" in init.stderr
    recipe = yaml.safe_load((project / "rocm-buildkit.yaml").read_text())
    # CuPy fixes its version in cupy/_version.py: init writes it as the base, without a local label
    assert recipe["name"] == "cupy" and recipe["version"] == {"base": "13.6.0"}
    assert recipe["source"] == {"path": "."} and recipe["repair"] == {"exclude": {"sets": ["rocm"]}}
    plan = _buildkit(venv, "plan", "rocm-buildkit.yaml", cwd=project)
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.startswith("recipe rocm-buildkit.yaml (cupy, sha256 ")
    assert f"-rocm{recipe['rocm'][0]}  " in plan.stdout and "13.6.0" in plan.stdout


def test_five_typos_in_one_run_as_the_readme_shows(venv: Path, tmp_path: Path) -> None:
    source = ROOT / "tests" / "data" / "recipes" / "five_typos.yaml"
    (tmp_path / "five_typos.yaml").write_text(source.read_text())
    proc = _buildkit(venv, "plan", "five_typos.yaml", cwd=tmp_path)
    assert proc.returncode == 3
    assert proc.stderr == (ROOT / "tests" / "data" / "golden" / "five-typos.txt").read_text()
    start = README.index("```\nfive_typos.yaml:") + 4
    shown = [line for line in README[start : README.index("```\n", start)].splitlines() if line != "..."]
    assert len(shown) == 7
    for line in shown:
        assert line in proc.stderr.splitlines(), line


def test_the_minimal_recipe_plans(venv: Path, tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    (tmp_path / "r.yaml").write_text(_section("A minimal recipe", "yaml"))
    proc = _buildkit(venv, "plan", "r.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "cp312-rocm6.4" in proc.stdout and "cp312-rocm7.2" in proc.stdout
    assert "repair.exclude is empty" not in proc.stderr
