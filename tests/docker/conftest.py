"""Fixtures for tests that need a real Docker engine.

``docker_client``: a client for the engine named by DOCKER_HOST / the current docker context.
When no engine answers, the test FAILS under CI (``CI=true``: the engine is part of the CI
contract) and is skipped elsewhere. ``debian_rocm_image``: the debian-rocm builder image, built
once per session (and across sessions: it is reused by its content tag).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from buildkit import image as images
from buildkit.docker_engine import connect
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
    return images.ensure_image("debian-rocm", client=docker_client, progress=print)
