"""What a hard kill leaves behind: a throwaway container whose process got SIGKILL (no ``finally``
ran) is found by its label and removed by ``buildkit image prune --containers``; an interrupted one
(Ctrl-C) is removed by the block itself, and the keep switch leaves it for ``prune``.

Issue 38, case 10: the engine is shared (this tier ran ``prune --containers --yes``, which removed a
user's cibuildwheel container 25 minutes into its compile). A prune now leaves a container whose
owning process still runs, and names it; and these tests prune only the containers they made
(``--name``), never another run's on the same engine."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from buildkit.docker_engine import CONTAINER_LABEL, KEEP_ENV, throwaway

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]
IMAGE = "debian:bookworm-slim"

# a child that makes a throwaway, starts it, says its name and then hangs until it is killed
CHILD = f"""
import sys, time
from buildkit.docker_engine import connect, throwaway
with throwaway(connect(), {IMAGE!r}, ["sleep", "600"], purpose="prune-test") as box:
    box.start()
    print(box.name, flush=True)
    time.sleep(600)
"""


def _labelled(client: Any) -> set[str]:
    return {c.name for c in client.containers.list(all=True, filters={"label": CONTAINER_LABEL})}


def _buildkit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        cwd=ROOT,
    )


def _prune(*names: str) -> subprocess.CompletedProcess[str]:
    """``prune --containers --yes`` from another process, for these containers only."""
    return _buildkit("image", "prune", "--containers", "--yes", *(f"--name={n}" for n in names))


def test_a_live_owners_container_is_left_and_a_killed_ones_removed(docker_client: Any) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )
    name = ""
    try:
        assert child.stdout is not None
        name = child.stdout.readline().strip()
        assert name.startswith("buildkit-prune-test-"), name
        box = docker_client.containers.get(name)
        assert box.labels["io.rocm-buildkit.owner.pid"] == str(child.pid)

        # its owner runs: a prune from another process leaves it, and says whose it is
        proc = _prune(name)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"leave container {name} (prune-test; running; owner pid {child.pid} on " in proc.stdout
        assert "is running)" in proc.stdout and "removed container" not in proc.stdout
        assert "no labelled container whose owner is gone (1 live one(s) left)" in proc.stderr
        assert docker_client.containers.get(name).status == "running"

        os.killpg(child.pid, signal.SIGKILL)  # no finally runs: the container stays
        child.wait(timeout=30)
        left = docker_client.containers.get(name)
        assert left.status == "running"
        assert left.labels[CONTAINER_LABEL] == "prune-test"

        proc = _prune(name)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"removed container {name} (prune-test; was running)" in proc.stdout
        assert "1 container(s) removed, 0 live one(s) left" in proc.stderr
        assert name not in _labelled(docker_client)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        if name:
            for box in docker_client.containers.list(all=True, filters={"name": name}):
                box.remove(force=True)


def test_interrupted_throwaway_removes_itself(docker_client: Any) -> None:
    names: list[str] = []
    with (
        pytest.raises(KeyboardInterrupt),
        throwaway(docker_client, IMAGE, ["sleep", "600"], purpose="prune-test") as box,
    ):
        box.start()
        names.append(box.name)
        assert box.name in _labelled(docker_client)
        raise KeyboardInterrupt
    assert names and names[0] not in _labelled(docker_client)


KEPT_CHILD = f"""
from buildkit.docker_engine import connect, throwaway
with throwaway(connect(), {IMAGE!r}, ["true"], purpose="prune-test") as box:
    assert box.run(timeout=120).exit_code == 0
    print(box.name, flush=True)
"""


def test_kept_container_is_named_and_pruned_once_its_owner_exited(docker_client: Any) -> None:
    """The keep switch leaves the container of a command that ended: its owner is gone, so a prune
    removes it (one kept by a process that still runs would be left, as any live owner's)."""
    done = subprocess.run(
        [sys.executable, "-c", KEPT_CHILD],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), KEEP_ENV: "1"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    name = done.stdout.strip()
    assert name and name in done.stderr  # the keep switch names it
    try:
        assert name in _labelled(docker_client)
        started = time.monotonic()
        proc = _prune(name)
        assert proc.returncode == 0, proc.stderr
        assert f"removed container {name} (prune-test; was exited)" in proc.stdout
        assert name not in _labelled(docker_client)
        assert time.monotonic() - started < 120
    finally:
        for left in docker_client.containers.list(all=True, filters={"name": name}):
            left.remove(force=True)
