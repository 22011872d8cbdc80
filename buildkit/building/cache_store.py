"""The compiler cache carried off the machine: ``buildkit cache export|import DIR|FILE.tar``.

The cache volumes' contents leave and enter the engine through a throwaway container that holds them
at ``/cache/<volume>`` and is never started: the engine's archive API reads and writes a created
container's mounts, so no host path is mounted and nothing runs (its image does not matter: the first
local image of rocm-buildkit or Debian). The carried form is one tar of ``<volume>/<ccache's files>``:
a ``.tar`` file, or a folder of one sub-folder per volume (what a CI cache such as ``actions/cache``
saves). An import refuses any member that is not a regular file or folder under a cache volume's
name (no link, no absolute or ``..`` name)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from buildkit.building.cibw import CCACHE_VOLUME_PREFIX
from buildkit.docker_engine import throwaway
from buildkit.errors import UsageError

#: every compiler-cache volume's name starts so (``cibw.ccache_volume``)
_VOLUME_PREFIX = CCACHE_VOLUME_PREFIX
_VOLUME_NAME = re.compile(rf"^{re.escape(_VOLUME_PREFIX)}[0-9a-f]{{12}}$")
#: where the throwaway container holds each volume
_MOUNT_ROOT = "/cache"
#: local images a throwaway may be created from, in this order of preference (never started)
_CARRIERS = ("rocm-buildkit/", "debian:")


@dataclass(frozen=True)
class Carried:
    """What an export or import moved."""

    volumes: tuple[str, ...]
    files: int
    size: int

    def describe(self) -> str:
        names = ", ".join(self.volumes) or "no volume"
        return f"{len(self.volumes)} cache volume(s) ({names}): {self.files} files, {self.size} bytes"


def cache_volumes(client: Any) -> list[str]:
    """The names of the engine's compiler-cache volumes, sorted."""
    found = client.volumes.list(filters={"name": _VOLUME_PREFIX})
    return sorted(v.name for v in found if _VOLUME_NAME.match(v.name))


def carrier_image(client: Any) -> str:
    """A local image to create the (never started) throwaway container from."""
    tags: list[str] = [str(tag) for image in client.images.list() for tag in image.tags]
    for prefix in _CARRIERS:
        chosen = sorted(t for t in tags if t.startswith(prefix))
        if chosen:
            return chosen[0]
    raise UsageError(
        "no local image of rocm-buildkit or Debian to carry the cache volumes through\n"
        "  hint: `buildkit image seed debian:trixie-slim` makes one"
    )


class _Chunks(io.RawIOBase):
    """A readable file over the engine's archive stream (an iterable of byte chunks)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._rest = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._rest:
            try:
                self._rest = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(buffer), len(self._rest))
        buffer[:n] = self._rest[:n]
        self._rest = self._rest[n:]
        return n


def _mounts(volumes: Sequence[str]) -> dict[str, str]:
    return {name: f"{_MOUNT_ROOT}/{name}" for name in volumes}


def _members(stream: IO[bytes]) -> Iterator[tuple[tarfile.TarFile, tarfile.TarInfo]]:
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            yield tar, member


def export_cache(client: Any, dest: Path, volumes: Sequence[str] | None = None) -> Carried:
    """Every cache volume (or ``volumes``) into ``dest``: a ``.tar`` file (written whole, then
    renamed into place) or a folder (each volume's sub-folder replaced whole)."""
    names = list(volumes) if volumes is not None else cache_volumes(client)
    unknown = [n for n in names if not _VOLUME_NAME.match(n)]
    if unknown:
        raise UsageError(f"not compiler-cache volumes of rocm-buildkit: {', '.join(unknown)}")
    as_tar = dest.suffix == ".tar"
    folder = dest.parent if as_tar else dest
    files = size = 0
    with contextlib.ExitStack() as stack:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            work = Path(
                stack.enter_context(tempfile.TemporaryDirectory(dir=folder, prefix=".buildkit-cache-"))
            )
        except OSError as err:
            raise UsageError(f"{dest}: cannot write there: {err.strerror or err}") from None
        out = stack.enter_context(tarfile.open(work / "cache.tar", "w")) if as_tar else None
        box = stack.enter_context(
            throwaway(client, carrier_image(client), ["true"], purpose="cache-export", volumes=_mounts(names))
        )
        for name in names:
            stream, _stat = box.get_archive(f"{_MOUNT_ROOT}/{name}")
            for tar, member in _members(io.BufferedReader(_Chunks(stream), 1 << 20)):
                if member.isfile():
                    files += 1
                    size += member.size
                if out is not None:
                    out.addfile(member, tar.extractfile(member) if member.isfile() else None)
                else:
                    tar.extract(member, work, filter="data")
        if out is not None:
            out.close()
            os.replace(work / "cache.tar", dest)
        else:
            for name in names:
                target = dest / name
                if target.exists():
                    shutil.rmtree(target)
                if (work / name).exists():
                    os.replace(work / name, target)
    return Carried(tuple(names), files, size)


def _check_member(member: tarfile.TarInfo, source: Path) -> str:
    """The volume a member of an imported tar belongs to; UsageError for anything but ccache's files."""
    parts = member.name.split("/")
    if member.name.startswith("/") or ".." in parts or not _VOLUME_NAME.match(parts[0]):
        raise UsageError(f"{source}: {member.name!r} is not a file of a rocm-buildkit cache volume")
    if not (member.isfile() or member.isdir()):
        raise UsageError(f"{source}: {member.name!r} is not a regular file or folder")
    return parts[0]


def _tar_of_folder(source: Path, into: IO[bytes]) -> None:
    with tarfile.open(fileobj=into, mode="w") as tar:
        for volume in sorted(p for p in source.iterdir() if p.is_dir() and _VOLUME_NAME.match(p.name)):
            tar.add(volume, arcname=volume.name)


def import_cache(client: Any, source: Path) -> Carried:
    """The cache volumes of ``source`` (a ``.tar`` file or a folder of an export) into the engine's
    volumes of the same names (made when missing); entries already there are replaced, others kept
    (ccache's files are named by their content's hash). The whole archive is read first: a file that
    is not a tar, or one cut short, is a UsageError before the engine is asked anything."""
    if not source.exists():
        hint = f" (a symbolic link to {os.readlink(source)})" if source.is_symlink() else ""
        raise UsageError(f"{source}: no such file or folder{hint}")
    with contextlib.ExitStack() as stack:
        try:
            if source.is_dir():
                spooled = stack.enter_context(tempfile.TemporaryFile())
                _tar_of_folder(source, spooled)
                archive: IO[bytes] = spooled
            else:
                archive = stack.enter_context(source.open("rb"))
            names, files, size = _scan(archive, source)
        except OSError as err:
            raise UsageError(f"{source}: cannot read it: {err.strerror or err}") from None
        archive.seek(0)
        if names:
            box = stack.enter_context(
                throwaway(
                    client, carrier_image(client), ["true"], purpose="cache-import", volumes=_mounts(names)
                )
            )
            if not box.put_archive(_MOUNT_ROOT, archive):
                raise UsageError(f"{source}: the engine refused the archive")
    return Carried(tuple(names), files, size)


def _scan(archive: IO[bytes], source: Path) -> tuple[list[str], int, int]:
    """The volumes, file count and bytes of an archive to import, every member checked
    (:func:`_check_member`) and every member's data inside the file (tarfile stops quietly at a cut
    between members and only finds a cut inside one when it reads the data)."""
    end = archive.seek(0, os.SEEK_END)
    archive.seek(0)
    volumes: dict[str, None] = {}
    files = size = 0
    try:
        with tarfile.open(fileobj=archive, mode="r:") as tar:
            for member in tar:
                volumes[_check_member(member, source)] = None
                if member.offset_data + member.size > end:
                    raise UsageError(
                        f"{source}: truncated: {member.name!r} needs {member.size} bytes from offset "
                        f"{member.offset_data}, the file ends at {end}; export it again"
                    )
                if member.isfile():
                    files += 1
                    size += member.size
            archive.seek(tar.offset)  # after the last member: the end-of-archive blocks, unless cut there
            if tar.offset and archive.read(2 * tarfile.BLOCKSIZE) != bytes(2 * tarfile.BLOCKSIZE):
                raise UsageError(
                    f"{source}: truncated after {tar.offset} bytes (no end-of-archive blocks after the "
                    "last member: members may be missing); export it again"
                )
    except (tarfile.TarError, EOFError) as err:
        raise UsageError(
            f"{source}: not a tar of `buildkit cache export` ({err}); give the .tar file or the folder "
            "an export wrote"
        ) from None
    return sorted(volumes), files, size
