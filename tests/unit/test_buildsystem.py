"""The build environment's additions (the torch pin of torch jobs, the recipe's build_requires),
written into the staged pyproject.toml, and the refusal of a torch extension without a torch pin."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from buildkit.building import buildsystem, cibw
from buildkit.building.requirements import marker_environment
from buildkit.errors import BuildFailed, RecipeError
from buildkit.plan.expansion import expand
from buildkit.plan.models import Job
from buildkit.recipe import Recipe, load_recipe

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def _recipe(tmp: Path, name: str = "reference-trixie.yaml", **changes: Any) -> tuple[Recipe, Job]:
    data = yaml.safe_load((ROOT / "recipes" / name).read_text())
    data["source"] = {"path": str(tmp / "src")}
    data.pop("checks", None)
    data.update(changes)
    path = tmp / "recipe.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    recipe = load_recipe(path)
    return recipe, expand(recipe, env={}).jobs[0]


def _aiter_job() -> Job:
    return expand(load_recipe(ROOT / "recipes" / "aiter.yaml"), env={}).job("cp312-rocm7.2-torch2.10")


# --------------------------------------------------------------------------- what is added
def test_a_torch_job_gets_its_pin_unless_the_project_lists_torch() -> None:
    job = _aiter_job()
    extras = buildsystem.extra_requires(job, ["setuptools>=77", "ninja"])
    assert [(e.requirement, e.index) for e in extras] == [("torch==2.10.*", None)]
    assert buildsystem.extra_requires(job, ["setuptools", "torch>=2"]) == []
    # a torch the project lists only for another platform is not the job's: the pin is still added
    env = marker_environment(job)
    other = ["setuptools", "torch>=2; platform_machine == 'aarch64'"]
    assert [e.requirement for e in buildsystem.extra_requires(job, other, env)] == ["torch==2.10.*"]
    assert buildsystem.extra_requires(job, ["torch>=2; platform_machine == 'x86_64'"], env) == []


def test_build_requires_follow_the_torch_pin(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    _, job = _recipe(tmp_path, build_requires=["tomli-w==1.2.0", "cython>=3"])
    extras = buildsystem.extra_requires(job, ["setuptools>=77"])
    assert [(e.requirement, e.origin, e.index) for e in extras] == [
        ("tomli-w==1.2.0", "the recipe's build_requires", 0),
        ("cython>=3", "the recipe's build_requires", 1),
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["not a requirement!"], "build_requires[0]: 'not a requirement!' is not a PEP 508 requirement"),
        (["torch==2.10.*"], "build_requires[0]: torch is not a build requirement to add by hand"),
        (["Cython>=3", "cython<4"], "build_requires[1]: cython is already build_requires[0]"),
    ],
)
def test_bad_build_requires_are_recipe_errors_at_their_line(
    tmp_path: Path, value: list[str], message: str
) -> None:
    (tmp_path / "src").mkdir()
    with pytest.raises(RecipeError) as info:
        _recipe(tmp_path, build_requires=value)
    assert info.value.exit_code == 3
    assert message in str(info.value)
    assert info.value.line is not None and info.value.file is not None


# --------------------------------------------------------------------------- the staged pyproject
def _extras(*reqs: str) -> list[buildsystem.Extra]:
    return [buildsystem.Extra(r, "test") for r in reqs]


def test_the_reference_projects_pyproject_keeps_everything_but_gains_the_requirements(tmp_path: Path) -> None:
    """Our own csrc/pyproject.toml, a real file with [project], [tool.*] tables and comments."""
    shutil.copytree(ROOT / "csrc", tmp_path / "src", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    before_text = (tmp_path / "src" / "pyproject.toml").read_text()
    before = tomllib.loads(before_text)
    assert buildsystem.add_build_requires(tmp_path / "src", _extras("torch==2.13.*", "tomli-w==1.2.0"))
    after_text = (tmp_path / "src" / "pyproject.toml").read_text()
    after = tomllib.loads(after_text)
    assert after["build-system"]["requires"] == [
        *before["build-system"]["requires"],
        "torch==2.13.*",
        "tomli-w==1.2.0",
    ]
    assert after["build-system"].get("build-backend") == before["build-system"].get("build-backend")
    assert {k: v for k, v in after.items() if k != "build-system"} == {
        k: v for k, v in before.items() if k != "build-system"
    }
    # everything outside the table is kept byte for byte
    rest_before, _ = buildsystem._without_build_system(before_text)
    rest_after, _ = buildsystem._without_build_system(after_text)
    assert rest_after.replace("\n\n", "\n") == rest_before.replace("\n\n", "\n")
    assert (ROOT / "csrc" / "pyproject.toml").read_text() == before_text  # the user's tree untouched


@pytest.mark.parametrize(
    "text",
    [
        '[project]\nname = "x"\nversion = "1"\n',  # no [build-system] table: PEP 518's defaults
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
        'backend-path = ["."]\n\n[tool.x]\n# a comment\nkey = 1\n',
        '# leading comment\n[tool.a]\nb = "c"\n\n[ build-system ]  # spaced header\nrequires = []\n',
    ],
)
def test_the_table_is_rendered_again_and_checked(tmp_path: Path, text: str) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "pyproject.toml").write_text(text)
    before = tomllib.loads(text)
    buildsystem.add_build_requires(src, _extras("cython==3.1.2"))
    after = tomllib.loads((src / "pyproject.toml").read_text())
    requires = buildsystem.project_requires(before)
    assert after["build-system"]["requires"] == [*requires, "cython==3.1.2"]
    for key in ("build-backend", "backend-path"):
        assert after["build-system"].get(key) == before.get("build-system", {}).get(key)
    assert {k: v for k, v in after.items() if k != "build-system"} == {
        k: v for k, v in before.items() if k != "build-system"
    }


def test_a_source_without_pyproject_gets_pep_518s_defaults_plus_the_additions(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    buildsystem.add_build_requires(src, _extras("torch==2.13.*"))
    data = tomllib.loads((src / "pyproject.toml").read_text())
    assert data == {"build-system": {"requires": ["setuptools>=40.8.0", "wheel", "torch==2.13.*"]}}
    assert not buildsystem.add_build_requires(tmp_path, [])  # nothing to add: nothing written


def test_a_table_that_cannot_be_rewritten_faithfully_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    # dotted keys at the top level define the same table without a header
    text = 'build-system.requires = ["setuptools"]\n[project]\nname = "x"\n'
    (src / "pyproject.toml").write_text(text)
    with pytest.raises(BuildFailed, match="cannot be rewritten faithfully"):
        buildsystem.add_build_requires(src, _extras("cython"))
    assert (src / "pyproject.toml").read_text() == text  # nothing half-written


# --------------------------------------------------------------------------- needs torch, has none
SETUP_TOLERATING_NO_TORCH = """\
import os
from setuptools import setup

PREBUILD = int(os.environ.get("PREBUILD_KERNELS", "0"))
if PREBUILD:
    try:
        import torch as _
    except ImportError:
        print("torch not installed, skipping the kernels")
setup(name="x")
"""


@pytest.mark.parametrize(
    ("files", "where"),
    [
        ({"setup.py": SETUP_TOLERATING_NO_TORCH}, "setup.py:7: import torch as _"),
        (
            {"setup.py": "from torch.utils.cpp_extension import BuildExtension\n"},
            "setup.py:1: from torch.utils.cpp_extension import BuildExtension",
        ),
        (
            {"pyproject.toml": '[build-system]\nrequires = [\n  "setuptools",\n  "torch>=2.4",\n]\n'},
            "pyproject.toml:4: [build-system] requires 'torch>=2.4'",
        ),
        (
            {
                "CMakeLists.txt": "cmake_minimum_required(VERSION 3.21)\nproject(x LANGUAGES CXX HIP)\n"
                "find_package(Torch REQUIRED)\n"
            },
            "CMakeLists.txt:3: find_package(Torch REQUIRED)",
        ),
    ],
)
def test_a_torch_extension_without_a_torch_pin_is_refused_naming_the_line(
    tmp_path: Path, files: dict[str, str], where: str
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name, body in files.items():
        (src / name).write_text(body)
    recipe, job = _recipe(tmp_path)
    assert job.torch_requirement is None
    with pytest.raises(BuildFailed) as info:
        buildsystem.check_torch_provided(job, src, recipe.display_path)
    assert info.value.exit_code == 9
    assert where in str(info.value)
    assert "add a torch axis to" in str(info.value) and recipe.display_path in str(info.value)
    buildsystem.check_torch_provided(_aiter_job(), src, "aiter.yaml")  # with a pin: fine


def test_projects_that_do_not_build_against_torch_pass(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "csrc", tmp_path / "src", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    (tmp_path / "src" / "notes.py").write_text("import torch\n")  # not setup.py: not the build
    recipe, job = _recipe(tmp_path)
    assert buildsystem.torch_evidence(tmp_path / "src") is None
    buildsystem.check_torch_provided(job, tmp_path / "src", recipe.display_path)


# --------------------------------------------------------------------------- --no-isolation
def test_a_no_isolation_build_installs_the_pin_then_build_requires(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    _, job = _recipe(tmp_path, build_requires=["tomli-w==1.2.0"])
    assert cibw.before_build(job, isolation=True) is None
    assert cibw.before_build(job, isolation=False) == "python -m pip install tomli-w==1.2.0"
    aiter = _aiter_job()
    hook = cibw.before_build(aiter, isolation=False, network=True)
    assert hook == (
        "python -m pip install 'torch==2.10.*' --index-url https://download.pytorch.org/whl/rocm7.2"
    )
