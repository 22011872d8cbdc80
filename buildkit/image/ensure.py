"""A profile's image, reused when its content tag exists, else built.

:func:`ensure_image` downloads a profile's pinned, hash-checked ``wheel_requirements`` on the host
into ``wheels/`` of a temporary build context, so the build needs no pip index or CA bundle. The
requirement files are part of the hash; the downloaded wheels are not (their hashes are pinned).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from buildkit.docker_engine import connect
from buildkit.errors import BuildFailed, UsageError
from buildkit.image.args import effective_build_args
from buildkit.image.content import (
    LABEL_BUILD_ARGS,
    LABEL_CONTENT,
    LABEL_PROFILE,
    LABEL_SOURCES,
    ImageRef,
    existing_image,
    image_ref,
    resolve_tag,
    sources_hash,
)
from buildkit.image.engine import Progress, build_logged, default_log_path
from buildkit.profiles import Profile, docker_dir, profile_build_args


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


def ensure_image(
    profile: Profile,
    *,
    build_args: Mapping[str, str] | None = None,
    client: Any = None,
    progress: Progress | None = None,
    log_path: Path | None = None,
    rebuild: bool = False,
) -> ImageRef:
    """The image of ``profile`` with these build args: reused when its content tag exists."""
    report = progress or (lambda _line: None)
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
    existing = None if rebuild else existing_image(client, tag)
    if existing is not None:
        report(f"reusing {tag} ({existing.short_id})")
        return image_ref(profile.name, tag, existing, built=False)

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
    return image_ref(profile.name, tag, image, built=True)
