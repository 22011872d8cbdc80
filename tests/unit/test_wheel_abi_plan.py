"""Python-independent wheels in the plan (issue 30): ``wheel: {abi: py3-none}`` or ``{abi: abi3, from}``
gives one job per (ROCm, torch, extra axes) cell, built with the cell's lowest CPython, serving every
Python of the cell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from buildkit.errors import RecipeError
from buildkit.plan.expansion import expand
from buildkit.plan.models import Plan
from buildkit.plan.render import render_github, render_json, render_table
from buildkit.recipe import parse_recipe

ROOT = Path(__file__).resolve().parents[2]

RECIPE = """\
name: demo
source: {path: %s}
version: {base: "1.0", local: "rocm{rocm}"}
python: ["3.13", "3.11", "3.12"]
rocm: ["6.4", "7.2"]
archs: {list: [gfx90a]}
manylinux: {policy: manylinux_2_28}
image: manylinux_2_28-rocm
""" % (ROOT / "csrc")


def _plan(text: str, tmp_path: Path) -> Plan:
    return expand(parse_recipe(text, path=tmp_path / "r.yaml"), env={}, enumerator=list)


def test_without_a_wheel_section_one_job_per_python_each_serving_its_own(tmp_path: Path) -> None:
    plan = _plan(RECIPE, tmp_path)
    assert [j.id for j in plan.jobs] == [
        "cp313-rocm6.4",
        "cp313-rocm7.2",
        "cp311-rocm6.4",
        "cp311-rocm7.2",
        "cp312-rocm6.4",
        "cp312-rocm7.2",
    ]
    assert all(j.pythons == (j.python,) and j.wheel_tag is None for j in plan.jobs)
    assert _plan(RECIPE + "wheel: {abi: cpython}\n", tmp_path).jobs == plan.jobs


def test_py3_none_is_one_job_per_rocm_built_with_the_lowest_python(tmp_path: Path) -> None:
    plan = _plan(RECIPE + "wheel: {abi: py3-none}\n", tmp_path)
    assert [(j.id, j.python, j.cp_tag, j.wheel_tag, j.pythons) for j in plan.jobs] == [
        ("py3-rocm6.4", "3.11", "cp311", "py3-none", ("3.11", "3.12", "3.13")),
        ("py3-rocm7.2", "3.11", "cp311", "py3-none", ("3.11", "3.12", "3.13")),
    ]
    assert plan.skipped == ()


def test_abi3_ids_name_the_floor_and_the_tag_is_the_floors(tmp_path: Path) -> None:
    text = (
        RECIPE.replace('["3.13", "3.11", "3.12"]', '["3.13", "3.12"]') + 'wheel: {abi: abi3, from: "3.12"}\n'
    )
    plan = _plan(text, tmp_path)
    assert [(j.id, j.python, j.wheel_tag, j.pythons) for j in plan.jobs] == [
        ("abi3-cp312-rocm6.4", "3.12", "cp312-abi3", ("3.12", "3.13")),
        ("abi3-cp312-rocm7.2", "3.12", "cp312-abi3", ("3.12", "3.13")),
    ]
    # a floor below the planned Pythons: built with the lowest planned one, tagged with the floor
    plan = _plan(RECIPE + 'wheel: {abi: abi3, from: "3.10"}\n', tmp_path)
    assert {(j.python, j.wheel_tag) for j in plan.jobs} == {("3.11", "cp310-abi3")}
    assert plan.jobs[0].id == "abi3-cp310-rocm6.4"


def test_an_excluded_python_is_skipped_and_not_served_and_the_build_python_moves_up(tmp_path: Path) -> None:
    text = (
        RECIPE
        + "wheel: {abi: py3-none}\n"
        + 'matrix: {exclude: [{python: "3.11", rocm: "7.2", reason: "no 3.11 runtime for 7.2"}]}\n'
    )
    plan = _plan(text, tmp_path)
    assert [(j.id, j.python, j.pythons) for j in plan.jobs] == [
        ("py3-rocm6.4", "3.11", ("3.11", "3.12", "3.13")),
        ("py3-rocm7.2", "3.12", ("3.12", "3.13")),
    ]
    assert [(s.id, s.reason) for s in plan.skipped] == [
        (
            "cp311-rocm7.2",
            "excluded by matrix.exclude[0]: no 3.11 runtime for 7.2 (py3-rocm7.2 does not serve it)",
        )
    ]


def test_a_cell_with_every_python_excluded_has_no_job(tmp_path: Path) -> None:
    text = RECIPE + "wheel: {abi: py3-none}\n" + 'matrix: {exclude: [{rocm: "7.2"}]}\n'
    plan = _plan(text, tmp_path)
    assert [j.id for j in plan.jobs] == ["py3-rocm6.4"]
    assert sorted(s.id for s in plan.skipped) == ["cp311-rocm7.2", "cp312-rocm7.2", "cp313-rocm7.2"]


def test_torch_cells_serve_only_the_pythons_the_pin_has_wheels_for(tmp_path: Path) -> None:
    text = (
        RECIPE.replace('rocm: ["6.4", "7.2"]', 'rocm: ["7.2"]')
        + "wheel: {abi: py3-none}\n"
        + 'torch: [{version: "2.9", index_url: "https://example.invalid/t", python: ">=3.12"},'
        + ' {version: "2.10", index_url: "https://example.invalid/t"}]\n'
    )
    plan = _plan(text, tmp_path)
    assert [(j.id, j.python, j.pythons, j.torch_requirement) for j in plan.jobs] == [
        ("py3-rocm7.2-torch2.9", "3.12", ("3.12", "3.13"), "torch==2.9.*"),
        ("py3-rocm7.2-torch2.10", "3.11", ("3.11", "3.12", "3.13"), "torch==2.10.*"),
    ]
    assert [s.id for s in plan.skipped] == ["cp311-rocm7.2-torch2.9"]


def test_every_format_shows_the_tag_and_the_pythons_served(tmp_path: Path) -> None:
    plan = _plan(RECIPE + "wheel: {abi: py3-none}\n", tmp_path)
    table = render_table(plan)
    header = next(line for line in table.splitlines() if line.startswith("JOB"))
    assert header.split() == [
        "JOB",
        "PYTHON",
        "WHEEL",
        "SERVES",
        "ROCM",
        "TORCH",
        "ARCHS",
        "IMAGE",
        "VERSION",
    ]
    row = next(line for line in table.splitlines() if line.startswith("py3-rocm6.4"))
    assert row.split()[:4] == ["py3-rocm6.4", "3.11", "py3-none", "3.11,3.12,3.13"]
    jobs = json.loads(render_json(plan))["jobs"]
    assert [(j["id"], j["wheel_tag"], j["serves"]) for j in jobs] == [
        ("py3-rocm6.4", "py3-none", ["3.11", "3.12", "3.13"]),
        ("py3-rocm7.2", "py3-none", ["3.11", "3.12", "3.13"]),
    ]
    include = json.loads(render_github(plan))["shards"][0]["include"]
    assert [(e["id"], e["python"], e["wheel_tag"], e["serves"]) for e in include] == [
        ("py3-rocm6.4", "3.11", "py3-none", "3.11 3.12 3.13"),
        ("py3-rocm7.2", "3.11", "py3-none", "3.11 3.12 3.13"),
    ]
    # a per-Python plan keeps its table columns
    assert "SERVES" not in render_table(_plan(RECIPE, tmp_path))


def test_job_selection_takes_the_cell_id_and_names_it_when_unknown(tmp_path: Path) -> None:
    from buildkit.errors import UnknownJob

    plan = _plan(RECIPE + "wheel: {abi: py3-none}\n", tmp_path)
    assert plan.job("py3-rocm7.2").rocm == "7.2"
    with pytest.raises(UnknownJob, match=r"known: py3-rocm6\.4, py3-rocm7\.2"):
        plan.job("cp312-rocm7.2")


def test_the_version_of_a_cell_is_the_same_for_every_python(tmp_path: Path) -> None:
    plan = _plan(
        RECIPE.replace('local: "rocm{rocm}"', 'local: "rocm{rocm}.manylinux.{policy}"')
        + "wheel: {abi: py3-none}\n",
        tmp_path,
    )
    assert [j.version for j in plan.jobs] == ["1.0+rocm6.4.manylinux.2.28", "1.0+rocm7.2.manylinux.2.28"]
    with pytest.raises(RecipeError, match=r"version.local uses \{python\}"):
        _plan(
            RECIPE.replace('local: "rocm{rocm}"', 'local: "py{python}"') + "wheel: {abi: py3-none}\n",
            tmp_path,
        )
