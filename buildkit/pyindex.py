"""The one client of package indexes: their project pages (PEP 691 JSON, else PEP 503 HTML, or a
``file://`` folder) and the files they list, for every stage that reads one. No other module parses
an index page (``tests/unit/test_pyindex.py``).

Nothing half-downloaded is ever left under the destination's name (:meth:`IndexClient.download`).

**Credentials** are bound to one origin (scheme, host, port: :class:`Credentials`): those of an URL's
user part (:meth:`IndexClient.strip`), of ``~/.netrc`` when the caller asks for it, or given by the
caller (sent only when the origin answers HTTP 401). They are never sent to another origin, not even
on a redirect, and never shown: :func:`redact` is how an URL is printed.

**Failures.** Every command gets the same error for "the index cannot be reached":
:class:`~buildkit.errors.IndexUnavailable` (exit 13: DNS failure, connection refused or reset,
timeout, a truncated answer, HTTP 5xx/408/429; retrying may help). An index that answers no is
:class:`IndexRefused` (another 4xx, a TLS certificate not trusted, a page over the bound), which each
command words in its own terms; HTTP 404/410 is :class:`NotFound`."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import ipaddress
import json
import netrc
import os
import posixpath
import ssl
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urljoin, urlsplit, urlunsplit
from urllib.request import url2pathname

from packaging.utils import canonicalize_name

from buildkit import __version__, credentials
from buildkit.errors import IndexUnavailable
from buildkit.fsutil import atomic_stream

if TYPE_CHECKING:
    import requests  # about 60 ms: only when an index is asked (start-up time)

#: what a project page is asked for in: PEP 691 JSON first, PEP 503 HTML after
_ACCEPT_PAGE = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
)
PEP691_JSON = "application/vnd.pypi.simple.v1+json"
DEFAULT_TIMEOUT = 60.0
#: a project page (an index's list of files) larger than this is refused
_MAX_PAGE_BYTES = 64 * 2**20
#: HTTP answers that say "not now" rather than "no": 5xx, request timeout, too many requests
_TRANSIENT_STATUS = frozenset({408, 429})
_NOT_FOUND_STATUS = frozenset({404, 410})
#: the hashes a download is verified with, the first the index lists
_HASH_ORDER = ("sha256", "sha384", "sha512")
_CHUNK = 1 << 20
_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOOPBACK_NAMES = {"localhost"}


# --------------------------------------------------------------------------- errors
class NotFound(Exception):
    """HTTP 404/410, or a ``file://`` path that is not a file; ``reason``: ``HTTP 404 Not Found``."""

    def __init__(self, url: str, reason: str = "not found") -> None:
        super().__init__(f"{redact(url)}: {reason}")
        self.url = url
        self.reason = reason


class IndexRefused(Exception):
    """The index answered, and the answer is no: an HTTP status that is neither success, not found nor
    transient (401, 403, 400, ...), a TLS certificate not trusted, or a page over :data:`_MAX_PAGE_BYTES`.
    ``url``: the URL that answered (after redirects), ``status`` the HTTP status (None: no answer),
    ``reason`` what went wrong (``HTTP 403 Forbidden``)."""

    def __init__(self, action: str, url: str, reason: str, status: int | None = None) -> None:
        super().__init__(f"cannot {action} {redact(url)}: {reason}")
        self.action = action
        self.url = url
        self.reason = reason
        self.status = status


class DigestMismatch(Exception):
    """A downloaded file's hash is not the expected one (the file was not kept)."""

    def __init__(self, url: str, algorithm: str, expected: str, actual: str) -> None:
        super().__init__(f"{redact(url)}: {algorithm} {actual}, expected {expected}")
        self.url = url
        self.algorithm = algorithm
        self.expected = expected
        self.actual = actual


class TooLarge(Exception):
    """A download over its bound: ``size`` as the server announced it (Content-Length), else None
    (counted while reading)."""

    def __init__(self, url: str, limit: int, size: int | None) -> None:
        super().__init__(f"{redact(url)}: more than {limit} bytes")
        self.url = url
        self.limit = limit
        self.size = size


def unavailable(action: str, url: str, reason: str) -> IndexUnavailable:
    """The error every command gives for an index it cannot reach."""
    return IndexUnavailable(f"cannot {action} {redact(url)}: {reason}", url=redact(url), reason=reason)


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it wraps (``reason``, exception arguments, causes), breadth first."""
    seen: list[BaseException] = []
    todo: list[object] = [exc]
    while todo:
        item = todo.pop(0)
        if not isinstance(item, BaseException) or any(item is s for s in seen):
            continue
        seen.append(item)
        todo += [getattr(item, "reason", None), *item.args, item.__cause__, item.__context__]
    return seen


def _status(exc: BaseException) -> tuple[int, str] | None:
    """The HTTP status and reason an exception carries (a requests or urllib HTTPError)."""
    response = getattr(exc, "response", None)
    code = getattr(response, "status_code", None)
    if isinstance(code, int):
        return code, str(getattr(response, "reason", "") or "")
    code = getattr(exc, "code", None)
    if isinstance(code, int) and code >= 100:
        return code, str(getattr(exc, "reason", "") or "")
    return None


def failure(action: str, url: str, exc: BaseException) -> IndexUnavailable | IndexRefused:
    """What a failed read of ``url`` means: :class:`~buildkit.errors.IndexUnavailable` when
    retrying may help (DNS, refused, reset, timeout, a truncated answer, HTTP 5xx/408/429),
    :class:`IndexRefused` otherwise (another HTTP status, a TLS certificate not trusted)."""
    status = _status(exc)
    if status is not None:
        reason = f"HTTP {status[0]} {status[1]}".rstrip()
        if status[0] >= 500 or status[0] in _TRANSIENT_STATUS:  # "not now": retrying may succeed
            return unavailable(action, url, reason)
        return IndexRefused(action, url, reason, status[0])
    chain = _chain(exc)
    for item in chain:
        if isinstance(item, ssl.SSLCertVerificationError):
            return IndexRefused(action, url, f"{item} (the TLS certificate is not trusted)")
    errno_errors = [e for e in chain if isinstance(e, OSError) and e.errno is not None]
    deepest = errno_errors[-1] if errno_errors else chain[-1]
    return unavailable(action, url, str(deepest) or type(deepest).__name__)


# --------------------------------------------------------------------------- URLs and credentials
def origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) URL, default port filled in; None for anything else."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    return scheme, host, port or _DEFAULT_PORTS[scheme]


def is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def redact(url: str) -> str:
    """``url`` without the password or token of its user part (``https://user:***@host/``) nor the
    value of a credential query parameter (:func:`buildkit.credentials.redact`)."""
    return credentials.redact(url)


@dataclass(frozen=True)
class Credentials:
    """HTTP Basic credentials bound to one origin; ``preemptive``: sent with the first request (an
    URL's user part, ``~/.netrc``), else only once the origin answers HTTP 401."""

    origin: tuple[str, str, int]
    header: str = field(repr=False)  # "Basic ..."; never in a repr or a traceback
    preemptive: bool = False

    @classmethod
    def basic(cls, url: str, user: str, password: str, *, preemptive: bool = False) -> Credentials | None:
        """``user``/``password`` for the origin of ``url`` (None for a URL that is not http(s))."""
        where = origin(url)
        if where is None:
            return None
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        return cls(where, f"Basic {token}", preemptive)

    def allows(self, url: str) -> bool:
        return origin(url) == self.origin

    def describe(self) -> str:
        scheme, host, port = self.origin
        return f"{scheme}://{host}:{port}"


def file_path(url: str) -> Path:
    """The local path of a ``file://`` URL."""
    return Path(url2pathname(urlsplit(url).path))


def simple_page_url(index_url: str, project: str) -> str:
    """PEP 503: ``<index>/<normalized name>/``."""
    return urljoin(index_url.rstrip("/") + "/", f"{canonicalize_name(project)}/")


# --------------------------------------------------------------------------- pages
@dataclass(frozen=True)
class Link:
    """One file of a project page."""

    filename: str
    url: str  # absolute, without the fragment
    hashes: Mapping[str, str]  # {"sha256": hex}, algorithm and digest lowercase
    yanked: bool = False
    provenance: str | None = None  # absolute URL of its PEP 740 provenance (data-provenance), if any

    @property
    def sha256(self) -> str | None:
        return self.hashes.get("sha256")


@dataclass(frozen=True)
class _Page:
    """A project page: the URL it was read from (after redirects) and its files."""

    url: str
    links: tuple[Link, ...]


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.base: str | None = None
        self.anchors: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "base" and self.base is None:
            self.base = dict(attrs).get("href")
        elif tag == "a" and dict(attrs).get("href"):
            self.anchors.append(dict(attrs))


def _link(
    url: str, filename: str | None, hashes: Mapping[str, str], yanked: bool, provenance: str | None
) -> Link:
    plain, _, _fragment = url.partition("#")
    name = filename if filename is not None else unquote(posixpath.basename(urlsplit(plain).path))
    return Link(name, plain, {a.lower(): d.lower() for a, d in hashes.items()}, yanked, provenance)


def parse_page(data: bytes, content_type: str, url: str) -> list[Link]:
    """The files of a project page read from ``url``: PEP 691 JSON (by its content type), else PEP 503
    HTML (``<base href>`` honoured, a ``#<algo>=<hex>`` fragment as the hash, ``data-yanked``); a PEP 740
    ``provenance`` / ``data-provenance`` URL made absolute."""
    if content_type.split(";")[0].strip() == PEP691_JSON:
        try:
            files = json.loads(data)["files"]
        except (ValueError, KeyError, TypeError):
            return []
        out = []
        for f in files if isinstance(files, list) else []:
            if not isinstance(f, dict) or not isinstance(f.get("url"), str):
                continue
            if not isinstance(f.get("filename"), str):
                continue
            hashes = f.get("hashes")
            listed = (
                {str(a): d for a, d in hashes.items() if isinstance(d, str)}
                if isinstance(hashes, dict)
                else {}
            )
            served = f.get("provenance")
            served = urljoin(url, served) if isinstance(served, str) else None
            out.append(_link(urljoin(url, f["url"]), f["filename"], listed, bool(f.get("yanked")), served))
        return out
    parser = _Anchors()
    parser.feed(data.decode("utf-8", "replace"))
    base = urljoin(url, parser.base) if parser.base else url
    out = []
    for attrs in parser.anchors:
        absolute = urljoin(base, attrs["href"] or "")
        _, _, fragment = absolute.partition("#")
        algorithm, eq, digest = fragment.partition("=")
        served = attrs.get("data-provenance")
        served = urljoin(base, served) if served else None
        out.append(_link(absolute, None, {algorithm: digest} if eq else {}, "data-yanked" in attrs, served))
    return out


def _folder_page(folder: Path) -> bytes:
    """A folder of files without an index.html, listed as a page would list them."""
    names = sorted(p.name for p in folder.iterdir() if p.is_file())
    return "".join(f'<a href="{quote(n)}">{n}</a>\n' for n in names).encode()


# --------------------------------------------------------------------------- the client
def _system_ca() -> str | bool:
    """The CA bundle urllib and pip's ``--cert``-less default use here: ``SSL_CERT_FILE``, else
    OpenSSL's default file or folder (requests alone would use certifi's)."""
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.capath):
        if candidate and Path(candidate).exists():
            return candidate
    return True


@dataclass
class IndexClient:
    """An index client: a CA bundle (default: the system's), a timeout, and credentials each bound to
    its origin. ``netrc``: look ``~/.netrc`` up for a host without credentials (sent preemptively)."""

    cafile: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    credentials: list[Credentials] = field(default_factory=list)
    netrc: bool = False
    _session: requests.Session | None = field(default=None, repr=False)

    # ---- credentials
    def strip(self, url: str) -> str:
        """``url`` without its user part, whose credentials are kept for its origin (sent preemptively)."""
        parts = urlsplit(url)
        if "@" not in parts.netloc:
            return url
        plain = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        found = Credentials.basic(
            plain, unquote(parts.username or ""), unquote(parts.password or ""), preemptive=True
        )
        if found is not None:
            self.credentials.insert(0, found)
        return plain

    def credentials_for(self, url: str) -> Credentials | None:
        """The credentials bound to ``url``'s origin (the caller's first, then ``~/.netrc``'s)."""
        found = next((c for c in self.credentials if c.allows(url)), None)
        if found is not None or not self.netrc:
            return found
        where = origin(url)
        if where is None:
            return None
        with contextlib.suppress(OSError, netrc.NetrcParseError):
            entry = netrc.netrc().authenticators(where[1])
            if entry and entry[2] is not None:
                return Credentials.basic(url, entry[0] or "", entry[2], preemptive=True)
        return None

    # ---- HTTP
    def session(self) -> requests.Session:
        if self._session is None:
            self._session = _session(self)
            self._session.headers["User-Agent"] = f"rocm-buildkit/{__version__}"
        return self._session

    def _get(self, url: str, headers: Mapping[str, str], timeout: float) -> requests.Response:
        # ``verify`` on every request: a session's is overridden by REQUESTS_CA_BUNDLE/CURL_CA_BUNDLE
        verify = self.cafile or _system_ca()
        return self.session().get(url, headers=dict(headers), stream=True, timeout=timeout, verify=verify)

    def get(
        self,
        url: str,
        *,
        accept: str | None = None,
        action: str = "read",
        timeout: float | None = None,
        identity: bool = False,
    ) -> requests.Response:
        """The streamed answer to GET ``url`` (http or https; the caller closes it): credentials as
        the class says, HTTP 401 answered once with the origin's credentials. :class:`NotFound`,
        :class:`IndexRefused` or :class:`~buildkit.errors.IndexUnavailable` otherwise. ``identity``:
        ask for the bytes as stored (a file is hashed as the index lists it, never recompressed)."""
        import requests  # about 60 ms: only when an index is asked (start-up time)

        url = self.strip(url)  # credentials in the URL: kept for its origin, never sent elsewhere
        headers = {"Accept": accept} if accept else {}
        if identity:
            headers["Accept-Encoding"] = "identity"
        wait = self.timeout if timeout is None else timeout
        sent = self.credentials_for(url)
        first = {"Authorization": sent.header} if sent is not None and sent.preemptive else {}
        try:
            response = self._get(url, {**headers, **first}, wait)
            if response.status_code == 401 and not first:
                answered = response.url or url
                retry = self.credentials_for(answered)
                if retry is not None:
                    response.close()
                    response = self._get(answered, {**headers, "Authorization": retry.header}, wait)
        except requests.RequestException as exc:
            raise failure(action, url, exc) from None
        if response.status_code in _NOT_FOUND_STATUS:
            response.close()
            raise NotFound(url, f"HTTP {response.status_code} {response.reason}".rstrip())
        if response.status_code >= 400:
            response.close()
            raise failure(action, response.url or url, requests.HTTPError(response=response))
        return response

    # ---- pages
    def read(self, url: str, *, accept: str = _ACCEPT_PAGE) -> tuple[bytes, str, str]:
        """``(bytes, content type, final URL)`` of a page (at most :data:`_MAX_PAGE_BYTES`); a
        ``file://`` folder gives its ``index.html``, else its files listed as a page would."""
        if urlsplit(url).scheme.lower() == "file":
            path = file_path(url)
            if path.is_dir():
                url = url if url.endswith("/") else url + "/"  # the base of its relative links
                index = path / "index.html"
                if not index.is_file():
                    return _folder_page(path), "text/html", url
                path = index
            if not path.is_file():
                raise NotFound(url)
            try:
                with path.open("rb") as fh:
                    return _read_limited(fh.read(_MAX_PAGE_BYTES + 1), url), "text/html", url
            except OSError as exc:
                raise IndexRefused("read", url, str(exc)) from None
        with self.get(url, accept=accept) as response, _network_errors("read", url):
            data = _read_limited(response.raw.read(_MAX_PAGE_BYTES + 1, decode_content=True), url)
            return data, response.headers.get("Content-Type", "") or "", response.url or url

    def page(self, url: str) -> _Page:
        """The project page at ``url`` (:class:`NotFound` when there is none)."""
        data, ctype, final = self.read(url)
        return _Page(final, tuple(parse_page(data, ctype, final)))

    # ---- files
    @contextlib.contextmanager
    def open_file(
        self, url: str, *, action: str = "download", timeout: float | None = None
    ) -> Iterator[tuple[int | None, Iterator[bytes]]]:
        """``(announced size, chunks)`` of the file at ``url`` (``file://`` or http(s)), the bytes as
        sent: no content decoding, so that the hash is the file's."""
        if urlsplit(url).scheme.lower() == "file":
            if not file_path(url).is_file():
                raise NotFound(url)
            try:
                fh = file_path(url).open("rb")
            except OSError as exc:
                raise failure(action, url, exc) from None
            with fh:
                yield os.fstat(fh.fileno()).st_size, _chunks(fh, action, url)
            return
        with self.get(url, action=action, timeout=timeout, identity=True) as response:
            length = response.headers.get("Content-Length")
            size = int(length) if length is not None and length.isdigit() else None
            yield size, _raw_chunks(response, action, url)

    def download(
        self,
        url: str,
        dest: Path,
        *,
        hashes: Mapping[str, str] | None = None,
        max_bytes: int | None = None,
        part_suffix: str = ".part",
        timeout: float | None = None,
    ) -> str:
        """Download ``url`` to ``dest`` (its folder must exist) through a temporary file beside it,
        renamed into place only when the hash is the expected one (the first of :data:`_HASH_ORDER` in
        ``hashes``; :class:`DigestMismatch`) and at most ``max_bytes`` came (:class:`TooLarge`).
        Returns the hex digest (sha256 when ``hashes`` names none)."""
        wanted = {a.lower(): d.lower() for a, d in (hashes or {}).items()}
        algorithm = next((a for a in _HASH_ORDER if a in wanted), "sha256")
        digest = hashlib.new(algorithm)
        with self.open_file(url, timeout=timeout) as (announced, chunks):
            if max_bytes is not None and announced is not None and announced > max_bytes:
                raise TooLarge(url, max_bytes, announced)
            size = 0
            with atomic_stream(dest, suffix=part_suffix) as out:
                for chunk in chunks:
                    size += len(chunk)
                    if max_bytes is not None and size > max_bytes:
                        raise TooLarge(url, max_bytes, None)
                    digest.update(chunk)
                    out.write(chunk)
                if algorithm in wanted and digest.hexdigest() != wanted[algorithm]:
                    raise DigestMismatch(url, algorithm, wanted[algorithm], digest.hexdigest())
        return digest.hexdigest()

    def digest(self, url: str, *, algorithm: str = "sha256", timeout: float | None = None) -> str:
        """The hash of the file at ``url``, downloaded and hashed (not kept)."""
        digest = hashlib.new(algorithm)
        with self.open_file(url, timeout=timeout) as (_size, chunks):
            for chunk in chunks:
                digest.update(chunk)
        return digest.hexdigest()


def _read_limited(data: bytes, url: str) -> bytes:
    if len(data) > _MAX_PAGE_BYTES:
        raise IndexRefused("read", url, f"the page is larger than {_MAX_PAGE_BYTES} bytes")
    return data


@contextlib.contextmanager
def _network_errors(action: str, url: str) -> Iterator[None]:
    """A failure while the answer's body is read (reset, timeout, truncated), as :func:`failure` words it."""
    import requests  # about 60 ms: only when an index is asked (start-up time)
    import urllib3

    try:
        yield
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
        raise failure(action, url, exc) from None


def _chunks(fh: Any, action: str, url: str) -> Iterator[bytes]:
    try:
        while chunk := fh.read(_CHUNK):
            yield chunk
    except OSError as exc:
        raise failure(action, url, exc) from None


def _raw_chunks(response: requests.Response, action: str, url: str) -> Iterator[bytes]:
    with _network_errors(action, url):
        yield from response.raw.stream(_CHUNK, decode_content=False)


def _session(client: IndexClient) -> requests.Session:
    """A requests session whose redirects keep a request's credentials only on their origin, and
    that never reads ``~/.netrc`` on its own (:meth:`IndexClient.credentials_for` does, when asked)."""
    import requests  # about 60 ms: only when an index is asked (start-up time)

    class Session(requests.Session):
        def rebuild_auth(
            self, prepared_request: requests.PreparedRequest, response: requests.Response
        ) -> None:
            had = prepared_request.headers.pop("Authorization", None) is not None
            found = client.credentials_for(prepared_request.url or "") if had else None
            if found is not None:
                prepared_request.headers["Authorization"] = found.header

    return Session()
