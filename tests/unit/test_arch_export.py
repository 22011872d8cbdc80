"""``archs.export``: the resolved arch list reaches every variable a project's build reads, with its
separator, in step with ``--archs`` and ``PYTORCH_ROCM_ARCH``; ``plan`` shows each one per job, and
the build container gets them through cibuildwheel's own environment parser. The malformed cases
(unknown separator, a variable set by hand in env, CIBW_* options) are in tests/data/recipes/bad."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cibuildwheel.environment import parse_environment

from buildkit.building import cibw
from buildkit.errors import RecipeError
from buildkit.plan.expansion import expand
from buildkit.plan.models import Plan
from buildkit.plan.render import render_json, render_table
from buildkit.recipe import parse_recipe
from buildkit.records import to_data

RECIPE = """\
name: demo
source: {path: ../csrc}
version: {base: "1.0"}
python: ["3.12", "3.13"]
rocm: ["6.4"]
archs:
  list: [gfx90a, gfx942]
  export:
    HCC_AMDGPU_TARGET: ","
    OFFLOAD_ARCHS: " "
manylinux: {policy: manylinux_2_28}
image: manylinux_2_28-rocm
"""


def _plan(tmp_path: Path, text: str = RECIPE, cli_archs: str | None = None) -> Plan:
    recipe = parse_recipe(text, path=tmp_path / "r.yaml")
    return expand(recipe, env={}, enumerator=list, cli_archs=cli_archs)


def test_every_job_exports_the_list_with_each_variables_separator(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    for job in plan.jobs:
        assert job.env["HCC_AMDGPU_TARGET"] == "gfx90a,gfx942"
        assert job.env["OFFLOAD_ARCHS"] == "gfx90a gfx942"
        assert job.env["PYTORCH_ROCM_ARCH"] == job.env["GPU_ARCHS"] == "gfx90a;gfx942"


def test_the_export_follows_the_archs_flag(tmp_path: Path) -> None:
    plan = _plan(tmp_path, cli_archs="gfx942")
    (values,) = {job.env["HCC_AMDGPU_TARGET"] for job in plan.jobs}
    assert values == "gfx942"


def test_the_export_follows_pytorch_rocm_arch_with_from_env(tmp_path: Path) -> None:
    text = RECIPE.replace("list: [gfx90a, gfx942]", "from: env")
    recipe = parse_recipe(text, path=tmp_path / "r.yaml")
    plan = expand(recipe, env={"PYTORCH_ROCM_ARCH": "gfx908;gfx942"}, enumerator=list)
    assert {job.env["HCC_AMDGPU_TARGET"] for job in plan.jobs} == {"gfx908,gfx942"}


def test_known_names_take_their_usual_separator(tmp_path: Path) -> None:
    text = RECIPE.replace('    HCC_AMDGPU_TARGET: ","\n    OFFLOAD_ARCHS: " "\n', "").replace(
        "  export:\n", "  export: [HCC_AMDGPU_TARGET, CMAKE_HIP_ARCHITECTURES]\n"
    )
    job = _plan(tmp_path, text).jobs[0]
    assert job.env["HCC_AMDGPU_TARGET"] == "gfx90a,gfx942"
    assert job.env["CMAKE_HIP_ARCHITECTURES"] == "gfx90a;gfx942"


def test_plan_shows_each_exported_variable_per_job(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    table = render_table(plan)
    assert "arch variables (archs.export; PYTORCH_ROCM_ARCH and GPU_ARCHS as ARCHS):" in table
    rows = table.split("arch variables")[1].splitlines()[1:4]
    assert rows[0].split() == ["JOB", "HCC_AMDGPU_TARGET", "OFFLOAD_ARCHS"]
    assert rows[1].split()[1:] == ["gfx90a,gfx942", "gfx90a", "gfx942"]
    data = json.loads(render_json(plan))
    assert {j["env"]["HCC_AMDGPU_TARGET"] for j in data["jobs"]} == {"gfx90a,gfx942"}


def test_a_recipe_without_export_keeps_its_plan_output(tmp_path: Path) -> None:
    text = RECIPE.replace('  export:\n    HCC_AMDGPU_TARGET: ","\n    OFFLOAD_ARCHS: " "\n', "")
    plan = _plan(tmp_path, text)
    assert "arch variables" not in render_table(plan)
    assert set(plan.jobs[0].env) == {"PYTORCH_ROCM_ARCH", "GPU_ARCHS"}


def test_the_build_container_gets_the_exported_variables(tmp_path: Path) -> None:
    job = _plan(tmp_path).jobs[0]
    settings = cibw.CibwSettings(
        image="img:1", source_date_epoch=1700000000, ccache_volume=None, with_ca_bundle=False
    )
    options = cibw.cibuildwheel_options(job, settings)
    env = parse_environment(options["CIBW_ENVIRONMENT_LINUX"]).as_dictionary(prev_environment={})
    assert env["HCC_AMDGPU_TARGET"] == "gfx90a,gfx942"
    assert env["OFFLOAD_ARCHS"] == "gfx90a gfx942"


@pytest.mark.parametrize(
    ("name", "separator"), [("-DMY_GPU_TARGETS", ";"), ("cmake.define.KERNEL_ARCHS", ";"), ("MY_ARCHS", ",")]
)
def test_an_unknown_cmake_definition_is_hinted_a_cmake_list_separator(
    tmp_path: Path, name: str, separator: str
) -> None:
    """Issue 36: the hint proposed `{-DNAME: ","}`, which a CMake list does not split on; it is ';' (an
    environment variable's separator is the build's own code's: ',' as the usual ones)."""
    text = RECIPE.replace('    HCC_AMDGPU_TARGET: ","\n    OFFLOAD_ARCHS: " "\n', "").replace(
        "  export:\n", f"  export: [{name}]\n"
    )
    with pytest.raises(RecipeError) as info:
        _plan(tmp_path, text)
    assert f'{{{name}: "{separator}"}}' in (info.value.hint or "")
    # the value the hint proposes plans
    job = _plan(tmp_path, text.replace(f"export: [{name}]", f'export: {{{name}: "{separator}"}}')).jobs[0]
    assert f"gfx90a{separator}gfx942" in json.dumps(to_data(job))
