"""``manylinux.ceilings.from_image`` planned on the real engine with the seeded Debian images.

The plan reads the images through buildkit.image.ceilings (created-never-started containers); the expected
values are read independently (the image runs ``cp -L`` of its libraries, binutils' ``readelf -V``
parses them on the host: ``tests/docker/test_ceilings_docker.independent``), then tightened by hand
with the policy's ceilings from auditwheel's policy file. The recorded facts the unit tests plan
with (``tests/unit/test_plan.RECORDED_CEILINGS``) and the golden files made from them are checked
against the real images here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from buildkit.image.ceilings import ceilings_from_images, read_image_ceilings
from buildkit.plan.expansion import expand
from buildkit.plan.render import render_json, render_table
from buildkit.policy import get_policy, version_tuple
from buildkit.recipe import parse_recipe
from tests.docker.test_ceilings_docker import _tar_image, independent
from tests.unit.test_plan import GOLDEN_ENV, RECORDED_CEILINGS

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "tests" / "data" / "recipes" / "runtime.yaml"
GOLDEN = ROOT / "tests" / "data" / "golden"
SEEDED = ("debian:bookworm-slim", "debian:trixie-slim")
POLICY = "manylinux_2_39"  # GLIBC 2.39, GLIBCXX 3.4.33, CXXABI 1.3.15, GCC 14.0.0: above bookworm's

RECIPE = """\
name: demo
source: {{path: ../src}}
version: {{base: "1.0"}}
python: ["3.13"]
rocm: ["6.4"]
archs: {{list: [gfx90a]}}
manylinux:
  policy: {policy}
  ceilings:
    from_image: [{images}]
image: manylinux_2_28-rocm
repair: {{exclude: {{sets: [rocm]}}}}
"""


@pytest.fixture
def seeded(docker_client: Any) -> tuple[str, ...]:
    for image in SEEDED:
        try:
            docker_client.images.get(image)
        except docker.errors.ImageNotFound:
            pytest.fail(f"{image} is not seeded: run `buildkit image seed {image}`", pytrace=False)
    return SEEDED


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ceilings cache: the first plan reads the images through the engine."""
    cache = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache / "rocm-buildkit" / "ceilings"


def test_plan_takes_the_minimum_of_the_images(
    docker_client: Any, seeded: tuple[str, ...], fresh_cache: Path, tmp_path: Path
) -> None:
    recipe = parse_recipe(RECIPE.format(policy=POLICY, images=", ".join(seeded)), path=tmp_path / "r.yaml")
    plan = expand(recipe, env={}, ceilings_reader=ceilings_from_images)  # read on the real engine
    (job,) = plan.jobs

    readings = [independent(docker_client, image, tmp_path) for image in seeded]
    expected = {}
    for prefix, allowed in get_policy(POLICY).ceilings().items():
        values = [r[prefix] for r in readings] + [allowed]
        expected[prefix] = min(values, key=lambda v: version_tuple(v) or ())
    print("plan:", dict(job.ceilings), "independent:", readings)
    assert dict(job.ceilings) == expected
    # the figures: bookworm's, the older of the two
    assert (job.ceilings["GLIBC"], job.ceilings["GLIBCXX"]) == ("2.36", "3.4.30")
    assert job.ceilings_from_images == seeded and plan.notes == ()
    assert len(list(fresh_cache.glob("*.json"))) == 2  # read once per image, cached by image id

    again = expand(recipe, env={}, ceilings_reader=ceilings_from_images)  # from the cache now
    assert render_json(again) == render_json(plan) and render_table(again) == render_table(plan)


def test_unit_test_facts_are_the_images_facts(docker_client: Any, seeded: tuple[str, ...]) -> None:
    for image in seeded:
        reading = read_image_ceilings(image, client=docker_client, use_cache=False)
        assert reading.ceilings == RECORDED_CEILINGS[image], image


def test_cli_plan_matches_the_goldens_and_is_byte_identical(
    seeded: tuple[str, ...], fresh_cache: Path, tmp_path: Path
) -> None:
    # the goldens' environment (test_plan.GOLDEN_ENV), whatever arch variables this machine has set
    env = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_ROCM_ARCH", "GPU_ARCHS")}
    env.update(GOLDEN_ENV, PYTHONPATH=str(ROOT))
    outputs = {}
    for fmt in ("table", "json"):
        runs = []
        for cwd, arg in ((ROOT, str(RUNTIME.relative_to(ROOT))), (tmp_path, str(RUNTIME))):
            proc = subprocess.run(
                [sys.executable, "-m", "buildkit", "plan", "--format", fmt, arg],
                cwd=cwd,
                env=env,
                capture_output=True,
                check=False,
            )
            assert proc.returncode == 0, proc.stderr.decode()
            runs.append(proc.stdout)
        assert runs[0] == runs[1]
        outputs[fmt] = runs[0].decode()
    assert outputs["table"] == (GOLDEN / "runtime.table").read_text(encoding="utf-8")
    assert outputs["json"] == (GOLDEN / "runtime.json").read_text(encoding="utf-8")


@pytest.mark.skipif(not Path("/lib/x86_64-linux-gnu/libc.so.6").exists(), reason="needs an x86_64 glibc host")
def test_image_without_libstdcxx_is_a_note(
    docker_client: Any, seeded: tuple[str, ...], fresh_cache: Path, tmp_path: Path
) -> None:
    nocxx = _tar_image(docker_client)  # host libc/libm/libgcc_s, no libstdc++
    text = RECIPE.format(policy=POLICY, images=f"debian:bookworm-slim, {nocxx}")
    plan = expand(parse_recipe(text, path=tmp_path / "r.yaml"), env={}, ceilings_reader=ceilings_from_images)
    (job,) = plan.jobs
    bookworm = read_image_ceilings("debian:bookworm-slim", client=docker_client).ceilings
    other = read_image_ceilings(nocxx, client=docker_client).ceilings
    assert "GLIBCXX" not in other
    policy = get_policy(POLICY).ceilings()
    assert job.ceilings["GLIBCXX"] == policy["GLIBCXX"]  # not tightened: no version is known safe
    assert job.ceilings["GLIBC"] == min(
        bookworm["GLIBC"], other["GLIBC"], key=lambda v: version_tuple(v) or ()
    )
    (note,) = plan.notes
    assert note.startswith(f"manylinux.ceilings.from_image: {nocxx} defines no GLIBCXX/CXXABI")
    assert f"note: {note}" in render_table(plan)
