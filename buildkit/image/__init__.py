"""Builder and runtime images through the docker SDK, tagged by the hash of what they are made of
(the modules: docs/ARCHITECTURE.md). The profiles are data, ``docker/profiles.toml``
(:mod:`buildkit.profiles`, which also finds them: :func:`buildkit.profiles.docker_dir`).

This module only names what the layers above use; the modules never import it back.
"""

from __future__ import annotations

from buildkit.image.args import (
    KEEP_ARCHS_ARG,
    effective_build_args,
    parse_build_args,
    profile_rocm_args,
    rocm_build_args,
)
from buildkit.image.content import (
    HASH_LENGTH,
    LABEL_BUILD_ARGS,
    LABEL_CONTENT,
    LABEL_PROFILE,
    LABEL_SOURCES,
    ImageRef,
    base_image_ref,
    content_tag,
    resolve_tag,
    sources_hash,
)
from buildkit.image.engine import build_logged, default_log_path, stream_build
from buildkit.image.ensure import build_context, download_wheels, ensure_image
from buildkit.image.inventory import ImageInfo, list_images, prunable_images, prune_images
from buildkit.profiles import (
    PROFILES,
    REPOSITORY_PREFIX,
    Profile,
    docker_dir,
    get_profile,
    profile_build_args,
)

__all__ = [
    "HASH_LENGTH",
    "KEEP_ARCHS_ARG",
    "LABEL_BUILD_ARGS",
    "LABEL_CONTENT",
    "LABEL_PROFILE",
    "LABEL_SOURCES",
    "PROFILES",
    "REPOSITORY_PREFIX",
    "ImageInfo",
    "ImageRef",
    "Profile",
    "base_image_ref",
    "build_context",
    "build_logged",
    "content_tag",
    "default_log_path",
    "docker_dir",
    "download_wheels",
    "effective_build_args",
    "ensure_image",
    "get_profile",
    "list_images",
    "parse_build_args",
    "profile_build_args",
    "profile_rocm_args",
    "prunable_images",
    "prune_images",
    "resolve_tag",
    "rocm_build_args",
    "sources_hash",
    "stream_build",
]
