"""Downloading a pinned source archive: an ``sdist`` from the index pip is configured with, or an
archive ``url``; verified by sha256 and cached (where from, the cache: docs/REFERENCE.md, "A recipe").

``pip download`` cannot be used: for an sdist it runs the project's build backend to prepare
metadata, even with ``--no-deps``. So pip is asked only for its configuration (``pip config list``,
in pip's order of precedence) and pages and files are read by the one index client,
:mod:`buildkit.pyindex`. A download is renamed into the cache only when its sha256 is the pinned one
and it stayed under :data:`MAX_DOWNLOAD_BYTES`; a cached file is hashed again before each use.

Errors: :class:`HashMismatch` and :class:`SourceRefused` are the recipe's to fix;
:class:`~buildkit.errors.IndexUnavailable` (exit 13, as every command gives it) and
:class:`FetchFailed` are not. :mod:`buildkit.source` turns them into positioned errors.
"""

from __future__ import annotations

import ast
import contextlib
import os
import posixpath
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from buildkit import pyindex
from buildkit.errors import IndexUnavailable
from buildkit.fsutil import cache_home
from buildkit.manifest import sha256_file
from buildkit.pyindex import redact

#: a download larger than this is refused (by Content-Length before, by counting while reading)
MAX_DOWNLOAD_BYTES = 2 * 2**30
#: a download's temporary file untouched for this long belongs to a killed process: removed
_STALE_PART_SECONDS = 24 * 3600
_DEFAULT_INDEX = "https://pypi.org/simple"
DEFAULT_TIMEOUT = pyindex.DEFAULT_TIMEOUT
#: the suffixes of source archives, longest first
_ARCHIVE_SUFFIXES = (".tar.gz", ".tar.bz2", ".tar.xz", ".tgz", ".zip", ".tar")
Echo = Callable[[str], None]


class FetchFailed(Exception):
    """The archive could not be fetched: network, server or pip trouble (retry, or fix the host)."""


class SourceRefused(Exception):
    """What the recipe pins cannot be had: no such sdist, or more bytes than allowed."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class HashMismatch(SourceRefused):
    """The file's sha256 (read, or listed by the index) is not the pinned one."""

    def __init__(self, filename: str, origin: str, expected: str, actual: str, *, listed: bool) -> None:
        how = "is listed by the index with" if listed else "has"
        super().__init__(
            f"{filename} from {origin} {how} sha256 {actual}, but the recipe pins sha256 {expected}",
            "check the file's sha256 where the release is published (PyPI's file page lists it) and pin "
            "that; another hash for the same name means other bytes",
        )
        self.filename = filename
        self.expected = expected
        self.actual = actual


# --- the cache --------------------------------------------------------------------------------


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/rocm-buildkit/sources`` (default ``~/.cache``)."""
    return cache_home() / "sources"


def cached(sha256: str, echo: Echo | None = None) -> Path | None:
    """The cached archive of ``sha256``, hashed again now; one whose bytes changed is removed, and so
    are the temporary files of downloads killed more than :data:`_STALE_PART_SECONDS` ago."""
    folder = cache_root() / sha256
    try:
        listing = list(folder.iterdir())
    except OSError:
        return None
    for part in listing:
        if part.name.startswith(".") and part.name.endswith(".part"):
            with contextlib.suppress(OSError):
                if time.time() - part.stat().st_mtime > _STALE_PART_SECONDS:
                    part.unlink()
    entries = sorted(p for p in listing if not p.name.startswith(".") and p.is_file())
    for path in entries:
        if sha256_file(path) == sha256:
            return path
        path.unlink(missing_ok=True)
        if echo is not None:
            echo(f"removed {path} from the source cache: its bytes no longer have sha256 {sha256}")
    return None


# --- HTTP -------------------------------------------------------------------------------------


def client(cafile: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> pyindex.IndexClient:
    """The index client of a fetch: ``cafile`` (else the system's CAs), ``~/.netrc`` looked up for a
    host without credentials in its URL."""
    return pyindex.IndexClient(cafile=cafile, timeout=timeout, netrc=True)


@contextlib.contextmanager
def _index_errors(url: str) -> Iterator[None]:
    """The index client's errors worded as a fetch's (``<url>: <reason>``): not found, refused, and
    unreachable (the one :class:`IndexUnavailable` every command exits with)."""
    try:
        yield
    except pyindex.NotFound:
        raise FileNotFoundError(redact(url)) from None
    except pyindex.IndexRefused as exc:
        raise FetchFailed(f"{redact(url)}: {exc.reason}") from None
    except IndexUnavailable as exc:
        raise IndexUnavailable(f"{redact(url)}: {exc.reason}", url=exc.url, reason=exc.reason) from None


def download(http: pyindex.IndexClient, url: str, sha256: str, filename: str, origin: str) -> Path:
    """Download ``url`` into the cache as ``<sha256>/<filename>`` (verified as the module says:
    :meth:`buildkit.pyindex.IndexClient.download`)."""
    limit = MAX_DOWNLOAD_BYTES
    folder = cache_root() / sha256
    final = folder / filename
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with _index_errors(url):
            http.download(url, final, hashes={"sha256": sha256}, max_bytes=limit)
    except pyindex.TooLarge as exc:
        if exc.size is not None:
            raise SourceRefused(
                f"{filename} from {origin} is {exc.size} bytes, more than the {limit} a source may have"
            ) from None
        raise SourceRefused(
            f"{filename} from {origin} is more than the {limit} bytes a source may have"
        ) from None
    except pyindex.DigestMismatch as exc:
        raise HashMismatch(filename, origin, sha256, exc.actual, listed=False) from None
    finally:
        if not final.exists():
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty: no other download of this sha256 is running
    return final


def _safe_filename(name: str, fallback: str = "source") -> str:
    """A file name for the cache: the last path component, not hidden, else ``fallback``."""
    base = posixpath.basename(urllib.parse.unquote(name)).strip()
    if not base or base.startswith(".") or "\0" in base or len(base) > 200:
        return fallback
    return base


# --- pip's configuration ----------------------------------------------------------------------


@dataclass(frozen=True)
class PipConfig:
    """What pip would search and how it would connect (``pip config list``)."""

    index_urls: tuple[str, ...] = (_DEFAULT_INDEX,)
    find_links: tuple[str, ...] = ()
    cert: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def parse(cls, listing: str) -> PipConfig:
        """From the output of ``pip config list`` (``section.key='value'`` lines, in load order)."""
        sections: dict[str, dict[str, str]] = {"global": {}, "download": {}, ":env:": {}}
        for line in listing.splitlines():
            key, sep, raw = line.partition("=")
            section, _, name = key.rpartition(".")
            if not sep or section not in sections:
                continue
            try:
                value = ast.literal_eval(raw)
            except (ValueError, SyntaxError):
                value = raw
            sections[section][name.replace("_", "-")] = str(value)
        merged = {**sections["global"], **sections["download"], **sections[":env:"]}
        no_index = merged.get("no-index", "").lower() in ("1", "true", "yes", "on")
        index = merged.get("index-url", _DEFAULT_INDEX)
        extra = merged.get("extra-index-url", "").split()
        timeout = merged.get("timeout") or merged.get("default-timeout")
        try:
            seconds = float(timeout) if timeout else DEFAULT_TIMEOUT
        except ValueError:
            seconds = DEFAULT_TIMEOUT
        return cls(
            index_urls=() if no_index else tuple(dict.fromkeys([index, *extra])),
            find_links=tuple(merged.get("find-links", "").split()),
            cert=merged.get("cert") or None,
            timeout=seconds,
        )


def pip_config() -> PipConfig:
    """pip's configuration, as ``python -m pip config list`` gives it (this interpreter's pip)."""
    cmd = [sys.executable, "-m", "pip", "config", "list"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise FetchFailed(f"cannot read pip's configuration ({' '.join(cmd)}): {exc}") from None
    if proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        raise FetchFailed(f"cannot read pip's configuration ({' '.join(cmd)}): {detail[0]}")
    return PipConfig.parse(proc.stdout)


# --- finding an sdist -------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    filename: str
    url: str
    origin: str  # the index or find-links location it was listed by (redacted)
    sha256: str | None  # as the index lists it


def _sdist_release(filename: str) -> tuple[NormalizedName, Version] | None:
    """``(name, version)`` of an sdist file name (``six-1.16.0.tar.gz``), else None."""
    stem = next((filename[: -len(s)] for s in _ARCHIVE_SUFFIXES if filename.endswith(s)), None)
    if stem is None:
        return None
    name, sep, version = stem.rpartition("-")
    if not sep or not name:
        return None
    try:
        return canonicalize_name(name), Version(version)
    except InvalidVersion:
        return None


def _page_files(http: pyindex.IndexClient, url: str) -> Iterable[tuple[str, str, str | None]]:
    """(filename, absolute URL, listed sha256) of every file of the PEP 691 or PEP 503 page at
    ``url`` (:meth:`buildkit.pyindex.IndexClient.page`)."""
    with _index_errors(url):
        page = http.page(url)
    return [(link.filename, link.url, link.sha256) for link in page.links]


def _location_files(http: pyindex.IndexClient, location: str) -> Iterable[tuple[str, str, str | None]]:
    """The files a find-links entry offers: a local folder or file, or a page of links."""
    if "://" not in location:
        path = Path(location).expanduser()
        if path.is_dir():
            for p in sorted(path.iterdir()):
                yield p.name, p.resolve().as_uri(), None
        elif path.is_file():
            yield path.name, path.resolve().as_uri(), None
        return
    yield from _page_files(http, location)


def _find_sdist(
    http: pyindex.IndexClient, config: PipConfig, name: NormalizedName, version: Version
) -> tuple[list[Candidate], list[str], int]:
    """The sdists of ``name==version`` every index and find-links location lists, the locations
    searched (redacted) and how many other files (wheels) of that release they list."""
    found: list[Candidate] = []
    searched: list[str] = []
    others = 0
    failures: list[str] = []
    unreachable = False
    places = [(index, True) for index in config.index_urls] + [(loc, False) for loc in config.find_links]
    for place, is_index in places:
        searched.append(redact(place))
        plain = http.strip(place)
        try:
            if is_index:
                entries = list(_page_files(http, pyindex.simple_page_url(plain, name)))
            else:
                entries = list(_location_files(http, plain))
        except FileNotFoundError:
            continue  # the index has no such project
        except (FetchFailed, IndexUnavailable) as exc:
            unreachable = unreachable or isinstance(exc, IndexUnavailable)
            failures.append(str(exc))
            continue
        for filename, url, listed in entries:
            if filename.endswith(".whl") and filename.count("-") >= 4:
                wname, _, rest = filename.partition("-")
                if canonicalize_name(wname) == name and rest.split("-", 1)[0] == str(version):
                    others += 1
                continue
            release = _sdist_release(filename)
            if release == (name, version):
                found.append(Candidate(filename, url, redact(place), listed.lower() if listed else None))
    if not found and failures:
        # one index that could not be reached is the error every command gives for it (exit 13)
        raise IndexUnavailable("; ".join(failures)) if unreachable else FetchFailed("; ".join(failures))
    return found, searched, others


# --- the two kinds of source ------------------------------------------------------------------


def fetch_sdist(requirement: str, sha256: str, echo: Echo | None = None) -> Path:
    """The verified archive of the sdist ``name==version`` pinned by ``sha256``: from the cache,
    else from the index pip is configured with."""
    hit = cached(sha256, echo)
    if hit is not None:
        return hit
    raw_name, _, raw_version = requirement.partition("==")
    name, version = canonicalize_name(raw_name), Version(raw_version)
    config = pip_config()
    http = client(config.cert or os.environ.get("SSL_CERT_FILE") or None, config.timeout)
    candidates, searched, others = _find_sdist(http, config, name, version)
    if not candidates:
        where = ", ".join(searched) or "nowhere (pip is configured with no-index and no find-links)"
        wheels = f"; they list {others} wheel(s) of {version} but no sdist" if others else ""
        raise SourceRefused(
            f"no sdist of {name}=={version} on {where}{wheels}",
            f"the files of a release are listed at {(config.index_urls or (_DEFAULT_INDEX,))[0].rstrip('/')}"
            f"/{name}/; pin a version published as an sdist (.tar.gz), or use url: for another archive",
        )
    matching = [c for c in candidates if c.sha256 == sha256]
    unlisted = [c for c in candidates if c.sha256 is None]
    if not matching and not unlisted:
        c = candidates[0]
        assert c.sha256 is not None
        raise HashMismatch(c.filename, c.origin, sha256, c.sha256, listed=True)
    mismatch: HashMismatch | None = None
    for candidate in matching or unlisted:
        if echo is not None:
            echo(f"fetching {candidate.filename} from {candidate.origin}")
        try:
            return download(http, candidate.url, sha256, _safe_filename(candidate.filename), candidate.origin)
        except FileNotFoundError:
            raise FetchFailed(
                f"{candidate.origin} lists {candidate.filename}, but its URL answers 404"
            ) from None
        except HashMismatch as exc:
            mismatch = exc
    assert mismatch is not None
    raise mismatch


def fetch_url(url: str, sha256: str, echo: Echo | None = None) -> Path:
    """The verified archive at ``url`` pinned by ``sha256``: from the cache, else downloaded (CA
    bundle: ``SSL_CERT_FILE``, else ``PIP_CERT``, else the system's)."""
    hit = cached(sha256, echo)
    if hit is not None:
        return hit
    cafile = os.environ.get("SSL_CERT_FILE") or os.environ.get("PIP_CERT") or None
    http = client(cafile)
    plain = http.strip(url)
    filename = _safe_filename(urllib.parse.urlsplit(plain).path, fallback="source-archive")
    if echo is not None:
        echo(f"fetching {redact(url)}")
    try:
        return download(http, plain, sha256, filename, redact(url))
    except FileNotFoundError:
        raise SourceRefused(
            f"{redact(url)} answers 404 (not found)", "check the URL: is the release or tag named right?"
        ) from None
