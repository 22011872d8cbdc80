"""Our images in the engine, as ``buildkit image ls`` and ``prune`` see them: those carrying the
profile label, each current (its sources hash is the one of the files on disk now) or stale."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import docker.errors

from buildkit.errors import DockerUnavailable
from buildkit.image.content import LABEL_PROFILE, LABEL_SOURCES, sources_hash
from buildkit.profiles import PROFILES, REPOSITORY_PREFIX, docker_dir
from buildkit.records import Key, json_shape


@json_shape(
    *("profile", "tags", "id", "size", "created"),
    Key("state", "current", convert=lambda current: "current" if current else "stale"),
)
@dataclass(frozen=True)
class ImageInfo:
    """One of our images as ``buildkit image ls`` shows it."""

    profile: str
    tags: tuple[str, ...]
    id: str
    size: int
    created: str
    current: bool  # its sources hash equals the one of the files on disk now


def list_images(client: Any) -> list[ImageInfo]:
    """Our images (those carrying the profile label), newest first."""
    directory = docker_dir()
    current = {name: sources_hash(profile, directory) for name, profile in PROFILES.items()}
    infos = []
    for image in client.images.list(filters={"label": LABEL_PROFILE}):
        labels = image.labels or {}
        profile = str(labels.get(LABEL_PROFILE, ""))
        infos.append(
            ImageInfo(
                profile=profile,
                tags=tuple(t for t in image.tags if t.startswith(REPOSITORY_PREFIX)),
                id=str(image.id),
                size=int(image.attrs.get("Size", 0)),
                created=str(image.attrs.get("Created", "")),
                # an image of a project's own Dockerfile (no profile of ours): its sources are the
                # project's, so only `prune --all` removes it
                current=profile.startswith("dockerfile:")
                or current.get(profile) == labels.get(LABEL_SOURCES),
            )
        )
    return sorted(infos, key=lambda i: i.created, reverse=True)


def prunable_images(client: Any, *, remove_all: bool = False) -> list[ImageInfo]:
    """What :func:`prune_images` would remove: our stale images, or all of ours; removes nothing."""
    return [info for info in list_images(client) if remove_all or not info.current]


def prune_images(
    client: Any, *, remove_all: bool = False, only: Collection[str] | None = None
) -> list[ImageInfo]:
    """Remove our stale images (sources changed since they were built), or all of ours; ``only``:
    just those of these ids (the ones a listing showed)."""
    removed = []
    for info in prunable_images(client, remove_all=remove_all):
        if only is not None and info.id not in only:
            continue
        try:
            client.images.remove(info.id, force=True)
        except docker.errors.ImageNotFound:
            continue
        except docker.errors.APIError as exc:
            raise DockerUnavailable(f"cannot remove image {info.id[:19]}: {exc}") from None
        removed.append(info)
    return removed
