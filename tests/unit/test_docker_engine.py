"""Engine endpoint resolution and the dead-daemon error (no running engine needed)."""

from __future__ import annotations

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
