"""Builder and runtime images through the docker SDK, tagged by the hash of what they are made of.

A *profile* names a Dockerfile under ``docker/`` and the files its build context needs; the
profiles are data, ``docker/profiles.toml`` (:mod:`buildkit.profiles` reads and validates it).

Where the profiles and Dockerfiles are found (the first directory holding ``profiles.toml`` and
every Dockerfile it names wins): ``$BUILDKIT_DOCKER_DIR``; ``docker/`` next to the ``buildkit``
package (a checkout or an editable install); ``<sys.prefix>/share/rocm-buildkit/docker`` (a wheel
install: pyproject ships ``docker/*`` there as data files, ``profiles.toml`` included).

The modules, in the order an image is made:

* :mod:`~buildkit.image.args`: the build arguments of a profile's image and its ROCm release;
* :mod:`~buildkit.image.content`: the content tag and labels of an image, its base image;
* :mod:`~buildkit.image.engine`: a ``docker build`` streamed and logged;
* :mod:`~buildkit.image.ensure`: a profile's image, reused or built (:func:`ensure_image`);
* :mod:`~buildkit.image.builder`: the builder of a recipe's ``image:``
  (:func:`~buildkit.image.builder.ensure_builder`);
* :mod:`~buildkit.image.probe`: the builder contract, probed in a throwaway container;
* :mod:`~buildkit.image.inventory`: our images in the engine (``image ls``, ``prune``);
* :mod:`~buildkit.image.seed`, :mod:`~buildkit.image.base`: debootstrap bases and digest-pinned bases;
* :mod:`~buildkit.image.libraries`, :mod:`~buildkit.image.ceilings`, :mod:`~buildkit.image.torch`:
  what an image holds (C/C++ runtime libraries and the ceilings they define, torch's exports).

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
