"""Unpacking a source archive without trusting it: :func:`unpack` (what is refused: docs/REFERENCE.md,
"A recipe").

Every member is checked before anything of it is written, by rules of our own (``tarfile``'s
``filter=`` exists only on newer Pythons); a second member of one name would overwrite the first or
write through it, a member below a symbolic link would be written wherever the link points. Each
refusal is an :class:`UnsafeArchive` naming the archive and the member.

The archive is read in one pass (a tar as a stream) below a temporary folder beside ``dest``,
renamed into place once every member passed: a refusal or a crash leaves no half-written tree.
Files get mode 0644 (0755 when the archive marks them executable) and the archive's modification
time; folders are 0755.
"""

from __future__ import annotations

import calendar
import contextlib
import lzma
import os
import posixpath
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

#: more members than this is refused (an sdist of a large project has a few tens of thousands)
MAX_MEMBERS = 200_000
#: more file data than this (the sum of the members' uncompressed sizes) is refused
MAX_TOTAL_BYTES = 4 * 2**30
#: a symbolic link target longer than this is refused (zip stores targets as member data)
_MAX_LINK_BYTES = 4096
#: links followed while resolving one target before it counts as a loop
_MAX_HOPS = 40
_CHUNK = 1 << 20
#: what reading a corrupt archive raises (gzip's and bz2's errors are OSErrors)
_READ_ERRORS = (
    tarfile.TarError,
    zipfile.BadZipFile,
    EOFError,
    zlib.error,
    lzma.LZMAError,
    OSError,
)


class _Loop(Exception):
    """A chain of symbolic links that does not end."""


class UnsafeArchive(ValueError):
    """An archive :func:`unpack` refuses (``member`` None: the archive as a whole)."""

    def __init__(self, archive: Path, member: str | None, reason: str) -> None:
        self.archive = archive
        self.member = member
        self.reason = reason
        where = f"member {member!r}: " if member is not None else ""
        super().__init__(f"{archive.name}: {where}{reason}")


@dataclass
class _Member:
    name: str  # as the archive spells it
    kind: str  # "file", "dir", "symlink", "hardlink"
    size: int = 0
    mode: int = 0o644
    mtime: float | None = None
    link: str = ""  # symlink target, or the hard link's archive name
    data: IO[bytes] | None = None


def _archive_format(path: Path) -> str:
    """``tar`` (plain, gzip, bzip2 or xz compressed) or ``zip``, by the file's first bytes."""
    with path.open("rb") as fh:
        head = fh.read(262)
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if head.startswith((b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00")) or head[257:262] == b"ustar":
        return "tar"
    raise UnsafeArchive(path, None, "not a tar.gz, tar.bz2, tar.xz or zip archive")


def unpack(archive: Path, dest: Path) -> Path:
    """Unpack ``archive`` into ``dest`` (which must not exist), its single top folder stripped."""
    if dest.exists() or dest.is_symlink():
        raise FileExistsError(f"{dest} exists")
    kind = _archive_format(archive)
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.unpack-", dir=dest.parent))
    try:
        root = work / "root"
        root.mkdir()
        writer = _Writer(archive, root)
        members = _tar_members(archive) if kind == "tar" else _zip_members(archive)
        for member in members:
            writer.add(member)
        writer.check_links()
        entries = list(root.iterdir())
        top = (
            entries[0] if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink() else root
        )
        os.rename(top, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest


def _tar_members(archive: Path) -> Iterator[_Member]:
    try:
        with tarfile.open(archive, mode="r|*") as tar:
            for info in tar:
                member = _Member(info.name, "file", info.size, info.mode, info.mtime, info.linkname)
                if info.isreg():
                    member.data = tar.extractfile(info)
                elif info.isdir():
                    member.kind = "dir"
                elif info.issym():
                    member.kind = "symlink"
                elif info.islnk():
                    member.kind = "hardlink"
                else:
                    what = {
                        tarfile.CHRTYPE: "a character device",
                        tarfile.BLKTYPE: "a block device",
                        tarfile.FIFOTYPE: "a FIFO",
                    }.get(info.type, f"a member of tar type {info.type!r}")
                    raise UnsafeArchive(archive, info.name, f"is {what}; a source archive holds files")
                yield member
    except _READ_ERRORS as exc:  # gzip's and bz2's errors are OSErrors
        raise UnsafeArchive(archive, None, f"cannot be read as a tar archive: {exc}") from None


def _zip_members(archive: Path) -> Iterator[_Member]:
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_MEMBERS:
                raise UnsafeArchive(archive, None, f"has {len(infos)} members, more than {MAX_MEMBERS}")
            for info in infos:
                mode = info.external_attr >> 16
                fmt = stat.S_IFMT(mode)
                mtime = calendar.timegm((*info.date_time, 0, 0, 0))  # zip times have no zone: UTC
                member = _Member(info.filename, "file", info.file_size, mode or 0o644, mtime)
                if info.flag_bits & 0x1:
                    raise UnsafeArchive(archive, info.filename, "is encrypted")
                if info.is_dir() or fmt == stat.S_IFDIR:
                    member.kind = "dir"
                elif fmt == stat.S_IFLNK:
                    if info.file_size > _MAX_LINK_BYTES:
                        raise UnsafeArchive(archive, info.filename, "is a symbolic link with a huge target")
                    member.kind = "symlink"
                    member.link = zf.read(info).decode("utf-8", "surrogateescape")
                elif fmt not in (0, stat.S_IFREG):
                    raise UnsafeArchive(
                        archive, info.filename, "is a special file; a source archive holds files"
                    )
                else:
                    member.data = zf.open(info)
                yield member
                if member.data is not None:
                    member.data.close()
    except (*_READ_ERRORS, NotImplementedError) as exc:  # NotImplementedError: unknown compression
        raise UnsafeArchive(archive, None, f"cannot be read as a zip archive: {exc}") from None


def _clean_name(archive: Path, raw: str) -> str:
    """The member's relative POSIX path (``./`` and trailing ``/`` dropped), or refused."""
    name = raw.rstrip("/")
    while name.startswith("./"):
        name = name[2:]
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":" and raw[0].isalpha()):
        raise UnsafeArchive(archive, raw, "has an absolute name")
    if "\\" in name:
        raise UnsafeArchive(archive, raw, "has a backslash in its name (a Windows path?)")
    parts = name.split("/")
    if ".." in parts:
        raise UnsafeArchive(archive, raw, "has a '..' component: it would be written outside the tree")
    if "\0" in name:
        raise UnsafeArchive(archive, raw, "has a NUL byte in its name")
    return "/".join(p for p in parts if p not in ("", "."))


class _Writer:
    """Writes checked members below ``root`` and remembers what it wrote."""

    def __init__(self, archive: Path, root: Path) -> None:
        self.archive = archive
        self.root = root
        self.count = 0
        self.total = 0
        self.files: set[str] = set()
        self.dirs: set[str] = {""}
        self.links: dict[str, tuple[str, str]] = {}  # name -> (target, archive name)

    def refuse(self, member: _Member, reason: str) -> UnsafeArchive:
        return UnsafeArchive(self.archive, member.name, reason)

    def add(self, member: _Member) -> None:
        self.count += 1
        if self.count > MAX_MEMBERS:
            raise self.refuse(member, f"is one member too many: more than {MAX_MEMBERS} members")
        name = _clean_name(self.archive, member.name)
        if not name:
            if member.kind == "dir":
                return  # the archive's own "./"
            raise self.refuse(member, "has an empty name")
        self._check_parents(member, name)
        if member.kind == "dir":
            if name in self.files or name in self.links:
                raise self.refuse(member, f"is a folder, and the archive has {name!r} as a file before it")
            self._mkdirs(name)
            return
        if name in self.dirs:
            raise self.refuse(
                member, f"is a {member.kind}, and the archive has {name!r} as a folder before it"
            )
        if name in self.files or name in self.links:
            raise self.refuse(member, "is in the archive twice: the second would overwrite the first")
        self._mkdirs(posixpath.dirname(name))
        if member.kind == "symlink":
            self._symlink(member, name)
        elif member.kind == "hardlink":
            self._hardlink(member, name)
        else:
            assert member.data is not None
            self._write(member, name, member.data)

    def _check_parents(self, member: _Member, name: str) -> None:
        parent = posixpath.dirname(name)
        while parent:
            if parent in self.links:
                raise self.refuse(
                    member,
                    f"lies below the symbolic link {parent!r}: it would be written wherever the link points",
                )
            if parent in self.files:
                raise self.refuse(member, f"lies below {parent!r}, which the archive has as a file")
            parent = posixpath.dirname(parent)

    def _mkdirs(self, name: str) -> None:
        if name in self.dirs:
            return
        self._mkdirs(posixpath.dirname(name))
        os.mkdir(self.root / name, 0o755)
        self.dirs.add(name)

    def _account(self, member: _Member, size: int) -> None:
        self.total += size
        if self.total > MAX_TOTAL_BYTES:
            raise self.refuse(
                member, f"takes the archive's file data over {MAX_TOTAL_BYTES} bytes uncompressed"
            )

    def _write(self, member: _Member, name: str, data: IO[bytes]) -> None:
        self._account(member, member.size)
        mode = 0o755 if member.mode & 0o111 else 0o644
        fd = os.open(self.root / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        written = 0
        with os.fdopen(fd, "wb") as out:
            while True:
                try:
                    chunk = data.read(_CHUNK)
                except _READ_ERRORS as exc:
                    raise self.refuse(member, f"cannot be read: {exc}") from None
                if not chunk:
                    break
                written += len(chunk)
                if written > member.size:
                    raise self.refuse(member, f"holds more data than the {member.size} bytes it declares")
                out.write(chunk)
        os.chmod(self.root / name, mode)  # not the umask's choice: what the archive marks executable
        if member.mtime is not None:
            with contextlib.suppress(OSError, OverflowError, ValueError):
                os.utime(self.root / name, (max(member.mtime, 0), max(member.mtime, 0)))
        self.files.add(name)

    def _symlink(self, member: _Member, name: str) -> None:
        target = member.link
        if not target or target.startswith("/") or "\0" in target:
            raise self.refuse(member, f"is a symbolic link to {target!r}, outside the tree")
        self._check_link(name, target, member.name)
        os.symlink(target, self.root / name)
        self.links[name] = (target, member.name)

    def _hardlink(self, member: _Member, name: str) -> None:
        raw = member.link
        try:
            target = _clean_name(self.archive, raw)
        except UnsafeArchive:
            raise self.refuse(member, f"is a hard link to {raw!r}, outside the tree") from None
        if target not in self.files:
            raise self.refuse(member, f"is a hard link to {raw!r}, which is not a file extracted before it")
        source = self.root / target
        st = source.stat()
        with source.open("rb") as data:  # a copy: the build may change one file, not both
            self._write(_Member(member.name, "file", st.st_size, st.st_mode, member.mtime), name, data)

    def _check_link(self, name: str, target: str, raw: str) -> None:
        try:
            inside = self._resolve(posixpath.join(posixpath.dirname(name), target)) is not None
        except _Loop:
            raise UnsafeArchive(
                self.archive, raw, f"is a symbolic link to {target!r}, a chain of links that never ends"
            ) from None
        if not inside:
            raise UnsafeArchive(self.archive, raw, f"is a symbolic link to {target!r}, which leaves the tree")

    def _resolve(self, path: str, hops: int = 0) -> list[str] | None:
        """``path`` (relative to the tree root) with the archive's links followed, as components;
        None when it leaves the tree; :class:`_Loop` when the links loop."""
        out: list[str] = []
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not out:
                    return None
                out.pop()
                continue
            out.append(part)
            link = self.links.get("/".join(out))
            if link is not None:
                if hops >= _MAX_HOPS:
                    raise _Loop
                resolved = self._resolve(posixpath.join("/".join(out[:-1]), link[0]), hops + 1)
                if resolved is None:
                    return None
                out = resolved
        return out

    def check_links(self) -> None:
        """Every link again, now that all are known: a link that stayed inside when it was written
        may leave the tree through a link written after it (``a -> b/..`` then ``b -> .``)."""
        for name, (target, raw) in self.links.items():
            self._check_link(name, target, raw)
