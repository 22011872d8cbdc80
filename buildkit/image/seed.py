"""Base images for machines without a registry: ``debootstrap --variant=minbase`` a Debian rootfs (the
mirror read from the host's apt sources), ``docker import`` it as ``debian:<suite>-slim``; nothing
happens when the tag exists, and the rootfs's temporary folder is removed whatever happens.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors

from buildkit.docker_engine import connect
from buildkit.errors import BuildFailed, UsageError

DEFAULT_MIRROR = "http://deb.debian.org/debian"
_SUITE_SUFFIXES = ("-security", "-updates", "-backports", "-proposed-updates")
_TAG = re.compile(r"^debian:(?P<suite>[a-z]+)(?P<slim>-slim)?$")

Progress = Callable[[str], None]


@dataclass(frozen=True)
class SeedResult:
    tag: str
    id: str
    created: bool  # False: the tag existed and was kept
    mirror: str | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class AptSource:
    types: tuple[str, ...]
    uris: tuple[str, ...]
    suites: tuple[str, ...]
    components: tuple[str, ...]
    enabled: bool = True


def suite_of(tag: str) -> str:
    """``debian:trixie-slim`` -> ``trixie``; other images cannot be made with debootstrap."""
    match = _TAG.match(tag)
    if not match:
        raise UsageError(
            f"cannot seed {tag!r}: only Debian suites can be made with debootstrap "
            "(debian:SUITE or debian:SUITE-slim, e.g. debian:trixie-slim)"
        )
    return match.group("suite")


def parse_deb822(text: str) -> list[AptSource]:
    """Entries of a deb822 ``.sources`` file (paragraphs of ``Field: value``)."""
    sources = []
    for paragraph in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        key = ""
        for line in paragraph.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line[0].isspace() and key:
                fields[key] += " " + line.strip()
                continue
            key, _, value = line.partition(":")
            key = key.strip().lower()
            fields[key] = value.strip()
        if "uris" not in fields:
            continue
        sources.append(
            AptSource(
                types=tuple(fields.get("types", "").split()),
                uris=tuple(fields["uris"].split()),
                suites=tuple(fields.get("suites", "").split()),
                components=tuple(fields.get("components", "").split()),
                enabled=fields.get("enabled", "yes").lower() not in ("no", "false", "0"),
            )
        )
    return sources


def parse_one_line(text: str) -> list[AptSource]:
    """Entries of a one-line-style ``sources.list`` (``deb [opts] URI SUITE COMPONENT...``)."""
    sources = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        line = re.sub(r"\[[^\]]*\]", " ", line)
        words = line.split()
        if len(words) < 3:
            continue
        sources.append(AptSource((words[0],), (words[1],), (words[2],), tuple(words[3:])))
    return sources


def _is_debian_archive(source: AptSource, uri: str) -> bool:
    if not source.enabled or "deb" not in source.types:
        return False
    if not uri.startswith(("http://", "https://")) or "security" in uri:
        return False
    if not any(s and not s.endswith(_SUITE_SUFFIXES) for s in source.suites):
        return False
    return "main" in source.components and "debian" in uri


def host_mirror(apt_dir: Path = Path("/etc/apt")) -> str | None:
    """The Debian archive URI configured on this host, or None when there is none."""
    files: list[tuple[Path, bool]] = []
    if (apt_dir / "sources.list").is_file():
        files.append((apt_dir / "sources.list", False))
    parts = apt_dir / "sources.list.d"
    if parts.is_dir():
        for path in sorted(parts.iterdir()):
            if path.suffix == ".sources":
                files.append((path, True))
            elif path.suffix == ".list":
                files.append((path, False))
    for path, deb822 in files:
        text = path.read_text(errors="replace")
        for source in parse_deb822(text) if deb822 else parse_one_line(text):
            for uri in source.uris:
                if _is_debian_archive(source, uri):
                    return uri.rstrip("/")
    return None


def _debootstrap() -> str:
    found = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin:/sbin")
    if found is None:
        raise BuildFailed(
            "debootstrap is not installed: it is needed to make a base image without a registry\n"
            "  hint: apt-get install -y debootstrap (ci/install-docker.sh does it)"
        )
    return found


def _check_root() -> None:
    if os.geteuid() != 0:
        raise BuildFailed(
            "debootstrap must run as root (it creates device nodes and chroots)\n"
            "  hint: run `sudo buildkit image seed ...`, or pull the image from a registry instead"
        )


def _unmount_leftovers(rootfs: Path) -> None:
    """A failed debootstrap can leave /proc or /sys mounted in the rootfs: never delete through them."""
    for sub in ("dev/pts", "dev", "sys", "proc"):
        point = rootfs / sub
        if point.is_dir() and os.path.ismount(point):
            subprocess.run(["umount", "-l", str(point)], check=False)


def _run(cmd: list[str], progress: Progress, what: str) -> None:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    tail: list[str] = []
    for line in proc.stdout:
        line = line.rstrip()
        tail = [*tail[-14:], line]
        progress(line)
    if proc.wait() != 0:
        raise BuildFailed(f"{what} failed (exit {proc.returncode}):\n" + "\n".join(f"  | {t}" for t in tail))


def seed_base(
    tag: str,
    *,
    client: Any = None,
    mirror: str | None = None,
    progress: Progress | None = None,
    force: bool = False,
) -> SeedResult:
    """Make the Debian base image ``tag`` with debootstrap + docker import, unless it exists."""
    report = progress or (lambda _line: None)
    suite = suite_of(tag)
    if client is None:
        client = connect()
    if not force:
        try:
            image = client.images.get(tag)
        except docker.errors.ImageNotFound:
            image = None
        if image is not None:
            report(f"{tag} exists ({image.short_id}): kept")
            return SeedResult(tag, str(image.id), created=False)
    debootstrap = _debootstrap()
    _check_root()
    chosen = mirror or host_mirror() or DEFAULT_MIRROR
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"buildkit-seed-{suite}-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        report(f"debootstrap --variant=minbase {suite} {rootfs} {chosen}")
        try:
            _run([debootstrap, "--variant=minbase", suite, str(rootfs), chosen], report, "debootstrap")
        finally:
            _unmount_leftovers(rootfs)
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for item in (rootfs / leftover).glob("*"):
                if item.is_file():
                    item.unlink()
        tarball = Path(tmp) / "rootfs.tar"
        report(f"packing {rootfs} -> {tarball}")
        _run(
            ["tar", "--numeric-owner", "--xattrs", "-C", str(rootfs), "-cf", str(tarball), "."],
            report,
            "tar of the rootfs",
        )
        repository, _, image_tag = tag.partition(":")
        report(f"docker import {tarball} {tag}")
        try:
            client.api.import_image_from_file(
                str(tarball), repository=repository, tag=image_tag, changes=['CMD ["bash"]']
            )
        except docker.errors.APIError as exc:
            raise BuildFailed(f"docker import of {tag} failed: {exc}") from None
    image = client.images.get(tag)
    seconds = time.monotonic() - start
    report(f"{tag} imported ({image.short_id}) in {seconds:.0f} s")
    return SeedResult(tag, str(image.id), created=True, mirror=chosen, seconds=seconds)
