"""Read a wheel without extracting it: validate the zip, read the dist-info files, and hand every ELF
member to :mod:`buildkit.inspect.elf` in a thread pool.

Reading: :mod:`zipfile` parses the central directory once; members are then read through one shared
descriptor with ``os.pread`` and inflated by ISA-L when installed (:mod:`~buildkit.inspect.zipstream`),
``default_workers()`` at a time, while a separate thread computes the wheel's sha256 (hashlib releases
the GIL); :class:`~buildkit.inspect.limits.Limits` says which wheels are read on one thread, which
members are read to their end (zip CRC checked) and which whole. Members are streamed only as far as
the parse needs (:mod:`~buildkit.inspect.elf`). ``verify_record=True`` (the default) reads every member
to its end, hashing it in the algorithm RECORD names (:class:`~buildkit.inspect.zipstream.DigestStream`;
the gate compares): ELF members are parsed exactly as without it, the rest is only hashed.

Hostile-input rules (each raises :class:`~buildkit.errors.WheelReadError`, exit 6):

* not a zip, truncated or corrupt central directory, bad local headers, CRC or deflate errors in the
  bytes read, encrypted members;
* more than ``Limits.max_members`` entries; a member declaring more than ``max_member_size`` bytes, all
  members together more than ``max_total_size``, or a member over 1 MiB expanding more than
  ``max_ratio`` times (zip bombs); the declared size is also a hard bound while streaming: the reader never
  yields more than it, and a member whose data would decompress further fails its CRC;
* member names with ``..`` components, absolute paths, backslashes or NUL; duplicate names; members
  whose data overlap (the overlapping-entries bomb);
* no ``.dist-info/WHEEL``; malformed ELF or offload bundles (see :mod:`~buildkit.inspect.elf`).

A member named like a shared library (``*.so``, ``*.so.N``) that is not ELF is *not* a read error: it is
a :class:`~buildkit.inspect.models.Oddity` (``not-elf-library``, naming its first 16 bytes) for the gate
to judge (an extension module Python would import is an error there; a linker script in a development
area is not). ELF members are recognised by their first four bytes, whatever their name.

Memory: each worker holds at most one member's kept ranges (``head_bytes + tail_bytes`` + section
table + ``PT_DYNAMIC`` with up to ``dynamic_reach`` before it + the dynamic string table + bundle-header
windows, or in a second pass the exact ranges, capped at ``max_second_pass_bytes``) plus two
``chunk_size`` buffers and 8 bytes per undefined, non-weak ``.dynsym`` entry (the table is scanned,
not kept), or one small member read whole (at most 1 MiB + 4 MiB); the sha256 thread one 4 MiB
block. With the defaults and 2 workers that is about 35 MiB above the interpreter, whatever the
wheel's size. Nothing is written to disk.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import os
import re
import stat
import threading
import zipfile
import zlib
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import IO, NamedTuple

from packaging.tags import Tag
from packaging.utils import BuildTag, InvalidWheelFilename, NormalizedName, parse_wheel_filename
from packaging.version import Version

from buildkit.errors import WheelReadError
from buildkit.inspect.elf import ELF_MAGIC, read_elf_bytes, read_elf_member
from buildkit.inspect.limits import Limits, MiB
from buildkit.inspect.models import (
    CodeObject,
    CoreMetadata,
    ElfInfo,
    LinkMember,
    MemberFile,
    MemberStat,
    Oddity,
    RecordEntry,
    WheelReport,
)
from buildkit.inspect.zipstream import (
    DigestStream,
    open_member,
    read_whole,
    record_hash,
    sniff,
    whole_readable,
)
from buildkit.manifest import sha256_fd

_READ_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    OSError,
    NotImplementedError,
    RuntimeError,
    UnicodeDecodeError,  # a member name flagged UTF-8 that is not (zipfile decodes names on open)
)
_MAX_DIST_INFO_FILE = 64 * MiB
_MAX_HEADER_FIELDS = 50_000
_LINE_END = re.compile(r"(\r\n|\r|\n)")
# RECORD's own line carries no hash; its signatures are not listed in it (the wheel spec, PEP 491)
RECORD_EXEMPT = ("RECORD", "RECORD.jws", "RECORD.p7s")


#: how many first bytes of a member are read to tell ELF from not, and shown when a member named
#: like a shared library is not ELF (``#!/bin/sh``, ``/* GNU ld script``, ``INPUT(``, ...)
HEAD_SHOWN = 16


def _looks_like_library(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base.endswith(".so") or ".so." in base


def _not_elf(name: str, head: bytes) -> tuple[str, tuple[Oddity, ...]]:
    """The kind of a member that is not ELF, and the finding when it is named like a library."""
    if not _looks_like_library(name):
        return "other", ()
    message = f"{name} is named like a shared library but is not ELF (starts with {head!r})"
    return "not-elf-library", (Oddity("not-elf-library", name, message),)


def _check_names(infos: list[zipfile.ZipInfo]) -> None:
    seen: set[str] = set()
    for info in infos:
        name = info.filename
        if not name:
            raise WheelReadError(f"a member at offset {info.header_offset} has an empty name")
        if "\x00" in name or "\\" in name:
            raise WheelReadError(f"member name {name!r} contains a backslash or NUL")
        if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
            raise WheelReadError(f"member name {name!r} is an absolute path")
        if ".." in name.split("/"):
            raise WheelReadError(f"member name {name!r} escapes the install directory ('..')")
        if name in seen:
            raise WheelReadError(f"member {name!r} appears twice in the zip")
        seen.add(name)


def _check_sizes(zf: zipfile.ZipFile, infos: list[zipfile.ZipInfo], limits: Limits) -> int:
    if len(infos) > limits.max_members:
        raise WheelReadError(f"wheel has {len(infos)} members (limit {limits.max_members})")
    total = 0
    for info in infos:
        if info.flag_bits & 0x1:
            raise WheelReadError(f"{info.filename}: encrypted members are not allowed in a wheel")
        if info.file_size > limits.max_member_size:
            raise WheelReadError(
                f"{info.filename}: declares {info.file_size} bytes uncompressed "
                f"(limit {limits.max_member_size})"
            )
        ratio = info.file_size / max(info.compress_size, 1)
        floor = limits.metadata_ratio_floor if ".dist-info/" in info.filename else limits.ratio_floor
        if info.file_size > floor and ratio > limits.max_ratio:
            raise WheelReadError(
                f"{info.filename}: expands {ratio:.0f}x (limit {limits.max_ratio:.0f}x): zip bomb?"
            )
        total += info.file_size
    if total > limits.max_total_size:
        raise WheelReadError(f"members declare {total} bytes in all (limit {limits.max_total_size})")
    ordered = sorted(infos, key=lambda i: i.header_offset)
    end_of_data = getattr(zf, "start_dir", None)
    # each member and the next one's offset (the central directory's after the last; none without members)
    for this, following in zip(ordered, [*ordered[1:], None][: len(ordered)], strict=True):
        limit = following.header_offset if following is not None else end_of_data
        if limit is not None and this.header_offset + 30 + this.compress_size > limit:
            raise WheelReadError(
                f"{this.filename}: its data overlaps the next entry (overlapping-member zip bomb?)"
            )
    return total


class _MemberResult(NamedTuple):
    """What one member gave: its ELF facts or code object, findings, read statistics and digest."""

    elf: ElfInfo | None
    code_object: CodeObject | None
    findings: tuple[Oddity, ...]
    stat: MemberStat
    hash: str | None = None


class _Reader:
    """Reads members through one shared descriptor (``os.pread``: no seek state to share between
    threads, and the central directory is parsed once, by the caller's ZipFile)."""

    def __init__(
        self,
        fd: int,
        fallback: zipfile.ZipFile,
        limits: Limits,
        inflater: str | None,
        algorithms: dict[str, str] | None = None,
        symbols: Collection[str] | None = None,
    ) -> None:
        self.algorithms = algorithms or {}  # member -> hashlib algorithm: hash it while reading
        self.symbols = symbols  # undefined dynamic symbols worth naming (None: the default set)
        self.fd = fd
        self.fallback = fallback
        self.limits = limits
        self.inflater = inflater

    def open(self, info: zipfile.ZipInfo) -> IO[bytes]:
        return open_member(self.fd, info, self.fallback, inflater=self.inflater)

    def member(self, info: zipfile.ZipInfo) -> _MemberResult:
        name = info.filename
        try:
            return self._member(info)
        except WheelReadError:
            raise
        except _READ_ERRORS as err:
            raise WheelReadError(f"{name}: cannot read member: {err}") from None

    def members(self, batch: list[zipfile.ZipInfo]) -> list[_MemberResult]:
        return [self.member(info) for info in batch]

    def _member(self, info: zipfile.ZipInfo) -> _MemberResult:
        name = info.filename
        algorithm = self.algorithms.get(name)
        if algorithm is not None and whole_readable(info, self.limits.read_whole_bytes):
            return self._whole(info, algorithm)
        head = sniff(self.fd, info, self.fallback, size=HEAD_SHOWN)
        if head[: len(ELF_MAGIC)] != ELF_MAGIC:
            kind, findings = _not_elf(name, head)
            read, digest = len(head), None
            if algorithm is not None:
                read, digest = info.file_size, self._digest(info, algorithm)
            stat = MemberStat(name, info.compress_size, info.file_size, read, 1, kind)
            return _MemberResult(None, None, findings, stat, digest)
        streams: list[DigestStream] = []

        def opener() -> IO[bytes]:
            if algorithm is None or (streams and streams[-1].complete):
                return self.open(info)  # a pass after the one that read it all: nothing more to hash
            streams.append(DigestStream(self.open(info), algorithm, info.file_size))
            return streams[-1]  # type: ignore[return-value]

        result = read_elf_member(
            name,
            opener,
            info.file_size,
            self.limits,
            read_to_end=algorithm is not None,
            symbols=self.symbols,
        )
        kind = "amdgpu" if result.code_object is not None else "elf"
        stat = MemberStat(name, info.compress_size, info.file_size, result.bytes_read, result.passes, kind)
        digest = streams[-1].record_hash() if streams else None  # no stream follows a complete one
        if algorithm is not None and digest is None:
            raise WheelReadError(f"{name}: not read to its end, cannot verify its RECORD hash")
        return _MemberResult(result.elf, result.code_object, result.findings, stat, digest)

    def _whole(self, info: zipfile.ZipInfo, algorithm: str) -> _MemberResult:
        """A small member to be hashed anyway: read whole at once (one ``pread``, one inflate), hashed,
        and parsed from memory when it is ELF."""
        name = info.filename
        data = read_whole(self.fd, info, inflater=self.inflater)
        digest = record_hash(algorithm, hashlib.new(algorithm, data).digest())
        if data[: len(ELF_MAGIC)] != ELF_MAGIC:
            kind, findings = _not_elf(name, data[:HEAD_SHOWN])
            stat = MemberStat(name, info.compress_size, info.file_size, info.file_size, 1, kind)
            return _MemberResult(None, None, findings, stat, digest)
        result = read_elf_bytes(name, data, self.limits, symbols=self.symbols)
        kind = "amdgpu" if result.code_object is not None else "elf"
        stat = MemberStat(name, info.compress_size, info.file_size, info.file_size, result.passes, kind)
        return _MemberResult(result.elf, result.code_object, result.findings, stat, digest)

    def _digest(self, info: zipfile.ZipInfo, algorithm: str) -> str:
        """Stream a whole member through ``algorithm`` (its CRC is checked on the way)."""
        with DigestStream(self.open(info), algorithm, info.file_size) as stream:
            while stream.read(self.limits.chunk_size):
                pass
            digest = stream.record_hash()
        if digest is None:
            raise WheelReadError(f"{info.filename}: data ends before the size the zip declares")
        return digest


class _Sha256(threading.Thread):
    """The wheel's sha256, computed on its own thread while the members are inspected (hashlib
    releases the GIL on large blocks); a small wheel's on the caller's thread (``threaded=False``:
    :meth:`result` computes it). Read through the wheel's one descriptor (:class:`WheelHandle`)."""

    def __init__(self, path: Path, fd: int, *, threaded: bool = True) -> None:
        super().__init__(name="wheel-sha256", daemon=True)
        self.path = path
        self.fd = fd
        self.threaded = threaded
        self.digest: str | None = None
        self.error: OSError | None = None

    def begin(self) -> _Sha256:
        if self.threaded:
            self.start()
        return self

    def run(self) -> None:
        try:
            self.digest = sha256_fd(self.fd)
        except OSError as err:
            self.error = err

    def result(self) -> str:
        if self.threaded:
            self.join()
        else:
            self.run()
        if self.digest is None:
            raise WheelReadError(f"{self.path.name}: cannot read the file: {self.error}")
        return self.digest


def _batches(
    files: list[zipfile.ZipInfo], bytes_per_batch: int = 4 * MiB, most: int = 256
) -> list[list[zipfile.ZipInfo]]:
    """Large members one per task, small ones grouped (one task per member costs more than sniffing
    it: real GPU wheels hold thousands of small .py files). ``files`` are sorted largest first."""
    out: list[list[zipfile.ZipInfo]] = []
    size = 0
    for info in files:
        if not out or size + info.file_size > bytes_per_batch or len(out[-1]) >= most:
            out.append([])
            size = 0
        out[-1].append(info)
        size += info.file_size
    return out


def default_workers() -> int:
    """One worker per CPU this process may run on, at most 4 (inflating is CPU-bound)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


def _read_small(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    if info.file_size > _MAX_DIST_INFO_FILE:
        raise WheelReadError(f"{info.filename}: {info.file_size} bytes is too large for a dist-info file")
    try:
        with zf.open(info) as handle:
            return handle.read(_MAX_DIST_INFO_FILE + 1)
    except _READ_ERRORS as err:
        raise WheelReadError(f"{info.filename}: cannot read member: {err}") from None


def _headers(data: bytes, member: str) -> list[tuple[str, str]]:
    """The header fields of WHEEL / METADATA, as ``email``'s compat32 parser gives them (what pip and
    auditwheel read them with): bytes decoded as ASCII with surrogate escapes, lines ended only by
    ``\\r\\n``, ``\\r`` or ``\\n``; ``Name: value`` lines; a line starting with a blank continues the
    previous value (joined with its line end); the first empty line, or a line that is not a header,
    ends the headers. Written out because ``email.parser`` costs ~25 ms of every run's start-up. At
    most ``_MAX_HEADER_FIELDS`` fields (a METADATA of millions of tiny headers is a memory bomb)."""
    out: list[tuple[str, str]] = []
    parts = _LINE_END.split(data.decode("ascii", "surrogateescape"))
    for at in range(0, len(parts), 2):
        line, end = parts[at], parts[at + 1] if at + 1 < len(parts) else ""
        if not line:
            break
        if line[0] in " \t":
            if out:  # compat32 keeps the folded source lines, line ends included
                key, value = out[-1]
                out[-1] = (key, value + line + end)
            continue
        key, sep, value = line.partition(":")
        if not sep or not key or not all("!" <= c <= "~" for c in key):  # email's headerRE
            break
        if len(out) >= _MAX_HEADER_FIELDS:
            raise WheelReadError(f"{member}: more than {_MAX_HEADER_FIELDS} header fields")
        out.append((key, value.lstrip(" \t") + end))
    return [(_sanitized(key), _sanitized(value.rstrip("\r\n"))) for key, value in out]


def _header_section(data: bytes) -> str:
    """METADATA up to its first empty line (line ends as ``_headers`` reads them, kept), as UTF-8
    with surrogate escapes for what is not."""
    text = data.decode("utf-8", "surrogateescape")
    parts = _LINE_END.split(text)
    for at in range(0, len(parts), 2):
        if not parts[at]:
            return "".join(parts[:at])
    return text


_FILE_TYPES = {
    stat.S_IFLNK: "symlink",
    stat.S_IFIFO: "fifo",
    stat.S_IFCHR: "device",
    stat.S_IFBLK: "device",
    stat.S_IFSOCK: "socket",
}
_MAX_LINK = 4096  # PATH_MAX: a longer link text is no link any system makes


def _special_members(zf: zipfile.ZipFile, infos: list[zipfile.ZipInfo]) -> tuple[LinkMember, ...]:
    """Members whose external attributes (the Unix mode in the high 16 bits, which ``unzip`` and
    ``ZipFile.extractall``'s callers honour) give a file type other than a regular file or a folder.
    A symlink's target is its data (a few bytes, read here besides the streaming pass)."""
    found = []
    for info in infos:
        kind = _FILE_TYPES.get(stat.S_IFMT(info.external_attr >> 16))
        if kind is None:
            continue
        target = ""
        if kind == "symlink":
            try:
                with zf.open(info) as handle:
                    target = handle.read(_MAX_LINK).decode("utf-8", "backslashreplace")
            except _READ_ERRORS as err:
                raise WheelReadError(f"{info.filename}: cannot read member: {err}") from None
        found.append(LinkMember(info.filename, kind, target))
    return tuple(found)


def _sanitized(text: str) -> str:
    """A non-ASCII byte becomes U+FFFD, as compat32 shows it."""
    if text.isascii():
        return text
    return text.encode("ascii", "surrogateescape").decode("ascii", "replace")


def _record(data: bytes, member: str) -> tuple[RecordEntry, ...]:
    try:
        text = data.decode("utf-8")
        rows = list(csv.reader(io.StringIO(text)))
    except (UnicodeDecodeError, csv.Error) as err:
        raise WheelReadError(f"{member}: unreadable RECORD: {err}") from None
    entries = []
    for row in rows:
        if not row:
            continue
        path = row[0]
        digest = row[1] if len(row) > 1 and row[1] else None
        size: int | None = None
        if len(row) > 2 and row[2]:
            try:
                size = int(row[2])
            except ValueError:
                raise WheelReadError(f"{member}: size {row[2]!r} of {path!r} is not a number") from None
        entries.append(RecordEntry(path, digest, size))
    return tuple(entries)


def _dist_info(infos: list[zipfile.ZipInfo]) -> str:
    dirs = sorted(
        {i.filename.split("/", 1)[0] for i in infos if i.filename.split("/", 1)[0].endswith(".dist-info")}
    )
    with_wheel = [d for d in dirs if any(i.filename == f"{d}/WHEEL" for i in infos)]
    if len(with_wheel) != 1:
        found = ", ".join(dirs) or "none"
        raise WheelReadError(
            f"not a wheel: expected one top-level *.dist-info/WHEEL, found dist-info dirs: {found}"
        )
    return with_wheel[0]


@contextlib.contextmanager
def _naming(wheel: Path) -> Iterator[None]:
    """Every WheelReadError raised while reading ``wheel`` names it (member-level messages such as
    "not a wheel: expected one top-level *.dist-info/WHEEL" or "member name ... is an absolute path"
    otherwise leave the reader guessing which of several wheels is meant)."""
    try:
        yield
    except WheelReadError as err:
        if err.message.startswith((f"{wheel.name}:", f"{wheel}:")):
            raise
        raise WheelReadError(f"{wheel.name}: {err.message}") from None


def _truncation_hint(fd: int) -> str:
    """A zip whose start is a local file header but whose end-of-central-directory record is missing
    was almost always cut short (an interrupted download or copy): say so."""
    try:
        head = os.pread(fd, 4, 0)
        size = os.fstat(fd).st_size
    except OSError:
        return ""
    if head != b"PK\x03\x04":
        return "" if size else " (the file is empty)"
    return (
        f" (it starts like a zip but its end-of-central-directory record is missing: truncated at "
        f"{size} bytes? an interrupted download or copy)"
    )


class WheelHandle(NamedTuple):
    """A wheel file opened once for every reader of one judgement (:func:`inspect_wheel`,
    :func:`~buildkit.inspect.symtab.wheel_symbol_tables`, the sha256): one descriptor read with
    ``os.pread`` (no seek state) and one zip directory. Made by :func:`open_wheel`."""

    path: Path
    names: tuple[NormalizedName, Version, BuildTag, frozenset[Tag]]
    fd: int
    zip: zipfile.ZipFile


@contextlib.contextmanager
def open_wheel(path: str | os.PathLike[str] | WheelHandle) -> Iterator[WheelHandle]:
    """``path`` opened once (a WheelReadError when missing, not named as a wheel, or no readable
    zip); a handle given is used as it is, left open for its owner to close."""
    if isinstance(path, WheelHandle):
        yield path
        return
    wheel, names = wheel_file(path)
    with contextlib.ExitStack() as stack:
        try:
            fh = stack.enter_context(open(wheel, "rb"))
        except OSError as err:
            raise WheelReadError(f"{wheel.name}: not a readable zip: {err}") from None
        try:
            zf = stack.enter_context(zipfile.ZipFile(fh))
        except _READ_ERRORS as err:
            hint = _truncation_hint(fh.fileno())
            raise WheelReadError(f"{wheel.name}: not a readable zip: {err}{hint}") from None
        yield WheelHandle(wheel, names, fh.fileno(), zf)


@contextlib.contextmanager
def checked_wheel(
    path: str | os.PathLike[str] | WheelHandle, limits: Limits
) -> Iterator[tuple[WheelHandle, list[zipfile.ZipInfo], int]]:
    """:func:`open_wheel`, its zip held to the hostile-input rules (names, sizes, bombs: each a
    WheelReadError naming the wheel, as is every one raised inside the block): the handle, the
    members and their total declared size."""
    with open_wheel(path) as handle, _naming(handle.path):
        infos = handle.zip.infolist()
        _check_names(infos)
        yield handle, infos, _check_sizes(handle.zip, infos, limits)


def wheel_file(
    path: str | os.PathLike[str],
) -> tuple[Path, tuple[NormalizedName, Version, BuildTag, frozenset[Tag]]]:
    """``path`` as a Path and its parsed file name (name, version, build, tags); a missing file or
    a name that is no wheel's is a WheelReadError."""
    wheel = Path(path)
    if not wheel.is_file():
        raise WheelReadError(f"{wheel}: no such file")
    try:
        return wheel, parse_wheel_filename(wheel.name)
    except InvalidWheelFilename as err:
        raise WheelReadError(f"{wheel.name}: not a wheel file name: {err}") from None


def inspect_wheel(
    path: str | os.PathLike[str] | WheelHandle,
    *,
    workers: int | None = None,
    limits: Limits | None = None,
    inflater: str | None = None,
    verify_record: bool = True,
    symbols: Collection[str] | None = None,
) -> WheelReport:
    """Inspect a wheel without extracting it (the module docstring says how, and its rules).
    ``inflater`` is ``"isal"`` or ``"zlib"`` (default: isal when installed); ``verify_record``'s cost
    is in bench/README.md. ``path``: the wheel's file, or a :class:`WheelHandle` the caller's other
    readers share (then it is not opened again). ``symbols``: see
    :attr:`ElfInfo.undefined_of_interest`."""
    limits = limits or Limits()
    with checked_wheel(path, limits) as ((wheel, (name, version, build, tags), fd, zf), infos, total):
        meta = _read_dist_info(zf, infos)
        size = os.fstat(fd).st_size
        sha256 = _Sha256(wheel, fd, threaded=size >= limits.threaded_bytes).begin()
        special = _special_members(zf, infos)
        algorithms = _record_algorithms(meta.record, infos, meta.name) if verify_record else {}
        reader = _Reader(fd, zf, limits, inflater, algorithms, symbols)
        results = _read_members(reader, infos, workers, threaded=max(size, total) >= limits.threaded_bytes)
        return WheelReport(
            path=str(wheel),
            filename=wheel.name,
            size=size,
            sha256=sha256.result(),
            name=str(name),
            version=str(version),
            build_tag=None if not build else "".join(str(part) for part in build),
            tags=tuple(sorted(str(t) for t in tags)),
            wheel_tags=meta.wheel_tags,
            root_is_purelib=meta.purelib,
            metadata_requires=meta.requires,
            record=meta.record,
            uncompressed_size=total,
            members=tuple(i.filename for i in infos),
            elves=tuple(sorted((r.elf for r in results if r.elf), key=lambda e: e.member)),
            code_objects=tuple(
                sorted((r.code_object for r in results if r.code_object), key=lambda c: c.member)
            ),
            findings=tuple(f for r in results for f in r.findings),
            stats=tuple(sorted((r.stat for r in results), key=lambda s: s.name)),
            dist_info=meta.name,
            files=_member_files(infos, results, algorithms),
            record_verified=verify_record,
            core_metadata=meta.core,
            special_members=special,
        )


class _DistInfo(NamedTuple):
    """The ``.dist-info`` folder (``name``) and what its files say: ``WHEEL``'s tags and
    ``Root-Is-Purelib``, ``METADATA``'s ``Requires-Dist`` values and header section (none without the
    file), ``RECORD``'s entries."""

    name: str
    wheel_tags: tuple[str, ...]
    purelib: bool | None
    requires: tuple[str, ...]
    core: CoreMetadata | None
    record: tuple[RecordEntry, ...]


def _read_dist_info(zf: zipfile.ZipFile, infos: list[zipfile.ZipInfo]) -> _DistInfo:
    dist_info = _dist_info(infos)
    by_name = {i.filename: i for i in infos}
    wheel = _headers(_read_small(zf, by_name[f"{dist_info}/WHEEL"]), f"{dist_info}/WHEEL")
    purelib = next((v.strip().lower() == "true" for k, v in wheel if k.lower() == "root-is-purelib"), None)
    requires: tuple[str, ...] = ()
    core = None
    if (info := by_name.get(f"{dist_info}/METADATA")) is not None:
        metadata = _read_small(zf, info)
        requires = tuple(v for k, v in _headers(metadata, info.filename) if k.lower() == "requires-dist")
        core = CoreMetadata(info.filename, _header_section(metadata))
    record_info = by_name.get(f"{dist_info}/RECORD")
    record = _record(_read_small(zf, record_info), record_info.filename) if record_info else ()
    wheel_tags = tuple(v.strip() for k, v in wheel if k.lower() == "tag")
    return _DistInfo(dist_info, wheel_tags, purelib, requires, core, record)


def _read_members(
    reader: _Reader, infos: list[zipfile.ZipInfo], workers: int | None, *, threaded: bool
) -> list[_MemberResult]:
    """Every non-empty member read, largest first (better balance across ``workers`` threads, used
    only for a ``threaded`` wheel of more than one batch)."""
    files = sorted(
        (i for i in infos if not i.is_dir() and i.file_size > 0), key=lambda i: i.file_size, reverse=True
    )
    batches = _batches(files)
    workers = workers or default_workers()
    if workers == 1 or len(batches) == 1 or not threaded:
        return reader.members(files)
    from concurrent.futures import ThreadPoolExecutor  # a small wheel never needs it

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return [r for batch in pool.map(reader.members, batches) for r in batch]


def _member_files(
    infos: list[zipfile.ZipInfo], results: list[_MemberResult], algorithms: dict[str, str]
) -> tuple[MemberFile, ...]:
    """Each file member with its digest (an empty member, not read, has the empty string's)."""
    hashes = {r.stat.name: r.hash for r in results}
    for i in infos:
        if not i.file_size and i.filename in algorithms:
            hashes[i.filename] = record_hash(
                algorithms[i.filename], hashlib.new(algorithms[i.filename]).digest()
            )
    return tuple(MemberFile(i.filename, i.file_size, hashes.get(i.filename)) for i in infos if not i.is_dir())


def _record_algorithms(
    record: tuple[RecordEntry, ...], infos: list[zipfile.ZipInfo], dist_info: str
) -> dict[str, str]:
    """Which hashlib algorithm to hash each member with: the one RECORD names for it when hashlib
    knows it, else sha256 (members RECORD omits are hashed too, for the report). RECORD itself and
    its signature files are not hashed."""
    named: dict[str, str] = {}
    for entry in record:
        algorithm = (entry.hash or "").partition("=")[0].lower()
        if algorithm in hashlib.algorithms_guaranteed and not algorithm.startswith("shake"):
            named.setdefault(entry.path, algorithm)
    exempt = {f"{dist_info}/{name}" for name in RECORD_EXEMPT}
    return {
        i.filename: named.get(i.filename, "sha256")
        for i in infos
        if not i.is_dir() and i.filename not in exempt
    }
