"""Versions decided before compiling: how a source tree decides its version
(buildkit/source/version.py), and the plan's versions checked against it at ``buildkit plan`` and at
``buildkit build`` before any image or compiler (buildkit/plan/source_version.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit.building.job import BuildOptions
from buildkit.building.run import build_plan
from buildkit.errors import RecipeError
from buildkit.plan.expansion import expand
from buildkit.plan.source_version import with_source_version
from buildkit.recipe import parse_recipe
from buildkit.source.version import VersionDecision, decide_version
from tests.helpers.sources import isolate_pip, sdist, sha256, simple_index

ROOT = Path(__file__).resolve().parents[2]
SCM_PYPROJECT = """\
[build-system]
requires = ["setuptools>=64", "setuptools-scm>=8"]
build-backend = "setuptools.build_meta"

[project]
name = "demo"
dynamic = ["version"]
"""

# case: (files of the tree, expected (kind, version, where))
CASES: dict[str, tuple[dict[str, str], tuple[str, str | None, str]]] = {
    "project version": (
        {
            "pyproject.toml": '[build-system]\nrequires = ["hatchling"]\n\n'
            '[project]\nname = "d"\nversion = "2.1"\n'
        },
        ("fixed", "2.1", "pyproject.toml:6"),
    ),
    "setuptools-scm in requires": ({"pyproject.toml": SCM_PYPROJECT}, ("tool", None, "pyproject.toml")),
    "tool.setuptools_scm": (
        {"pyproject.toml": '[project]\nname = "d"\ndynamic = ["version"]\n\n[tool.setuptools_scm]\n'},
        ("tool", None, "pyproject.toml:5"),
    ),
    "hatch-vcs": (
        {
            "pyproject.toml": '[build-system]\nrequires = ["hatchling", "hatch-vcs"]\n[project]\nname = "d"\n'
            'dynamic = ["version"]\n[tool.hatch.version]\nsource = "vcs"\n'
        },
        ("tool", None, "pyproject.toml:7"),
    ),
    "hatch path": (
        {
            "pyproject.toml": '[project]\nname = "d"\ndynamic = ["version"]\n[tool.hatch.version]\n'
            'path = "d/__about__.py"\n',
            "d/__about__.py": '# SPDX\n__version__ = "0.4.2"\n',
        },
        ("fixed", "0.4.2", "d/__about__.py:2"),
    ),
    "setuptools attr through a relative import": (
        {
            "pyproject.toml": '[project]\nname = "d"\ndynamic = ["version"]\n'
            '[tool.setuptools.dynamic]\nversion = {attr = "d.__version__"}\n',
            "src/d/__init__.py": "from ._version import __version__\n",
            "src/d/_version.py": "'''v'''\n\n__version__: str = '3.0.1'\n",
        },
        ("fixed", "3.0.1", "src/d/_version.py:3"),
    ),
    "setuptools attr reading BUILDKIT_VERSION": (
        {
            "pyproject.toml": '[project]\nname = "d"\ndynamic = ["version"]\n'
            '[tool.setuptools.dynamic]\nversion = {attr = "d.VERSION"}\n',
            "d/__init__.py": 'import os\nVERSION = os.environ.get("BUILDKIT_VERSION", "0")\n',
        },
        ("tool", None, "d/__init__.py:2"),
    ),
    "setuptools file": (
        {
            "pyproject.toml": '[project]\nname = "d"\ndynamic = ["version"]\n'
            '[tool.setuptools.dynamic]\nversion = {file = "VERSION"}\n',
            "VERSION": "\n1.9.0\n",
        },
        ("fixed", "1.9.0", "VERSION:2"),
    ),
    "setup.py literal": (
        {"setup.py": 'from setuptools import setup\n\nsetup(\n    name="d",\n    version="0.9",\n)\n'},
        ("fixed", "0.9", "setup.py:5"),
    ),
    "setup.py name bound above": (
        {"setup.py": 'import setuptools\nVERSION = "5.5"\nsetuptools.setup(name="d", version=VERSION)\n'},
        ("fixed", "5.5", "setup.py:2"),
    ),
    "setup.py module attribute": (
        {
            "setup.py": "import d\nfrom setuptools import setup\nsetup(version=d.__version__)\n",
            "d.py": "__version__ = '7'\n",
        },
        ("fixed", "7", "d.py:1"),
    ),
    "setup.py from import": (
        {
            "setup.py": "from setuptools import setup\n"
            "from d._version import version as v\nsetup(version=v)\n",
            "d/_version.py": "version = '8.1'\n",
        },
        ("fixed", "8.1", "d/_version.py:1"),
    ),
    "setup.py exec of a version file (cupy)": (
        {
            "setup.py": "import os\nfrom setuptools import setup\n"
            "with open(os.path.join('cupy', '_version.py')) as f:\n    exec(f.read())\n"
            "setup(name='cupy', version=__version__)\n",
            "cupy/_version.py": "__version__ = '13.6.0'\n",
            "cupy/__init__.py": "from cupy._version import __version__  # NOQA\n",
            "tests/_version.py": "__version__ = 'not this one'\n",
        },
        ("fixed", "13.6.0", "cupy/_version.py:1"),
    ),
    "setup.py reading BUILDKIT_VERSION (csrc)": (
        {
            "setup.py": (ROOT / "csrc" / "setup.py").read_text(),
            "pyproject.toml": (ROOT / "csrc" / "pyproject.toml").read_text(),
        },
        ("tool", None, "setup.py:12"),
    ),
    "setup.py use_scm_version": (
        {"setup.py": "from setuptools import setup\nsetup(\n  use_scm_version=True,\n)\n"},
        ("tool", None, "setup.py:3"),
    ),
    "setup.cfg literal": (
        {
            "setup.py": "from setuptools import setup\nsetup()\n",
            "setup.cfg": "[metadata]\nname = d\nversion = 4.0\n",
        },
        ("fixed", "4.0", "setup.cfg:3"),
    ),
    "setup.cfg attr": (
        {
            "setup.cfg": "[metadata]\nversion = attr: d.__version__\n",
            "d/__init__.py": "__version__ = '4.1'\n",
        },
        ("fixed", "4.1", "d/__init__.py:1"),
    ),
    "flit module": (
        {
            "pyproject.toml": '[build-system]\nbuild-backend = "flit_core.buildapi"\n'
            '[project]\nname = "fl-it"\n'
            'dynamic = ["version", "description"]\n',
            "fl_it/__init__.py": '"""Doc."""\n\n__version__ = "0.3"\n',
        },
        ("fixed", "0.3", "fl_it/__init__.py:3"),
    ),
    "poetry": (
        {
            "pyproject.toml": '[tool.poetry]\nname = "p"\nversion = "1.1.1"\n'
            '[build-system]\nbuild-backend = "poetry.core.masonry.api"\n'
        },
        ("fixed", "1.1.1", "pyproject.toml:3"),
    ),
    "meson": (
        {
            "pyproject.toml": '[build-system]\nbuild-backend = "mesonpy"\n'
            '[project]\nname = "m"\ndynamic = ["version"]\n',
            "meson.build": "project(\n  'm', 'c',\n  version: '2.2.0',\n)\n",
        },
        ("fixed", "2.2.0", "meson.build:3"),
    ),
    "computed, PKG-INFO seen": (
        {
            "setup.py": "from setuptools import setup\nsetup(version=compute())\n",
            "PKG-INFO": "Metadata-Version: 2.1\nName: d\nVersion: 6.0\n",
        },
        ("unknown", None, ""),
    ),
    "broken pyproject": ({"pyproject.toml": "[project\n"}, ("unknown", None, "")),
    "empty": ({"README": "hi"}, ("unknown", None, "")),
}


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize("case", sorted(CASES))
def test_how_a_tree_decides_its_version(tmp_path: Path, case: str) -> None:
    files, (kind, version, where) = CASES[case]
    decision = decide_version(_tree(tmp_path / "t", files))
    assert (decision.kind, decision.version, decision.where) == (kind, version, where), decision


def test_unknown_says_what_pkg_info_says(tmp_path: Path) -> None:
    files, _ = CASES["computed, PKG-INFO seen"]
    decision = decide_version(_tree(tmp_path, files))
    assert decision.how == "setup.py:2 computes version=compute(); PKG-INFO:3 says Version: 6.0"


def test_the_reference_extension_takes_its_version_from_the_build() -> None:
    assert decide_version(ROOT / "csrc") == VersionDecision(
        "tool", "setup.py reads BUILDKIT_VERSION", file="setup.py", line=12
    )


# ---------------------------------------------------------------- at plan

RECIPE = """\
name: demo
source: {source}
version:
  base: "{base}"
  local: "rocm{{rocm}}.manylinux.{{policy}}"
python: ["3.12"]
rocm: ["6.4", "7.0"]
archs: {{list: [gfx942]}}
manylinux: {{policy: manylinux_2_28}}
image: manylinux_2_28-rocm
repair: {{exclude: {{sets: [rocm]}}}}
"""
STATIC = '[build-system]\nrequires = ["setuptools"]\n\n[project]\nname = "demo"\nversion = "2.0"\n'


def _plan_cli(
    recipe: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_ROCM_ARCH", "GPU_ARCHS")}
    environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), environ.get("PYTHONPATH", "")) if p)
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", str(recipe), *args],
        capture_output=True,
        text=True,
        env=environ,
        check=False,
    )


def _project(tmp_path: Path, files: dict[str, str], base: str = "2.0") -> Path:
    _tree(tmp_path / "proj", files)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(RECIPE.format(source="{path: proj}", base=base))
    return recipe


def test_reference_recipe_plans_without_a_version_note(tmp_path: Path) -> None:
    # --out: an empty folder: wheels a `./dev build` left in dist/ (plan's stale-wheel notes) do not count
    out = _plan_cli(ROOT / "recipes" / "reference-trixie.yaml", "--format", "json", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert not [n for n in json.loads(out.stdout)["notes"] if "version" in n]


def test_a_static_version_cannot_carry_the_local_label(tmp_path: Path) -> None:
    recipe = _project(tmp_path, {"pyproject.toml": STATIC})
    out = _plan_cli(recipe)
    assert out.returncode == 3, out.stderr
    assert out.stdout == ""
    assert out.stderr.startswith(
        f"{recipe}:5:10: error: proj/pyproject.toml:6 fixes the version 2.0; the plan's "
        "2.0+rocm6.4.manylinux.2.28 (and 1 more) cannot be carried\n"
    )
    assert out.stderr.endswith(
        '  hint: set version.base: "2.0" and remove version.local, or make the build decide the version: '
        'read BUILDKIT_VERSION (setup.py: version=os.environ["BUILDKIT_VERSION"]) or use setuptools-scm '
        "(it reads SETUPTOOLS_SCM_PRETEND_VERSION), both set to the planned version\n"
    )


def test_a_static_version_other_than_the_base_is_at_version_base(tmp_path: Path) -> None:
    recipe = _project(tmp_path, {"pyproject.toml": STATIC}, base="2.1")
    with pytest.raises(RecipeError) as info:
        with_source_version(expand(parse_recipe(recipe.read_text(), path=recipe), env={}))
    err = info.value
    assert (err.line, err.column) == (4, 9)
    assert err.detail.startswith("proj/pyproject.toml:6 fixes the version 2.0, not the plan's 2.1+rocm6.4")
    assert err.hint is not None and err.hint.startswith(
        'set version.base: "2.0" and remove version.local, or '
    )


def test_a_matching_static_version_without_a_label_passes(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    _tree(tmp_path / "proj", {"pyproject.toml": STATIC})
    recipe.write_text(
        RECIPE.format(source="{path: proj}", base="2.0")
        .replace('  local: "rocm{rocm}.manylinux.{policy}"\n', "")
        .replace('rocm: ["6.4", "7.0"]', 'rocm: ["6.4"]')  # one job: two would make one wheel file
    )
    plan = expand(parse_recipe(recipe.read_text(), path=recipe), env={})
    assert with_source_version(plan) == plan


def test_a_setuptools_scm_project_passes(tmp_path: Path) -> None:
    recipe = _project(tmp_path, {"pyproject.toml": SCM_PYPROJECT})
    out = _plan_cli(recipe, "--format", "json")
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert json.loads(out.stdout)["notes"] == []


def test_an_unknown_rule_is_a_plan_note(tmp_path: Path) -> None:
    recipe = _project(tmp_path, {"setup.py": "from setuptools import setup\nsetup(version=compute())\n"})
    out = _plan_cli(recipe, "--format", "json")
    assert out.returncode == 0, out.stderr
    (note,) = json.loads(out.stdout)["notes"]
    assert note == (
        "cannot tell how the source decides its version (setup.py:2 computes version=compute()); if it "
        "fixes one other than the planned 2.0+rocm6.4.manylinux.2.28, the build fails after compiling: "
        "make it read BUILDKIT_VERSION"
    )
    assert f"buildkit plan: note: {note}\n" in out.stderr


def test_a_missing_path_source_is_a_recipe_error_at_plan(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(RECIPE.format(source="{path: nowhere}", base="2.0"))
    out = _plan_cli(recipe)
    assert out.returncode == 3
    assert f"{recipe}:2:16: error: source.path: {tmp_path / 'nowhere'} is not a directory" in out.stderr


def test_an_sdist_source_is_fetched_at_plan_and_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, data = sdist("demo", "2.0", {"pyproject.toml": STATIC, "PKG-INFO": "Version: 2.0\n"})
    index = simple_index(tmp_path / "idx", "demo", {name: data})
    isolate_pip(monkeypatch, tmp_path / "cache", index_url=index.as_uri())
    recipe = tmp_path / "r.yaml"
    recipe.write_text(RECIPE.format(source=f'{{sdist: "demo==2.0", sha256: {sha256(data)}}}', base="2.0"))
    out = _plan_cli(recipe, env=dict(os.environ))
    assert out.returncode == 3, out.stderr
    assert f"fetching {name} from {index.as_uri()}\n" in out.stderr
    assert (
        f"{recipe}:5:10: error: pyproject.toml:6 (in the sdist demo==2.0) fixes the version 2.0; the plan's "
        "2.0+rocm6.4.manylinux.2.28 (and 1 more) cannot be carried"
    ) in out.stderr
    assert (tmp_path / "cache" / "rocm-buildkit" / "sources" / sha256(data) / name).is_file()


# ---------------------------------------------------------------- at build, before any engine


def _options(tmp_path: Path) -> BuildOptions:
    return BuildOptions(out_dir=tmp_path / "dist", log_dir=tmp_path / "logs", parallel_jobs=1)


def test_build_refuses_before_connecting_to_an_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipe_path = _project(tmp_path, {"pyproject.toml": STATIC})
    recipe = parse_recipe(recipe_path.read_text(), path=recipe_path)
    plan = expand(recipe, env={})

    def no_engine() -> None:
        raise AssertionError("the version check comes before the engine")

    monkeypatch.setattr("buildkit.building.run.connect", no_engine)
    with pytest.raises(
        RecipeError,
        match=r"proj/pyproject.toml:6 fixes the version 2.0; "
        r"the plan's 2\.0\+rocm7\.0\.manylinux\.2\.28 cannot be carried\n",
    ):
        build_plan(recipe, plan, ["cp312-rocm7.0"], _options(tmp_path), echo=print)


def test_a_git_source_is_checked_once_fetched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _tree(tmp_path / "repo", {"pyproject.toml": STATIC})
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    for cmd in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "v2"], ["tag", "v2.0"]):
        subprocess.run(["git", "-C", str(repo), *cmd], check=True, env=env, capture_output=True)
    recipe_path = tmp_path / "r.yaml"
    recipe_path.write_text(RECIPE.format(source=f"{{git: {repo.as_uri()}, ref: v2.0}}", base="2.0"))
    recipe = parse_recipe(recipe_path.read_text(), path=recipe_path)
    plan = expand(recipe, env={})
    assert with_source_version(plan) == plan  # plan does not clone
    monkeypatch.setattr("buildkit.building.run.connect", lambda: pytest.fail("no engine before the check"))
    with pytest.raises(RecipeError) as info:
        build_plan(recipe, plan, [], _options(tmp_path), echo=print)
    assert info.value.detail.startswith(
        f"pyproject.toml:6 (in {repo.as_uri()} at v2.0) fixes the version 2.0; the plan's 2.0+rocm6.4"
    )
    assert (info.value.line, info.value.column) == (5, 10)
