"""The C and C++ runtime libraries of an image, read without running anything in it.

:func:`read_libraries` reads libc.so.6, libm.so.6, libstdc++.so.6 and libgcc_s.so.1 out of a
never-started throwaway container (label ``io.rocm-buildkit.container=ceilings``), one
``get_archive`` request per path, following symlinks inside the image's tree (``..`` stops at its
root; directory symlinks such as ``/lib -> usr/lib`` are resolved by the engine), and parses the
version definitions of the file finally reached (:func:`check_libraries` judges the reading).
"""

from __future__ import annotations

import io
import posixpath
import re
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import docker.errors
from docker.client import DockerClient

from buildkit.docker_engine import Throwaway, throwaway
from buildkit.errors import DockerUnavailable, UsageError
from buildkit.inspect.verdef import version_definitions
from buildkit.policy import split_symbol_version, version_tuple
from buildkit.records import json_shape

MAX_LIBRARY_BYTES = 256 * 1024 * 1024  # a libc/libstdc++ is a few MiB; refuse absurd files

MAX_SYMLINK_HOPS = 40  # as the kernel's ELOOP limit

#: library -> the SONAME looked up; the prefixes each library is expected to define
LIBRARIES: tuple[tuple[str, str], ...] = (
    ("libc", "libc.so.6"),
    ("libm", "libm.so.6"),
    ("libstdc++", "libstdc++.so.6"),
    ("libgcc_s", "libgcc_s.so.1"),
)

#: SONAME -> the version prefix a genuine copy of it always defines (libm defines GLIBC_* too)
EXPECTED_PREFIX: dict[str, str] = {
    "libc.so.6": "GLIBC",
    "libm.so.6": "GLIBC",
    "libstdc++.so.6": "GLIBCXX",
    "libgcc_s.so.1": "GCC",
}

# glibc's banner (what `gnu_get_libc_version` and running libc.so.6 print), read as bytes, not run
_GLIBC_BANNER = re.compile(rb"GNU C Library [^\n\0]{0,200}? release version (\d+\.\d+)")

_SYMLINK_LOOP = re.compile(r"too many (?:levels of symbolic )?links", re.IGNORECASE)


def search_dirs(triplet: str) -> tuple[str, ...]:
    """The usual library directories, in the order the dynamic loader's defaults would try them."""
    return (f"/lib/{triplet}", f"/usr/lib/{triplet}", "/lib64", "/usr/lib64", "/lib", "/usr/lib")


@json_shape()
@dataclass(frozen=True)
class LibraryVersions:
    """One library as found in the image.

    ``path`` is the regular file finally read (``None`` when not found), ``chain`` the symlinks
    followed to it (``("/usr/lib/x86_64-linux-gnu/libstdc++.so.6",)``), ``definitions`` the version
    names it defines (``"GLIBCXX_3.4.30"``, ``"CXXABI_TM_1"``...), sorted; ``problem`` says why a
    library present under its name could not be read (not ELF, no version definitions, symlink loop).
    """

    soname: str
    path: str | None
    chain: tuple[str, ...] = ()
    definitions: tuple[str, ...] = ()
    problem: str | None = None
    release: str | None = None  # libc only: "2.36" from glibc's banner

    @property
    def found(self) -> bool:
        return self.path is not None and self.problem is None

    def maxima(self) -> dict[str, str]:
        """Highest numeric version defined per prefix (``{"GLIBC": "2.36"}``)."""
        best: dict[str, str] = {}
        for name in self.definitions:
            prefix, version = split_symbol_version(name)
            key = version_tuple(version)
            if key is None:
                continue
            cur = best.get(prefix)
            if cur is None or key > (version_tuple(cur) or ()):
                best[prefix] = version
        return best

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> LibraryVersions:
        return cls(
            soname=str(raw["soname"]),
            path=None if raw.get("path") is None else str(raw["path"]),
            chain=tuple(str(c) for c in raw.get("chain", ())),
            definitions=tuple(str(d) for d in raw.get("definitions", ())),
            problem=None if raw.get("problem") is None else str(raw["problem"]),
            release=None if raw.get("release") is None else str(raw["release"]),
        )


@dataclass(frozen=True)
class _Member:
    kind: str  # "file", "link", "directory", "special file", "symlink loop"
    data: bytes = b""
    link: str = ""


def _read_member(container: Throwaway, path: str) -> _Member | None:
    """One ``get_archive`` request for ``path``: the single tar member it returns (a regular file's
    bytes, a symlink's target), or ``None`` when the path does not exist."""
    try:
        stream, _stat = container.get_archive(path)
    except docker.errors.NotFound:
        return None
    except docker.errors.APIError as exc:
        # the engine resolves symlinks within the container's root itself and answers 500
        # "evalSymlinksInScope: too many links" (ELOOP) for a loop on the way: no other signal
        if _SYMLINK_LOOP.search(str(exc.explanation or exc)):
            return _Member("symlink loop")
        raise
    buf = io.BytesIO()
    for chunk in stream:
        buf.write(chunk)
        if buf.tell() > MAX_LIBRARY_BYTES + 1024 * 1024:
            raise UsageError(f"{path} in the image is larger than {MAX_LIBRARY_BYTES} bytes: not a library")
    buf.seek(0)
    with tarfile.open(fileobj=buf, mode="r:") as tar:
        member = tar.next()
        if member is None:
            return None
        if member.issym():
            return _Member("link", link=member.linkname)
        if member.isfile():
            handle = tar.extractfile(member)
            assert handle is not None
            return _Member("file", data=handle.read())
        return _Member("directory" if member.isdir() else "special file")


def _resolve_link(path: str, target: str) -> str:
    """The absolute in-image path a symlink at ``path`` points to (``..`` stops at the image root)."""
    joined = target if target.startswith("/") else posixpath.join(posixpath.dirname(path), target)
    return "/" + posixpath.normpath("/" + joined).lstrip("/")


def _fetch_library(container: Throwaway, soname: str, dirs: Sequence[str]) -> LibraryVersions:
    for directory in dirs:
        path = posixpath.join(directory, soname)
        chain: list[str] = []
        for _hop in range(MAX_SYMLINK_HOPS):
            got = _read_member(container, path)
            if got is None:
                break  # a dangling name here: try the next directory
            if got.kind == "link":
                chain.append(path)
                path = _resolve_link(path, got.link)
                continue
            if got.kind == "symlink loop":
                return LibraryVersions(soname, path, tuple(chain), problem=f"{path}: symlink loop")
            if got.kind != "file":
                return LibraryVersions(soname, path, tuple(chain), problem=f"{path} is a {got.kind}")
            value = got.data
            try:
                _machine, names = version_definitions(value)
            except ValueError as exc:
                return LibraryVersions(soname, path, tuple(chain), problem=f"{path}: {exc}")
            if not names:
                problem = f"{path} defines no symbol versions (.gnu.version_d missing)"
                return LibraryVersions(soname, path, tuple(chain), problem=problem)
            expected = EXPECTED_PREFIX.get(soname)
            if expected is not None and not any(split_symbol_version(n)[0] == expected for n in names):
                problem = f"{path} defines no {expected}_* version: not a genuine {soname}"
                return LibraryVersions(soname, path, tuple(chain), problem=problem)
            release = None
            if soname == "libc.so.6":
                banner = _GLIBC_BANNER.search(value)
                release = banner.group(1).decode() if banner else None
            return LibraryVersions(soname, path, tuple(chain), names, release=release)
        else:
            return LibraryVersions(soname, path, tuple(chain), problem=f"{path}: symlink loop")
    return LibraryVersions(soname, None)


def check_libraries(image: str, triplet: str, libs: Sequence[LibraryVersions]) -> None:
    """Refuse a reading the ceilings cannot be trusted from (UsageError, exit 2): no libc.so.6, or a
    library present under its name that could not be read. Absent libstdc++ / libgcc_s are fine."""
    libc = next((lib for lib in libs if lib.soname == "libc.so.6"), None)
    if libc is None or libc.path is None:
        raise UsageError(
            f"image {image!r} has no libc.so.6 in {', '.join(search_dirs(triplet))}: "
            "not a glibc-based image (musl images need musllinux wheels)"
        )
    broken = [lib for lib in libs if lib.problem is not None]
    if broken:
        what = "; ".join(f"{lib.soname}: {lib.problem}" for lib in broken)
        raise UsageError(
            f"image {image!r}: cannot read the symbol versions of {what}\n"
            "  hint: a runtime image needs intact ELF libraries with .gnu.version_d; "
            "its ceilings cannot be read from this one"
        )


def read_libraries(client: DockerClient, image_id: str, triplet: str) -> tuple[LibraryVersions, ...]:
    try:
        # created, never started: the command is a placeholder (imported images have none)
        with throwaway(client, image_id, ["/buildkit-ceilings-never-started"], purpose="ceilings") as box:
            dirs = search_dirs(triplet)
            return tuple(_fetch_library(box, soname, dirs) for _lib, soname in LIBRARIES)
    except docker.errors.APIError as exc:
        raise DockerUnavailable(f"reading libraries from image {image_id}: {exc}") from None
