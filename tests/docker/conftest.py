"""Fixtures for tests that need a real Docker engine.

Every docker test is checked for the labelled containers it leaves (``no_leftovers``): the engine is
shared, so a test removes what it made, and a container that outlives its dead owner is a leak a user
would meet as `buildkit image prune --containers` work.

``docker_client``: a client for the engine named by DOCKER_HOST / the current docker context.
When no engine answers, the test FAILS under CI (``CI=true``: the engine is part of the CI
contract) and is skipped elsewhere. ``debian_rocm_image``: the debian-rocm builder image, built
once per session (and across sessions: it is reused by its content tag). ``redis``: a real Redis
(Debian's redis-server) on 127.0.0.1 for ``build --ccache-remote``, started for the module.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from buildkit import image as images
from buildkit.docker_engine import CONTAINER_LABEL, Owner, connect
from buildkit.errors import DockerUnavailable


def _require_engine(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    try:
        client = connect(timeout=600)
    except DockerUnavailable as exc:
        _require_engine(f"no Docker engine: {exc}")
    yield client
    client.close()


@pytest.fixture(scope="session")
def debian_rocm_image(docker_client: Any) -> images.ImageRef:
    """The debian-rocm image; its base debian:trixie-slim must exist (ci/install-docker.sh seeds it)."""
    try:
        docker_client.images.get("debian:trixie-slim")
    except Exception:
        _require_engine("base image debian:trixie-slim missing: run `buildkit image seed debian:trixie-slim`")
    return images.ensure_image(images.get_profile("debian-rocm"), client=docker_client, progress=print)


def _leftovers(client: Any, before: set[str]) -> list[str]:
    """The labelled containers made since ``before`` that nobody will remove: this process's, or those
    of an owner that is gone (a subprocess of the test). A live build's beside the tests is not ours."""
    left = []
    for container in client.containers.list(all=True, filters={"label": CONTAINER_LABEL}):
        if container.id in before:
            continue
        labels = dict(container.labels or {})
        owner = Owner.of(labels)
        if owner is not None and (owner.pid == os.getpid() or owner.alive()[0] is False):
            left.append(f"{container.name} ({labels.get(CONTAINER_LABEL)}, {container.status})")
    return left


@pytest.fixture(autouse=True)
def no_leftovers(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a docker test that leaves a labelled container of its own behind (every test of this tier:
    those that drive buildkit in a subprocess too)."""
    client = request.getfixturevalue("docker_client")
    labelled = {"label": CONTAINER_LABEL}
    before = {c.id for c in client.containers.list(all=True, filters=labelled)}
    yield
    left = _leftovers(client, before)
    if left:
        pytest.fail(f"the test left {len(left)} container(s) on the engine: {', '.join(left)}", pytrace=False)


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def redis(docker_client: Any) -> Iterator[tuple[str, int]]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("redis-server is not installed: ./dev setup installs Debian's", pytrace=False)
    host = "127.0.0.1"  # the relay runs in the host's network namespace; nothing leaves loopback
    port = _free_port(host)
    proc = subprocess.Popen(
        [
            server,
            "--bind",
            host,
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "no",
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        for _ in range(50):
            with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
                break
            time.sleep(0.1)
        yield host, port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def redis_command(host: str, port: int, *command: str) -> str:
    """``redis-cli`` against the fixture's store: its reply."""
    done = subprocess.run(
        ["redis-cli", "-h", host, "-p", str(port), *command], capture_output=True, text=True
    )
    return done.stdout.strip()
