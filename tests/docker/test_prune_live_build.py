"""Issue 38, case 10, on a real build: the docker tier's ``prune --containers --yes`` removed a user's
cibuildwheel container mid-compile (``removal of container cibuildwheel-... is already in progress``,
the build dead). Here a real ``buildkit build`` of the reference recipe runs; once its cibuildwheel
container runs, ``buildkit image prune --containers --yes`` runs from another process (limited with
``--name`` to that build's containers, so that this test removes nothing of anyone else's); the
prune leaves the container, naming its live owner, and the build finishes with the same wheel, byte
for byte, as a build nobody disturbed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from buildkit.manifest import sha256_file
from tests.docker.test_build_e2e import JOB, _run_containers

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "reference-trixie.yaml"


def _start(tmp: Path) -> subprocess.Popen[str]:
    tmp.mkdir()
    command = [sys.executable, "-m", "buildkit", "build", str(RECIPE), "--out", "dist", "--log-dir", "logs"]
    return subprocess.Popen(command, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wheel(tmp: Path, build: subprocess.Popen[str]) -> Path:
    out, _ = build.communicate(timeout=1800)
    assert build.returncode == 0, out
    (wheel,) = (tmp / "dist").glob("*/*.whl")
    return wheel


def test_a_prune_leaves_a_compiling_build_which_makes_the_same_wheel(
    tmp_path: Path, docker_client: Any, debian_rocm_image: Any
) -> None:
    build = _start(tmp_path / "pruned")
    try:
        running: set[str] = set()
        deadline = time.monotonic() + 900
        while not running and build.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
            for name in _run_containers(docker_client, build.pid):
                box = docker_client.containers.get(name)
                if name.startswith("cibuildwheel-") and box.status == "running":
                    running.add(name)
        assert running, f"no cibuildwheel container of build {build.pid} ran ({JOB})"
        prune = subprocess.run(
            [sys.executable, "-m", "buildkit", "image", "prune", "--containers", "--yes"]
            + [f"--name={name}" for name in sorted(running)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert prune.returncode == 0, prune.stdout + prune.stderr
        for name in running:
            assert f"leave container {name} (cibuildwheel, build staging-{JOB}-{build.pid}-" in prune.stdout
        assert f"owner pid {build.pid} on " in prune.stdout and "removed container" not in prune.stdout
        pruned_wheel = _wheel(tmp_path / "pruned", build)
    finally:
        if build.poll() is None:
            build.kill()
            build.wait()
    quiet = _wheel(tmp_path / "quiet", _start(tmp_path / "quiet"))
    assert pruned_wheel.name == quiet.name
    assert sha256_file(pruned_wheel) == sha256_file(quiet)
