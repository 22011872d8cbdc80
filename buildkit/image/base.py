"""A profile's base image pinned by digest (``FROM <repository>@sha256:<digest>``, never a floating
tag), and moving the pin forward (``buildkit image bump-base``): a tag resolved to the digest the
registry serves now (``docker buildx imagetools inspect``: the registry's answer, not a local
image), written into the ``FROM`` line and the ``# base-image:`` line above it (the tag and the
day). The profile's content tag changes with the Dockerfile bytes, so the next build uses it.
"""

from __future__ import annotations

import datetime
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from buildkit.errors import BuildFailed, DockerUnavailable, UsageError
from buildkit.fsutil import atomic_write
from buildkit.profiles import Profile, docker_dir

INSPECT_TIMEOUT = 120
_FROM = re.compile(r"^FROM\s+(?P<repository>[^\s@]+)@(?P<digest>sha256:[0-9a-f]{64})(?P<rest>.*)$", re.M)
_NOTE = re.compile(r"^# base-image: .*$", re.M)
_DIGEST = re.compile(r"^Digest:\s+(sha256:[0-9a-f]{64})\s*$", re.M)
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


@dataclass(frozen=True)
class Pin:
    """The ``FROM repository@digest`` of a Dockerfile."""

    repository: str
    digest: str


@dataclass(frozen=True)
class Bump:
    """What ``bump-base`` found and did."""

    dockerfile: Path
    reference: str  # repository:tag that was resolved
    old: str
    new: str
    written: bool

    @property
    def changed(self) -> bool:
        return self.old != self.new


def pinned_base(text: str, where: str = "the Dockerfile") -> Pin:
    """The digest-pinned base of a Dockerfile's text (UsageError when its FROM is not pinned)."""
    match = _FROM.search(text)
    if match is None:
        raise UsageError(
            f"{where} has no `FROM <image>@sha256:<digest>` line: its base is not pinned by digest"
        )
    return Pin(match.group("repository"), match.group("digest"))


def parse_inspect(output: str, reference: str, platform: str = "linux/amd64") -> str:
    """The digest ``docker buildx imagetools inspect REF`` reports for REF (the first ``Digest:``,
    the index's own when REF is multi-platform); an index must list a manifest for ``platform``."""
    match = _DIGEST.search(output)
    if match is None:
        raise BuildFailed(
            f"`docker buildx imagetools inspect {reference}` printed no `Digest: sha256:...` line:\n"
            + "\n".join(output.strip().splitlines()[:8])
        )
    if re.search(r"^Manifests:", output, re.M) and not re.search(
        rf"^\s+Platform:\s+{re.escape(platform)}\s*$", output, re.M
    ):
        raise BuildFailed(f"{reference} lists no {platform} manifest: it cannot be the base of this image")
    return match.group(1)


def resolve_digest(reference: str, *, run: Runner = subprocess.run) -> str:
    """The digest the registry serves for ``reference`` now (needs the docker CLI with buildx and the
    registry: a connected machine)."""
    command: Sequence[str] = ("docker", "buildx", "imagetools", "inspect", reference)
    try:
        proc = run(list(command), capture_output=True, text=True, timeout=INSPECT_TIMEOUT, check=False)
    except FileNotFoundError:
        raise DockerUnavailable(
            "bump-base needs the docker CLI with the buildx plugin (`docker buildx imagetools inspect`)\n"
            "  hint: install docker-buildx, or run it where Docker Desktop / docker-ce is installed"
        ) from None
    except subprocess.TimeoutExpired:
        raise BuildFailed(
            f"`{' '.join(command)}` did not answer within {INSPECT_TIMEOUT} s\n"
            "  hint: the registry must be reachable from this machine"
        ) from None
    if proc.returncode != 0:
        detail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        if "is not a docker command" in detail or "unknown command" in detail:
            raise DockerUnavailable(
                f"the docker CLI has no buildx plugin:\n{detail}\n  hint: install docker-buildx(-plugin)"
            )
        raise BuildFailed(
            f"`{' '.join(command)}` failed (exit {proc.returncode}):\n{detail}\n"
            "  hint: check the tag exists (quay.io/repository/pypa/manylinux_2_28_x86_64?tab=tags) and the "
            "registry is reachable"
        )
    return parse_inspect(proc.stdout, reference)


def rewrite_base(text: str, digest: str, reference: str, day: datetime.date) -> str:
    """``text`` with its pinned ``FROM`` moved to ``digest`` and the ``# base-image:`` line (added above
    ``FROM`` when missing) naming ``reference`` and the day it was resolved."""
    if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        raise ValueError(f"{digest!r} is not a sha256 digest")
    match = _FROM.search(text)
    if match is None:
        raise UsageError("the Dockerfile has no digest-pinned FROM line to rewrite")
    note = f"# base-image: {reference} resolved {day.isoformat()} with docker buildx imagetools inspect"
    line = f"FROM {match.group('repository')}@{digest}{match.group('rest')}"
    out = text[: match.start()] + line + text[match.end() :]
    found = _NOTE.search(out)
    if found is not None:
        return out[: found.start()] + note + out[found.end() :]
    start = out.index(line)
    return out[:start] + note + "\n" + out[start:]


def bump_base(
    profile: Profile,
    tag: str = "latest",
    *,
    dry_run: bool = False,
    run: Runner = subprocess.run,
    today: datetime.date | None = None,
) -> Bump:
    """Resolve ``<the profile's base repository>:<tag>`` and pin the profile's Dockerfile to it (unless
    ``dry_run`` or it is pinned there already)."""
    if not _TAG.match(tag):
        raise UsageError(f"--tag {tag!r} is not an image tag (letters, digits, '_', '.', '-')")
    path = docker_dir() / profile.dockerfile
    text = path.read_text(encoding="utf-8")
    pin = pinned_base(text, str(path))
    reference = f"{pin.repository}:{tag}"
    digest = resolve_digest(reference, run=run)
    written = False
    if digest != pin.digest and not dry_run:
        new_text = rewrite_base(text, digest, reference, today or datetime.date.today())
        atomic_write(path, new_text, mode=path.stat().st_mode & 0o777)
        written = True
    return Bump(dockerfile=path, reference=reference, old=pin.digest, new=digest, written=written)
