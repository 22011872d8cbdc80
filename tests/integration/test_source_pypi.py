"""Real sdists from PyPI, pinned by version and sha256, through the recipe: fetched the way a build
fetches them (``fetch_source``), cached, reused without pip or the network, and their version rules
judged at ``buildkit plan``. pip is configured with PyPI only (none of this machine's config files
or ``PIP_*``); the CA bundle is the machine's (``SSL_CERT_FILE``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit import pyindex
from buildkit.building.staging import fetch_source
from buildkit.recipe import parse_recipe
from buildkit.source import fetch
from tests.helpers.sources import isolate_pip

ROOT = Path(__file__).resolve().parents[2]
#: (requirement, sha256 of the sdist PyPI lists): small sdists with three version rules
SIX = ("six==1.16.0", "1e61c37477a1626458e36f7b1d82aa5c9b094fa4802892072e49de9c60c4c926")  # six.py literal
TOMLI = ("tomli==2.0.1", "de526c12914f0c550d15924c62d72abc48d6fe7364aa87328337a31007fe8a4f")  # [project]
INICONFIG = (
    "iniconfig==2.0.0",
    "2d91e135bf72d31a410b17c16da610a82cb55f6b0477d1a902134b24a455b8b3",
)  # hatch-vcs

RECIPE = """\
name: {name}
source:
  sdist: "{requirement}"
  sha256: {sha256}
version:
  base: "{base}"
{local}python: ["3.12"]
rocm: ["6.4"]
archs: {{list: [gfx942]}}
manylinux: {{policy: manylinux_2_28}}
image: manylinux_2_28-rocm
repair: {{exclude: {{sets: [rocm]}}}}
"""


@pytest.fixture
def pypi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip configured with PyPI only; the source cache in tmp_path. Returns the cache folder."""
    isolate_pip(monkeypatch, tmp_path / "cache", index_url="https://pypi.org/simple")
    return tmp_path / "cache" / "rocm-buildkit" / "sources"


def _recipe(tmp_path: Path, pin: tuple[str, str], local: bool = True) -> Path:
    requirement, digest = pin
    name, _, base = requirement.partition("==")
    path = tmp_path / f"{name}.yaml"
    label = '  local: "rocm{rocm}"\n' if local else ""
    path.write_text(RECIPE.format(name=name, requirement=requirement, sha256=digest, base=base, local=label))
    return path


def _plan(recipe: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", str(recipe), "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_a_pypi_sdist_is_fetched_cached_and_reused_without_pip(
    pypi: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipe = parse_recipe(_recipe(tmp_path, SIX).read_text(), path=tmp_path / "six.yaml")
    said: list[str] = []
    first = fetch_source(recipe, tmp_path / "a", said.append)
    assert said == ["fetching six-1.16.0.tar.gz from https://pypi.org/simple"]
    assert (first / "six.py").is_file() and (first / "setup.py").is_file() and (first / "PKG-INFO").is_file()
    assert (pypi / SIX[1] / "six-1.16.0.tar.gz").is_file()

    def no_pip() -> None:
        raise AssertionError("a cache hit must not ask pip")

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cache hit must not touch the network")

    monkeypatch.setattr(fetch, "pip_config", no_pip)
    monkeypatch.setattr(pyindex.IndexClient, "get", no_network)
    second = fetch_source(recipe, tmp_path / "b", said.append)
    assert len(said) == 1
    assert sorted(p.relative_to(second) for p in second.rglob("*")) == sorted(
        p.relative_to(first) for p in first.rglob("*")
    )
    assert (second / "six.py").read_bytes() == (first / "six.py").read_bytes()


def test_a_wrong_pin_names_both_hashes_at_the_sha256_value(pypi: Path, tmp_path: Path) -> None:
    wrong = (SIX[0], "ab" * 32)
    out = _plan(_recipe(tmp_path, wrong))
    assert out.returncode == 3, out.stderr
    assert (
        f"{tmp_path / 'six.yaml'}:4:11: error: source.sha256: six-1.16.0.tar.gz from https://pypi.org/simple "
        f"is listed by the index with sha256 {SIX[1]}, but the recipe pins sha256 {'ab' * 32}"
    ) in out.stderr
    assert not (pypi / ("ab" * 32)).exists()


def test_six_fixes_its_version_in_six_py(pypi: Path, tmp_path: Path) -> None:
    out = _plan(_recipe(tmp_path, SIX))
    assert out.returncode == 3, out.stderr
    assert (
        f"{tmp_path / 'six.yaml'}:7:10: error: six.py:32 (in the sdist six==1.16.0) fixes the version "
        "1.16.0; the plan's 1.16.0+rocm6.4 cannot be carried"
    ) in out.stderr
    plain = _plan(_recipe(tmp_path, SIX, local=False))  # the fix the hint gives
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["notes"] == []
    assert [j["version"] for j in json.loads(plain.stdout)["jobs"]] == ["1.16.0"]


def test_tomli_fixes_its_version_in_pyproject(pypi: Path, tmp_path: Path) -> None:
    out = _plan(_recipe(tmp_path, TOMLI))
    assert out.returncode == 3, out.stderr
    assert "error: pyproject.toml:7 (in the sdist tomli==2.0.1) fixes the version 2.0.1;" in out.stderr


def test_iniconfig_takes_its_version_from_the_build(pypi: Path, tmp_path: Path) -> None:
    out = _plan(_recipe(tmp_path, INICONFIG))
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    assert plan["notes"] == []
    assert [j["version"] for j in plan["jobs"]] == ["2.0.0+rocm6.4"]
    assert plan["recipe"]["source"] == {"sdist": INICONFIG[0], "sha256": INICONFIG[1]}
