"""A builder profile is data: one table of docker/profiles.toml and its Dockerfile (issue 26, item 4).

The facts the code needs about an image (its ROCm prefix, compiler-cache layout, CPythons, glibc,
role, per-release toolchain and build arguments) are fields of its table; the recipe schema names no
profile (``x-profile`` checks a recipe's ``image`` against the file). The test below adds a builder to
a copy of docker/ in a temporary folder, touching that one file and adding a Dockerfile, and plans a
recipe against it: each fact reaches the plan, the build environment and the compiler cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit import profiles
from buildkit.building import ccache, cibw
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe
from buildkit.recipe.schema import recipe_schema

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"

#: the new builder: Debian bookworm's ROCm 5.2 toolchain under another prefix, two CPythons, its glibc
TABLE = """
[profiles.example-rocm]
dockerfile = "example-rocm.Dockerfile"
description = "an example builder added by a test: one table and its Dockerfile"
rocm_releases = ["5.2"]
package_manager = "apt"
role = "builder"
rocm_prefix = "/opt/example-rocm"
cache_layout = "debian"
pythons = ["3.11", "3.12"]
glibc = "2.36"

[profiles.example-rocm.releases."5.2"]
toolchain = "debian-bookworm"
build_args = { EXAMPLE_SUITE = "bookworm" }
"""
DOCKERFILE = "FROM debian:bookworm-slim\nARG EXAMPLE_SUITE=bookworm\nARG EXTRA=\nRUN true\n"
RECIPE = """\
name: example
source:
  path: .
version:
  base: "1.0"
python: ["3.11", "3.12"]
rocm: ["5.2"]
archs:
  list: [gfx90a, gfx942]
manylinux:
  policy: manylinux_2_36
repair:
  exclude:
    sets: [rocm]
image: example-rocm
"""


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.fixture
def with_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of docker/ with the new builder: one table appended to profiles.toml, one Dockerfile."""
    copy = tmp_path / "docker"
    shutil.copytree(DOCKER, copy)
    with (copy / profiles.PROFILES_FILE).open("a", encoding="utf-8") as handle:
        handle.write(TABLE)
    (copy / "example-rocm.Dockerfile").write_text(DOCKERFILE, encoding="utf-8")
    monkeypatch.setenv("BUILDKIT_DOCKER_DIR", str(copy))
    project = tmp_path / "project"
    project.mkdir()
    (project / "setup.py").write_text("")
    (project / "recipe.yaml").write_text(RECIPE)
    return copy


def test_a_new_builder_is_one_table_and_its_dockerfile(with_example: Path) -> None:
    before, after = _files(DOCKER), _files(with_example)
    changed = sorted(name for name in after if before.get(name) != after[name])
    assert changed == ["example-rocm.Dockerfile", profiles.PROFILES_FILE]
    assert profiles.docker_dir() == with_example
    assert "example-rocm" in profiles.builder_names()


def test_a_recipe_plans_against_the_new_builder(with_example: Path) -> None:
    recipe = load_recipe(with_example.parent / "project" / "recipe.yaml")
    plan = expand(recipe, env={})
    assert [j.id for j in plan.jobs] == ["cp311-rocm5.2", "cp312-rocm5.2"]
    job = plan.jobs[0]
    assert job.image.profile == "example-rocm"
    # the release's toolchain (bookworm's LLVM 15 stops at gfx940): gfx942 is dropped with its reason
    assert [str(a) for a in job.archs.kept] == ["gfx90a"]
    assert any("toolchain debian-bookworm" in d.reason for d in job.archs.decisions if d.arch == "gfx942")
    # the build environment and the compiler cache, from the table
    settings = cibw.CibwSettings(image="x", source_date_epoch=0, ccache_volume="v", with_ca_bundle=False)
    env = cibw.container_environment(job, settings)
    assert env["ROCM_PATH"] == "/opt/example-rocm"
    assert ccache.layout(job) is ccache.DEBIAN
    assert env["PATH"].startswith(f"{ccache.HOST_CC_WRAPPERS}:/usr/lib/ccache:")


def test_the_new_builders_facts_refuse_what_it_cannot_build(with_example: Path) -> None:
    """Its CPythons and glibc: a Python it lacks and a policy older than its glibc are recipe errors
    at plan time, at the recipe's values (the same refusal the shipped builders get)."""
    path = with_example.parent / "project" / "recipe.yaml"
    path.write_text(
        RECIPE.replace('["3.11", "3.12"]', '["3.13"]').replace("manylinux_2_36", "manylinux_2_28")
    )
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", str(path)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert "python[0]: image example-rocm provides CPython 3.11, 3.12, not 3.13" in proc.stderr
    assert "manylinux.policy: image example-rocm builds against glibc 2.36" in proc.stderr


def test_plan_json_names_the_new_builder(with_example: Path) -> None:
    path = with_example.parent / "project" / "recipe.yaml"
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    jobs = json.loads(proc.stdout)["jobs"]
    assert {j["image"]["profile"] for j in jobs} == {"example-rocm"}


def test_an_unknown_builder_is_refused_at_its_position(with_example: Path) -> None:
    path = with_example.parent / "project" / "recipe.yaml"
    path.write_text(RECIPE.replace("image: example-rocm", "image: exampel-rocm"))
    from buildkit.errors import RecipeError

    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    assert (info.value.line, info.value.column) == (15, 8)
    names = ", ".join(f'"{name}"' for name in profiles.builder_names())
    assert '"example-rocm"' in names
    assert info.value.detail == f"image: expected one of {names}, got a string ('exampel-rocm')"
    assert info.value.hint is not None and "'example-rocm'" in info.value.hint


# --------------------------------------------------------------------------- drift
def test_the_recipe_schema_names_no_profile() -> None:
    """The schema checks a recipe's image with ``x-profile`` (profiles.toml), never a list of names."""
    image = recipe_schema()["properties"]["image"]
    assert image["then"] == {"x-profile": "builder"}
    assert image["else"]["properties"]["profile"]["x-profile"] == "builder"
    text = json.dumps({k: v for k, v in image.items() if k != "description"})
    assert not [name for name in profiles.PROFILES if f'"{name}"' in text]


def test_every_builder_of_the_file_is_accepted_and_no_runtime_image() -> None:
    builders = {p.name for p in profiles.PROFILES.values() if p.role == "builder"}
    assert set(profiles.builder_names()) == builders
    assert not builders & {p.name for p in profiles.PROFILES.values() if p.role == "runtime"}


def test_the_cache_layouts_of_the_data_are_the_codes() -> None:
    """Every (cache_layout, cache_hip) a profile may declare has its ccache.Layout, and no other."""
    declared = {(name, route) for name, routes in profiles.CACHE_LAYOUTS.items() for route in routes}
    assert set(ccache.NAMED) == declared
    for profile in profiles.PROFILES.values():
        if profile.cache_layout is not None:
            assert (profile.cache_layout, profile.cache_route) in ccache.NAMED, profile.name


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ('cache_layout = "arch"', "cache_layout must be one of debian, el, not 'arch'"),
        (
            'cache_layout = "el"\ncache_hip = "launcher"',
            "cache_hip of cache_layout el must be one of image-wrappers",
        ),
        ('cache_hip = "launcher"', "cache_hip needs a cache_layout"),
    ],
)
def test_a_cache_layout_the_code_lacks_is_refused(tmp_path: Path, fields: str, message: str) -> None:
    from buildkit.errors import UsageError

    text = f'[profiles.a]\ndockerfile = "a.Dockerfile"\n{fields}\n'
    with pytest.raises(UsageError, match=message):
        profiles.parse_profiles(text, tmp_path / profiles.PROFILES_FILE)
