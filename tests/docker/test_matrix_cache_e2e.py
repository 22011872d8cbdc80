"""Device code once per matrix (issue 29), on the real engine: the reference HIP extension (csrc/) on
the ROCm 7.2 builder with its three CPythons, built cold into a fresh cache volume shared by the three
jobs. Job 1 compiles everything; jobs 2 and 3 get every HIP compile from the cache (their compile
lines differ in ``-I/usr/include/python3.X`` only, which ccache's preprocessor mode leaves out of its
hash) and compile only module.c, which includes Python.h and must not be served another Python's
object. A no-change rebuild hits every compile; cold, cached and ``--no-cache`` builds give the same
wheel bytes.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from buildkit import image as images
from buildkit import profiles
from buildkit.building.cibw import ccache_volume
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe
from tests.helpers.recipes import reference_three_pythons

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
JOBS = ("cp313-rocm7.2", "cp314-rocm7.2", "cp315-rocm7.2")
#: csrc/setup.py: gemm.hip, rowsum.hip, hip_runtime_info.hip (device code) and module.c (Python.h)
DEVICE, HOST = 3, 1


def _recipe(tmp: Path) -> Path:
    return reference_three_pythons(tmp)


def _build(tmp: Path, recipe: Path, *flags: str) -> dict[str, dict[str, Any]]:
    command = [sys.executable, "-m", "buildkit", "build", str(recipe), "--out", "dist", "--log-dir", "logs"]
    proc = subprocess.run(
        [*command, *flags],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    built = {}
    for job in JOBS:
        (manifest,) = (tmp / "dist" / job).glob("*.manifest.json")
        built[job] = json.loads(manifest.read_text())
    return built


def _volume(recipe: Path, client: Any) -> str:
    plan = expand(load_recipe(recipe), env={}, enumerator=lambda: [])
    job = plan.job(JOBS[0])
    profile = profiles.get_profile("debian-sid-rocm")
    archs = [str(a) for j in plan.jobs for a in j.archs.kept]
    tag, _base = images.resolve_tag(client, profile, images.rocm_build_args(profile, "7.2", archs))
    volumes = {ccache_volume(j, tag) for j in plan.jobs}
    assert volumes == {ccache_volume(job, tag)}, volumes  # one volume for the three jobs
    return volumes.pop()


def test_jobs_2_and_3_get_every_device_compile_from_the_cache(tmp_path: Path, docker_client: Any) -> None:
    recipe = _recipe(tmp_path)
    volume = _volume(recipe, docker_client)
    with contextlib.suppress(Exception):
        docker_client.volumes.get(volume).remove(force=True)
    with contextlib.suppress(Exception):
        docker_client.volumes.get(volume)
        pytest.fail(f"cache volume {volume} is in use elsewhere: cannot start cold", pytrace=False)
    try:
        cold = _build(tmp_path, recipe)
        stats = {job: cold[job]["compiler_cache"] for job in JOBS}
        assert stats[JOBS[0]] == {"hits": 0, "misses": DEVICE + HOST, "hit_rate": 0.0}, stats
        for job in JOBS[1:]:  # every HIP compile a hit; module.c (Python.h) compiled for its own Python
            assert (stats[job]["hits"], stats[job]["misses"]) == (DEVICE, HOST), stats
        for job in JOBS:
            assert cold[job]["image"]["tag"].startswith("rocm-buildkit/debian-sid-rocm:")

        warm = _build(tmp_path, recipe, "--force")  # no change: every compile of every job hits
        for job in JOBS:
            assert (warm[job]["compiler_cache"]["hits"], warm[job]["compiler_cache"]["misses"]) == (
                DEVICE + HOST,
                0,
            ), warm[job]["compiler_cache"]

        uncached = _build(tmp_path, recipe, "--force", "--no-cache")
        for job in JOBS:
            assert uncached[job]["compiler_cache"] is None
            sums = {built[job]["wheel"]["sha256"] for built in (cold, warm, uncached)}
            assert len(sums) == 1, (job, sums)  # cold, cached and uncached: the same bytes
        # three Pythons, three different wheels: no job was handed another's module
        assert len({cold[job]["wheel"]["sha256"] for job in JOBS}) == 3
    finally:
        with contextlib.suppress(Exception):
            docker_client.volumes.get(volume).remove(force=True)
