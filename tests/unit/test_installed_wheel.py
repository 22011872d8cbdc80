"""The package as ``pip install rocm-buildkit`` ships it, not the checkout: build the project's own
wheel, install it (without dependencies, which are this environment's) into a folder, and run
``buildkit check`` and ``buildkit plan`` from there. A subpackage or a module missing from the
wheel, or package data left out (schemas, ROCm release data), fails here, where the editable install
of the test run would hide it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers.wheel_zip import write_wheel

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("own-wheel")
    source = work / "source"  # a copy: setuptools writes build/ and *.egg-info into the project folder
    for part in ("buildkit", "docker"):
        shutil.copytree(REPO / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work), str(source)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = work.glob("rocm_buildkit-*.whl")
    target = work / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    return target


def _buildkit(target: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(target)}
    command = [sys.executable, "-m", "buildkit", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_the_installed_package_is_the_wheel_not_the_checkout(installed: Path, tmp_path: Path) -> None:
    probe = subprocess.run(
        [sys.executable, "-c", "import buildkit.gate.evaluate as m; print(m.__file__)"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(installed)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip().startswith(str(installed))


def test_check_and_plan_run_from_the_installed_wheel(installed: Path, tmp_path: Path) -> None:
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    write_wheel(wheel, {"demo/__init__.py": b""})
    assert zipfile.is_zipfile(wheel)
    checked = _buildkit(installed, "check", "--json", str(wheel), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert '"schema": "rocm-buildkit/check-report"' in checked.stdout
    recipe = REPO / "recipes" / "reference-trixie.yaml"
    planned = _buildkit(installed, "plan", str(recipe), "--format", "json", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert '"jobs"' in planned.stdout
