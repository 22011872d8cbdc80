"""Index servers over HTTP: their PEP 503 simple pages, and ``twine upload``.

Credentials (``TWINE_USERNAME``/``TWINE_PASSWORD``) are sent only to the exact origin (scheme,
host, port) of the upload URL (:class:`Credentials`), and only over https or to a loopback http host;
a simple page is read without them first, and they are added only when that origin answers HTTP
401 (:func:`_open`); a redirect never carries them to another origin. A network failure is
:class:`~buildkit.errors.PublishUnavailable` (exit 13) when retrying may help, else
:class:`~buildkit.errors.PublishRefused` (:func:`network_failure`).
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import ipaddress
import re
import ssl
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from buildkit.errors import BuildkitError, PublishRefused, PublishUnavailable
from buildkit.publish.scrub import scrub, secrets_from, strip_userinfo

#: HTTP answers that say "not now" rather than "no": 5xx, request timeout, too many requests
TRANSIENT_STATUS = frozenset({408, 429})
RETRY_HINT = (
    "the index is unreachable or failing (transient, exit 13): retry the same command; "
    'a wheel already uploaded is then reported "already published"'
)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)


_LOOPBACK_NAMES = {"localhost"}
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) URL, default port filled in; None for anything else."""
    parts = urllib.parse.urlsplit(url)
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


@dataclass(frozen=True)
class Credentials:
    """HTTP Basic credentials bound to one origin (the upload URL's)."""

    origin: tuple[str, str, int]
    header: str = field(repr=False)  # "Basic ..."; never in a repr or a traceback

    def allows(self, url: str) -> bool:
        return origin(url) == self.origin

    def describe(self) -> str:
        scheme, host, port = self.origin
        return f"{scheme}://{host}:{port}"


def credentials_for(upload_url: str, env: Mapping[str, str]) -> Credentials | None:
    """TWINE_USERNAME/TWINE_PASSWORD bound to the origin of ``upload_url``; None when there are none or
    when that origin may not receive them (plain http to a host that is not loopback)."""
    user, password = env.get("TWINE_USERNAME"), env.get("TWINE_PASSWORD")
    where = origin(upload_url)
    if not user or not password or where is None:
        return None
    if where[0] != "https" and not is_loopback(where[1]):
        return None
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return Credentials(where, f"Basic {token}")


class _OriginBoundRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects never carry credentials to another origin.

    Credentials ride as an "unredirected" header, which urllib does not copy to a redirected request;
    they are put back only when the redirect stays on the credentials' origin.
    """

    def __init__(self, credentials: Credentials | None) -> None:
        super().__init__()
        self.credentials = credentials

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is None:
            return None
        had_credentials = req.get_header("Authorization") is not None
        new.remove_header("Authorization")
        if had_credentials and self.credentials is not None and self.credentials.allows(new.full_url):
            new.add_unredirected_header("Authorization", self.credentials.header)
        return new


def _open(url: str, credentials: Credentials | None, *, timeout: float, accept: str | None = None) -> Any:
    """GET ``url`` without credentials; on HTTP 401 from the credentials' origin, once more with them."""
    opener = urllib.request.build_opener(_OriginBoundRedirects(credentials))
    headers = {"Accept": accept} if accept else {}
    try:
        return opener.open(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code != 401:
            raise
        answered = exc.geturl() or url
        exc.close()
    shown = strip_userinfo(answered)
    if credentials is None:
        raise PublishRefused(
            f"{shown} asks for credentials (HTTP 401) and none may be sent there: set "
            "TWINE_USERNAME/TWINE_PASSWORD (they are sent only to the upload URL's origin, over https "
            "or to a loopback http host)"
        )
    if not credentials.allows(answered):
        raise PublishRefused(
            f"{shown} asks for credentials (HTTP 401), but it is not the upload URL's origin "
            f"({credentials.describe()}): the credentials are not sent there; give a --simple-url "
            "on the upload URL's origin"
        )
    request = urllib.request.Request(answered, headers=headers)
    request.add_unredirected_header("Authorization", credentials.header)
    return opener.open(request, timeout=timeout)


def is_transient_status(code: int) -> bool:
    """An HTTP status that says "not now" (5xx, 408, 429): retrying may succeed."""
    return code >= 500 or code in TRANSIENT_STATUS


def network_failure(action: str, url: str, exc: BaseException) -> BuildkitError:
    """The error for a failed read of ``url``: PublishUnavailable (13) when transient (DNS, refused,
    reset, timeout, 5xx/408/429), PublishRefused (10) otherwise (4xx, a TLS certificate not trusted)."""
    shown = strip_userinfo(url)
    if isinstance(exc, urllib.error.HTTPError):
        problem = f"cannot {action} {shown}: HTTP {exc.code} {exc.reason}"
        if is_transient_status(exc.code):
            return PublishUnavailable(f"{problem}\n  {RETRY_HINT}")
        return PublishRefused(problem)
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, ssl.SSLCertVerificationError):
        return PublishRefused(f"cannot {action} {shown}: {reason} (the TLS certificate is not trusted)")
    text = str(reason) or type(reason).__name__
    return PublishUnavailable(f"cannot {action} {shown}: {text}\n  {RETRY_HINT}")


#: what urllib raises for a network failure (URLError and socket errors are OSErrors; a truncated
#: response is an http.client.HTTPException)
NETWORK_ERRORS = (OSError, http.client.HTTPException)


@dataclass(frozen=True)
class RemoteFile:
    url: str  # absolute, without the fragment
    sha256: str | None  # from the link's #sha256= fragment


def remote_files(
    simple_url: str, project: str, credentials: Credentials | None = None
) -> dict[str, RemoteFile]:
    """Files of ``project`` on a PEP 503 index: filename -> RemoteFile (sha256 None when unhashed)."""
    url = urllib.parse.urljoin(simple_url.rstrip("/") + "/", f"{project}/")
    try:
        with _open(url, credentials, timeout=60, accept="text/html") as response:
            page = response.read().decode("utf-8", errors="replace")
            final = response.geturl()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return {}
        raise network_failure("read", url, exc) from None
    except NETWORK_ERRORS as exc:
        raise network_failure("read", url, exc) from None
    parser = _Links()
    parser.feed(page)
    files: dict[str, RemoteFile] = {}
    for href in parser.hrefs:
        absolute = urllib.parse.urljoin(final, href)
        link, _, fragment = absolute.partition("#")
        filename = urllib.parse.unquote(urllib.parse.urlsplit(link).path.rsplit("/", 1)[-1])
        sha = fragment[len("sha256=") :] if fragment.startswith("sha256=") else None
        files[filename] = RemoteFile(link, sha)
    return files


def fetch_sha256(link: str, credentials: Credentials | None = None) -> str:
    """Download a file an index lists without a hash, and hash it (credentials: see :func:`_open`)."""
    digest = hashlib.sha256()
    try:
        with _open(link, credentials, timeout=600) as response:
            while block := response.read(1 << 20):
                digest.update(block)
    except NETWORK_ERRORS as exc:
        raise network_failure("download", link, exc) from None
    return digest.hexdigest()


#: twine's last words on a transient failure: its HTTPError line for a 5xx/408/429 answer (after its
#: own retries), or the requests exception of a connection that failed (DNS, refused, reset, timeout)
TWINE_TRANSIENT = re.compile(
    r"HTTPError:\s+(5\d\d|408|429)\b.*"
    r"|requests\.exceptions\.(ConnectionError|ConnectTimeout|ReadTimeout|Timeout|ChunkedEncodingError)\b.*"
)


def twine_upload(
    wheel: Path,
    url: str,
    env: Mapping[str, str],
    log: Callable[[str], None],
) -> None:
    """``twine upload --repository-url URL WHEEL`` with the credentials in its environment only."""
    secrets = secrets_from(env)
    command = [
        sys.executable,
        "-m",
        "twine",
        "--no-color",
        "upload",
        "--non-interactive",
        "--disable-progress-bar",
        "--repository-url",
        url,
        str(wheel),
    ]
    shown = scrub(" ".join(["twine", *command[3:]]), secrets)
    log(f"$ {shown}")
    result = subprocess.run(command, env=dict(env), capture_output=True, text=True, check=False)
    output = scrub(
        "\n".join(line.rstrip() for line in (result.stdout + result.stderr).strip().splitlines()), secrets
    )
    for line in output.splitlines():
        log(f"  {line}")
    if result.returncode == 0:
        return
    failed = f"{wheel.name}: twine upload to {strip_userinfo(url)} failed (exit {result.returncode})"
    transient = [m.group(0).strip() for m in TWINE_TRANSIENT.finditer(output)]
    if transient:
        raise PublishUnavailable(f"{failed}: {transient[-1]}\n  {RETRY_HINT}")
    tail = "\n".join(output.splitlines()[-8:])
    raise PublishRefused(f"{failed}:\n{tail}")
