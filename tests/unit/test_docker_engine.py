"""Engine endpoint resolution and the dead-daemon error (no running engine needed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from buildkit import docker_engine
from buildkit.errors import DockerUnavailable


def test_endpoint_from_docker_host() -> None:
    where = docker_engine.endpoint({"DOCKER_HOST": "tcp://builder.example:2376"})
    assert where == docker_engine.Endpoint("tcp://builder.example:2376", "DOCKER_HOST")


def test_endpoint_default_socket() -> None:
    assert docker_engine.endpoint({}).host == "unix:///var/run/docker.sock"


def test_dead_daemon_is_docker_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real connection attempt to a socket that does not exist."""
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(DockerUnavailable) as err:
        docker_engine.connect(timeout=5)
    assert err.value.exit_code == 8
    assert "unix:///nonexistent/docker.sock" in str(err.value)
    assert "DOCKER_HOST" in str(err.value)


def test_current_docker_context_is_honoured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A context made by the real docker CLI in a private DOCKER_CONFIG; nothing listens on it."""
    docker_cli = shutil.which("docker")
    if docker_cli is None:
        pytest.skip("docker CLI not installed")
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
    for args in (["create", "buildhost", "--docker", "host=tcp://127.0.0.1:9"], ["use", "buildhost"]):
        subprocess.run([docker_cli, "context", *args], check=True, capture_output=True)
    assert docker_engine.endpoint() == docker_engine.Endpoint(
        "tcp://127.0.0.1:9", "docker context 'buildhost'"
    )
    with pytest.raises(DockerUnavailable) as err:
        docker_engine.connect(timeout=5)
    assert "tcp://127.0.0.1:9" in str(err.value) and "buildhost" in str(err.value)
