"""Images tagged by the hash of what they are made of: the tag of a profile's image is
``rocm-buildkit/<profile>:<12 hex>``, the sha256 of (profile name, Dockerfile bytes, context file
bytes, build arguments, and the local image id of the base when the Dockerfile takes it from a
``BASE_IMAGE`` argument). An image with that tag is reused as is; any change to those inputs gives a
new tag, and the labels below let ``buildkit image ls``/``prune`` tell current images from stale ones."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors

from buildkit.errors import DockerUnavailable
from buildkit.image.args import effective_build_args
from buildkit.profiles import Profile, docker_dir

LABEL_PROFILE = "io.rocm-buildkit.profile"
LABEL_CONTENT = "io.rocm-buildkit.content-hash"
LABEL_SOURCES = "io.rocm-buildkit.sources-hash"
LABEL_BUILD_ARGS = "io.rocm-buildkit.building-args"
HASH_LENGTH = 12


@dataclass(frozen=True)
class ImageRef:
    """A builder image present in the engine."""

    profile: str
    tag: str
    id: str
    size: int
    created: str
    built: bool  # True when this call built it, False when it was reused


def base_image_ref(dockerfile_text: str, build_args: Mapping[str, str]) -> str | None:
    """The image a ``FROM ${BASE_IMAGE}`` Dockerfile starts from, or None for a fixed ``FROM``."""
    if not re.search(r"^FROM\s+\$\{?BASE_IMAGE\}?", dockerfile_text, re.MULTILINE):
        return None
    if "BASE_IMAGE" in build_args:
        return build_args["BASE_IMAGE"]
    match = re.search(r"^ARG\s+BASE_IMAGE=(\S+)", dockerfile_text, re.MULTILINE)
    return match.group(1) if match else None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sources_hash(profile: Profile, directory: Path) -> str:
    """Hash of the profile's files on disk (Dockerfile + context), independent of build args."""
    files = {name: _sha256((directory / name).read_bytes()) for name in sorted(profile.context_files)}
    doc = {"dockerfile": _sha256((directory / profile.dockerfile).read_bytes()), "context": files}
    return _sha256(json.dumps(doc, sort_keys=True).encode())


def content_tag(
    profile: Profile,
    directory: Path,
    build_args: Mapping[str, str] | None = None,
    base_image_id: str | None = None,
) -> str:
    """``rocm-buildkit/<profile>:<12 hex>`` of the inputs the module docstring lists."""
    doc = {
        "profile": profile.name,
        "sources": sources_hash(profile, directory),
        "build_args": effective_build_args(profile, build_args),
        "base_image_id": base_image_id,
    }
    return f"{profile.repository}:{_sha256(json.dumps(doc, sort_keys=True).encode())[:HASH_LENGTH]}"


def existing_image(client: Any, ref: str) -> Any:
    """The engine's image ``ref``, or None when it has none."""
    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None


def resolve_tag(
    client: Any, profile: Profile, build_args: Mapping[str, str] | None = None
) -> tuple[str, str | None]:
    """(content tag, base image reference) for the engine ``client`` talks to; a base the engine
    lacks is pulled first (offline, the error names ``buildkit image seed``)."""
    directory = docker_dir()
    args = effective_build_args(profile, build_args)
    base = base_image_ref((directory / profile.dockerfile).read_text(), args)
    found = existing_image(client, base) if base else None
    base_id = str(found.id) if found is not None else None
    if base and base_id is None:  # a fresh CI runner: its registry has the base
        try:
            base_id = str(client.images.pull(base).id)
        except docker.errors.APIError as exc:
            hint = f"`buildkit image seed {base}`" if base.startswith("debian:") else f"`docker pull {base}`"
            raise DockerUnavailable(
                f"base image {base} of profile {profile.name} is not in the engine and cannot be pulled "
                f"({exc})\n  hint: run {hint}"
            ) from None
    return content_tag(profile, directory, args, base_id), base


def image_ref(label: str, tag: str, image: Any, built: bool) -> ImageRef:
    """The :class:`ImageRef` of the engine's ``image`` (``label``: the profile name, or how a
    recipe's own image was made)."""
    attrs = image.attrs
    return ImageRef(
        profile=label,
        tag=tag,
        id=str(image.id),
        size=int(attrs.get("Size", 0)),
        created=str(attrs.get("Created", "")),
        built=built,
    )
