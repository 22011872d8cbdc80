"""A profile's base image the engine lacks is pulled before its content tag is computed (a fresh CI
runner: the Action builds without a separate pull step, issue 36); offline the error names
``buildkit image seed``. The engine is a stand-in: no registry is reachable here."""

from __future__ import annotations

import hashlib
from typing import Any

import docker.errors
import pytest

from buildkit import image as images
from buildkit.errors import DockerUnavailable


class _Image:
    def __init__(self, ref: str) -> None:
        self.id = "sha256:" + hashlib.sha256(ref.encode()).hexdigest()


class _Images:
    def __init__(self, registry: bool) -> None:
        self.registry = registry
        self.local: dict[str, _Image] = {}
        self.pulled: list[str] = []

    def get(self, ref: str) -> _Image:
        if ref not in self.local:
            raise docker.errors.ImageNotFound(f"No such image: {ref}")
        return self.local[ref]

    def pull(self, ref: str) -> _Image:
        if not self.registry:
            raise docker.errors.APIError("Get https://registry-1.docker.io/v2/: dial tcp: no such host")
        self.pulled.append(ref)
        self.local[ref] = _Image(ref)
        return self.local[ref]


class _Client:
    def __init__(self, registry: bool) -> None:
        self.images = _Images(registry)


def test_a_missing_base_is_pulled_then_tagged_as_if_it_had_been_there() -> None:
    profile = images.get_profile("debian-rocm")
    client: Any = _Client(registry=True)
    tag, base = images.resolve_tag(client, profile)
    assert base == "debian:trixie-slim" and client.images.pulled == ["debian:trixie-slim"]
    again, _ = images.resolve_tag(client, profile)  # now present: not pulled again, the same tag
    assert again == tag and client.images.pulled == ["debian:trixie-slim"]
    assert tag == images.content_tag(profile, images.docker_dir(), None, client.images.local[base].id)


def test_offline_the_error_names_the_seed_command() -> None:
    with pytest.raises(DockerUnavailable) as caught:
        images.resolve_tag(_Client(registry=False), images.get_profile("debian-rocm"))
    message = str(caught.value)
    assert (
        "base image debian:trixie-slim of profile debian-rocm is not in the engine and cannot be pulled"
        in message
    )
    assert "no such host" in message and "buildkit image seed debian:trixie-slim" in message
