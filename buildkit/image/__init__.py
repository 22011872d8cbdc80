"""Builder images through the docker SDK, tagged by the hash of what they are made of.

A *profile* names a Dockerfile under ``docker/`` and the files its build context needs; the
profiles are data, ``docker/profiles.toml`` (:mod:`buildkit.profiles` reads and validates
it). The tag of an image is ``rocm-buildkit/<profile>:<12 hex>``, the sha256 of (profile name,
Dockerfile bytes, context file bytes, build arguments, and the local image id of the base when the
Dockerfile takes it from a ``BASE_IMAGE`` argument). When an image with that tag exists it is
reused as is; any change to those inputs gives a new tag, and ``prune`` removes the images whose
sources changed.

Python tools are installed in the images offline: a profile's ``wheel_requirements`` are pinned,
hash-checked requirement files; :func:`ensure_image` downloads them on the host (``pip download``)
into ``wheels/`` of a temporary build context, so the build needs no pip index or CA bundle.
The requirement files are part of the hash; the downloaded wheels are not (their hashes are pinned).

Where the profiles and Dockerfiles are found (the first directory holding ``profiles.toml`` and
every Dockerfile it names wins): ``$BUILDKIT_DOCKER_DIR``; ``docker/`` next to the ``buildkit``
package (a checkout or an editable install); ``<sys.prefix>/share/rocm-buildkit/docker`` (a wheel
install: pyproject ships ``docker/*`` there as data files, ``profiles.toml`` included).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import docker.errors

from buildkit import rocm as rocm_data
from buildkit.docker_engine import connect
from buildkit.errors import BuildFailed, DockerUnavailable, UsageError
from buildkit.fsutil import cache_home
from buildkit.profiles import PROFILES as PROFILES
from buildkit.profiles import REPOSITORY_PREFIX as REPOSITORY_PREFIX  # the images' name (ls, smoke)
from buildkit.profiles import Profile, docker_dir, get_profile, profile_build_args
from buildkit.rocm.install import el8_install, el8_installs

LABEL_PROFILE = "io.rocm-buildkit.profile"
LABEL_CONTENT = "io.rocm-buildkit.content-hash"
LABEL_SOURCES = "io.rocm-buildkit.sources-hash"
LABEL_BUILD_ARGS = "io.rocm-buildkit.build-args"
HASH_LENGTH = 12

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ImageRef:
    """A builder image present in the engine."""

    profile: str
    tag: str
    id: str
    size: int
    created: str
    built: bool  # True when this call built it, False when it was reused


@dataclass(frozen=True)
class ImageInfo:
    """One of our images as ``buildkit image ls`` shows it."""

    profile: str
    tags: tuple[str, ...]
    id: str
    size: int
    created: str
    current: bool  # its sources hash equals the one of the files on disk now

    def to_json(self) -> dict[str, Any]:
        """One image of ``buildkit image ls --json`` (``buildkit/schema/image-ls.schema.json``)."""
        return {
            "profile": self.profile,
            "tags": list(self.tags),
            "id": self.id,
            "size": self.size,
            "created": self.created,
            "state": "current" if self.current else "stale",
        }


def parse_build_args(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``["K=V", ...]`` -> ``{"K": "V"}``; a pair without ``=`` is a usage error."""
    args: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--build-arg expects KEY=VALUE, got {pair!r}")
        args[key] = value
    return args


#: the build argument naming the processors whose GPU kernel libraries stay in the image
KEEP_ARCHS_ARG = "KEEP_GFX_ARCHS"


def rocm_build_args(profile_name: str, rocm: str, archs: Iterable[str] | None = None) -> dict[str, str]:
    """The build arguments that make ``profile_name``'s image carry ROCm ``rocm`` (a release such as
    "7.2"): the patch, AMD's repositories and the packages of ``buildkit/rocm/install.yaml``. With
    ``archs`` (target ids), the image keeps the GPU kernel libraries of those processors only. A
    profile fixed to other releases refuses; a release without install data is a usage error."""
    profile = get_profile(profile_name)
    if profile.rocm_releases is not None:
        if rocm not in profile.rocm_releases:
            raise UsageError(
                f"image profile {profile.name} provides ROCm {', '.join(profile.rocm_releases)} only, "
                f"not {rocm}; use the manylinux_2_28-rocm profile for other releases"
            )
        return profile.release_build_args(rocm)
    if profile.rocm_build_arg is None:
        return {}
    install = el8_install(rocm)
    args = {
        profile.rocm_build_arg: install.version,
        "ROCM_REPO": install.rocm_repo,
        "GRAPHICS_REPO": install.graphics_repo,
        "ROCM_GPG_KEY": install.gpg_key,
        "ROCM_PACKAGES": " ".join(install.packages()),
    }
    if archs is not None:
        kept = sorted({rocm_data.processor_of(a) for a in archs}, key=rocm_data.processor_sort_key)
        if kept:
            args[KEEP_ARCHS_ARG] = ";".join(kept)
    return args


def profile_rocm_args(profile_name: str, rocm: str | None, build_args: Mapping[str, str]) -> dict[str, str]:
    """``buildkit image build``'s arguments: a profile that installs AMD's packages gets the
    install.yaml arguments of ``rocm`` (default: the newest release there) under ``build_args``,
    which may override any of them but the release itself (``--rocm`` names it)."""
    profile = get_profile(profile_name)
    if profile.rocm_releases is not None:  # fixed releases: --rocm may only name one of them
        if profile.releases:  # one image per release: --rocm picks it (default: the newest)
            chosen = rocm if rocm is not None else profile.rocm_releases[-1]
            return {**rocm_build_args(profile.name, chosen), **build_args}
        if rocm is not None:
            rocm_build_args(profile.name, rocm)
        return dict(build_args)
    if profile.rocm_build_arg is None:
        if rocm is not None:
            raise UsageError(f"image profile {profile.name} installs no ROCm release of its own: drop --rocm")
        return dict(build_args)
    if profile.rocm_build_arg in build_args:
        raise UsageError(
            f"--build-arg {profile.rocm_build_arg}: the ROCm release and its repositories come from "
            f"buildkit/rocm/install.yaml; use --rocm RELEASE (e.g. --rocm "
            f"{build_args[profile.rocm_build_arg].rsplit('.', 1)[0]})"
        )
    chosen = rocm if rocm is not None else el8_installs()[-1].rocm
    return {**rocm_build_args(profile.name, chosen), **build_args}


def effective_build_args(profile: Profile, build_args: Mapping[str, str] | None) -> dict[str, str]:
    merged = dict(profile.build_args)
    merged.update(build_args or {})
    return dict(sorted(merged.items()))


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


def content_hash(
    profile: Profile,
    directory: Path,
    build_args: Mapping[str, str] | None = None,
    base_image_id: str | None = None,
) -> str:
    """Full sha256 over profile, Dockerfile, context files, build args and the base image id."""
    doc = {
        "profile": profile.name,
        "sources": sources_hash(profile, directory),
        "build_args": effective_build_args(profile, build_args),
        "base_image_id": base_image_id,
    }
    return _sha256(json.dumps(doc, sort_keys=True).encode())


def content_tag(
    profile: Profile,
    directory: Path,
    build_args: Mapping[str, str] | None = None,
    base_image_id: str | None = None,
) -> str:
    """``rocm-buildkit/<profile>:<12 hex>``."""
    digest = content_hash(profile, directory, build_args, base_image_id)
    return f"{profile.repository}:{digest[:HASH_LENGTH]}"


def _local_image_id(client: Any, ref: str) -> str | None:
    try:
        return str(client.images.get(ref).id)
    except docker.errors.ImageNotFound:
        return None


def resolve_tag(
    client: Any, profile: Profile, build_args: Mapping[str, str] | None = None
) -> tuple[str, str | None]:
    """(content tag, base image reference) for the engine ``client`` talks to."""
    directory = docker_dir()
    args = effective_build_args(profile, build_args)
    base = base_image_ref((directory / profile.dockerfile).read_text(), args)
    base_id = _local_image_id(client, base) if base else None
    if base and base_id is None:
        hint = f"`buildkit image seed {base}`" if base.startswith("debian:") else f"`docker pull {base}`"
        raise DockerUnavailable(
            f"base image {base} of profile {profile.name} is not in the engine\n  hint: run {hint}"
        )
    return content_tag(profile, directory, args, base_id), base


def _image_ref(profile: Profile, tag: str, image: Any, built: bool) -> ImageRef:
    attrs = image.attrs
    return ImageRef(
        profile=profile.name,
        tag=tag,
        id=str(image.id),
        size=int(attrs.get("Size", 0)),
        created=str(attrs.get("Created", "")),
        built=built,
    )


def download_wheels(profile: Profile, directory: Path, dest: Path, *, progress: Progress) -> None:
    """``pip download`` the profile's pinned, hash-checked requirements for its image's Python."""
    for requirements in profile.wheel_requirements:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--disable-pip-version-check",
            "--no-deps",
            "--require-hashes",
            "--only-binary=:all:",
            "--python-version",
            profile.wheel_python,
            "--dest",
            str(dest),
            "--requirement",
            str(directory / requirements),
        ]
        progress(f"wheels: pip download -r {requirements}")
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise BuildFailed(
                f"cannot download the wheels pinned in {directory / requirements}:\n{tail}\n"
                "  hint: the host needs a pip index (PIP_INDEX_URL) and its CA (PIP_CERT)"
            )


@contextmanager
def build_context(profile: Profile, *, progress: Progress) -> Iterator[Path]:
    """A temporary directory holding the Dockerfile, the context files and the wheelhouse."""
    directory = docker_dir()
    with tempfile.TemporaryDirectory(prefix=f"buildkit-{profile.name}-") as tmp:
        root = Path(tmp)
        for name in (profile.dockerfile, *profile.context_files):
            shutil.copy2(directory / name, root / name)
        wheels = root / "wheels"
        wheels.mkdir()
        download_wheels(profile, directory, wheels, progress=progress)
        yield root


def default_log_path(name: str, tag: str) -> Path:
    """``~/.cache/rocm-buildkit/logs/image-<name>-<content hash>.log``."""
    return cache_home() / "logs" / f"image-{name}-{tag.rsplit(':', 1)[1]}.log"


def stream_build(
    client: Any,
    context: Path,
    dockerfile: str,
    tag: str,
    args: dict[str, str],
    labels: dict[str, str],
    log: TextIO,
    progress: Progress,
) -> str:
    """Run the build, passing every output line to ``progress`` and ``log``; the image id."""
    image_id = ""
    tail: list[str] = []
    stream = client.api.build(
        path=str(context),
        dockerfile=dockerfile,
        tag=tag,
        buildargs=args,
        labels=labels,
        rm=True,
        forcerm=True,
        pull=False,
        decode=True,
    )
    for chunk in stream:
        if "error" in chunk:
            detail = str(chunk.get("errorDetail", {}).get("message") or chunk["error"])
            log.write(detail + "\n")
            log.flush()
            raise BuildFailed(
                f"building image {tag} ({dockerfile}) failed: {detail.strip()}\n"
                + "".join(f"  | {line}\n" for line in tail[-10:])
                + f"  full log: {log.name}"
            )
        text = chunk.get("stream") or chunk.get("status") or ""
        if text:
            log.write(text if text.endswith("\n") else text + "\n")
            log.flush()
            for line in text.splitlines():
                if line.strip():
                    tail.append(line)
                    progress(line)
        aux = chunk.get("aux")
        if isinstance(aux, dict) and "ID" in aux:
            image_id = str(aux["ID"])
    return image_id


def ensure_image(
    profile_name: str,
    *,
    build_args: Mapping[str, str] | None = None,
    client: Any = None,
    progress: Progress | None = None,
    log_path: Path | None = None,
    rebuild: bool = False,
) -> ImageRef:
    """The image of ``profile_name`` with these build args: reused when its content tag exists."""
    report = progress or (lambda _line: None)
    profile = get_profile(profile_name)
    args = effective_build_args(profile, build_args)
    declared = profile_build_args(profile)
    unknown = [name for name in args if name not in declared]
    if unknown:  # Docker would only warn "build-args were not consumed" and tag the image anyway
        raise UsageError(
            f"{profile.dockerfile} declares no ARG {', '.join(unknown)}; its build arguments: "
            f"{', '.join(declared) or 'none'}"
        )
    if client is None:
        client = connect()
    tag, _base = resolve_tag(client, profile, args)
    if not rebuild:
        try:
            existing = client.images.get(tag)
        except docker.errors.ImageNotFound:
            existing = None
        if existing is not None:
            report(f"reusing {tag} ({existing.short_id})")
            return _image_ref(profile, tag, existing, built=False)

    log_file = log_path or default_log_path(profile.name, tag)
    labels = {
        LABEL_PROFILE: profile.name,
        LABEL_CONTENT: tag.rsplit(":", 1)[1],
        LABEL_SOURCES: sources_hash(profile, docker_dir()),
        LABEL_BUILD_ARGS: json.dumps(args, sort_keys=True),
    }
    report(f"building {tag} from {profile.dockerfile} (log: {log_file})")
    with build_context(profile, progress=report) as context:
        image = build_logged(client, context, profile.dockerfile, tag, args, labels, log_file, report)
    return _image_ref(profile, tag, image, built=True)


def build_logged(
    client: Any,
    context: Path,
    dockerfile: str,
    tag: str,
    args: dict[str, str],
    labels: dict[str, str],
    log_file: Path,
    progress: Progress,
) -> Any:
    """:func:`stream_build` with its output kept in ``log_file``; the built image (the engine's
    object). A refused build is :class:`BuildFailed` naming the log."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("w") as log:
        try:
            image_id = stream_build(client, context, dockerfile, tag, args, labels, log, progress)
        except docker.errors.APIError as exc:
            raise BuildFailed(f"building image {tag} failed: {exc}\n  full log: {log_file}") from None
    return client.images.get(image_id or tag)


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
