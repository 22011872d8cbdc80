"""What a hard kill leaves behind: a throwaway container whose process got SIGKILL (no ``finally``
ran) is found by its label and removed by ``buildkit image prune --containers``; an interrupted one
(Ctrl-C) is removed by the block itself, and the keep switch leaves it for ``prune``."""

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


def test_killed_throwaway_is_removed_by_prune(docker_client: Any) -> None:
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
        os.killpg(child.pid, signal.SIGKILL)  # no finally runs: the container stays
        child.wait(timeout=30)
        left = docker_client.containers.get(name)
        assert left.status == "running"
        assert left.labels[CONTAINER_LABEL] == "prune-test"

        proc = _buildkit("image", "prune", "--containers", "--yes")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"removed container {name} (prune-test; was running)" in proc.stdout
        assert "container(s) removed" in proc.stderr
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


def test_kept_container_is_named_and_pruned(
    docker_client: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEEP_ENV, "1")
    with throwaway(docker_client, IMAGE, ["true"], purpose="prune-test") as box:
        done = box.run(timeout=120)
    assert done.exit_code == 0
    assert box.name in capsys.readouterr().err
    try:
        assert box.name in _labelled(docker_client)
        started = time.monotonic()
        proc = _buildkit("image", "prune", "--containers", "--yes")
        assert proc.returncode == 0, proc.stderr
        assert f"removed container {box.name} (prune-test; was exited)" in proc.stdout
        assert box.name not in _labelled(docker_client)
        assert time.monotonic() - started < 120
    finally:
        for left in docker_client.containers.list(all=True, filters={"name": box.name}):
            left.remove(force=True)
