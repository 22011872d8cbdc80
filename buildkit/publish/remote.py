"""Index servers over HTTP: their simple pages (read by :mod:`buildkit.pyindex`), and ``twine upload``.

Credentials (``TWINE_USERNAME``/``TWINE_PASSWORD``) are sent only to the exact origin of the upload
URL (:class:`~buildkit.pyindex.Credentials`), and only over https or to a loopback http host. A
network failure is :class:`~buildkit.errors.PublishUnavailable` (exit 13) when retrying may help,
else :class:`~buildkit.errors.PublishRefused` (:func:`network_failure`)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from buildkit import pyindex
from buildkit.errors import BuildkitError, IndexUnavailable, PublishRefused, PublishUnavailable
from buildkit.publish.scrub import scrub, secrets_from, strip_userinfo
from buildkit.pyindex import Credentials, is_loopback, origin

_RETRY_HINT = (
    "the index is unreachable or failing (transient, exit 13): retry the same command; "
    'a wheel already uploaded is then reported "already published"'
)


def credentials_for(upload_url: str, env: Mapping[str, str]) -> Credentials | None:
    """TWINE_USERNAME/TWINE_PASSWORD bound to the origin of ``upload_url``; None when there are none or
    when that origin may not receive them (plain http to a host that is not loopback)."""
    user, password = env.get("TWINE_USERNAME"), env.get("TWINE_PASSWORD")
    where = origin(upload_url)
    if not user or not password or where is None:
        return None
    if where[0] != "https" and not is_loopback(where[1]):
        return None
    return Credentials.basic(upload_url, user, password)


def _client(credentials: Credentials | None, timeout: float) -> pyindex.IndexClient:
    """The index client: ``credentials`` sent only when their origin answers HTTP 401."""
    return pyindex.IndexClient(timeout=timeout, credentials=[] if credentials is None else [credentials])


def network_failure(action: str, url: str, exc: BaseException) -> BuildkitError:
    """:func:`buildkit.pyindex.failure`'s judgement of a failed read of ``url``, worded for ``publish``:
    PublishUnavailable (13) when transient, PublishRefused (10) otherwise."""
    judged = (
        exc if isinstance(exc, IndexUnavailable | pyindex.IndexRefused) else pyindex.failure(action, url, exc)
    )
    shown = strip_userinfo(url)
    if isinstance(judged, pyindex.IndexRefused):
        return PublishRefused(f"cannot {action} {shown}: {judged.reason}")
    return PublishUnavailable(f"cannot {action} {shown}: {judged.reason}\n  {_RETRY_HINT}")


def _index_error(
    action: str, url: str, exc: IndexUnavailable | pyindex.IndexRefused, credentials: Credentials | None
) -> BuildkitError:
    """:func:`network_failure`, and an HTTP 401 the credentials could not be sent to, said so."""
    if isinstance(exc, pyindex.IndexRefused) and exc.status == 401:
        answered = strip_userinfo(exc.url)
        if credentials is None:
            return PublishRefused(
                f"{answered} asks for credentials (HTTP 401) and none may be sent there: set "
                "TWINE_USERNAME/TWINE_PASSWORD (they are sent only to the upload URL's origin, over https "
                "or to a loopback http host)"
            )
        if not credentials.allows(exc.url):
            return PublishRefused(
                f"{answered} asks for credentials (HTTP 401), but it is not the upload URL's origin "
                f"({credentials.describe()}): the credentials are not sent there; give a --simple-url "
                "on the upload URL's origin"
            )
    return network_failure(action, url, exc)


@dataclass(frozen=True)
class RemoteFile:
    url: str  # absolute, without the fragment
    sha256: str | None  # from the link's #sha256= fragment (or a PEP 691 page's hashes)


def remote_files(
    simple_url: str, project: str, credentials: Credentials | None = None
) -> dict[str, RemoteFile]:
    """Files of ``project`` on a simple index: filename -> RemoteFile (sha256 None when unhashed)."""
    url = pyindex.simple_page_url(simple_url, project)
    try:
        page = _client(credentials, timeout=60).page(url)
    except pyindex.NotFound:
        return {}
    except (IndexUnavailable, pyindex.IndexRefused) as exc:
        raise _index_error("read", url, exc, credentials) from None
    return {link.filename: RemoteFile(link.url, link.sha256) for link in page.links}


def fetch_sha256(link: str, credentials: Credentials | None = None) -> str:
    """Download a file an index lists without a hash, and hash it (credentials: see the module)."""
    try:
        return _client(credentials, timeout=600).digest(link)
    except pyindex.NotFound as exc:
        raise PublishRefused(f"cannot download {strip_userinfo(link)}: {exc.reason}") from None
    except (IndexUnavailable, pyindex.IndexRefused) as exc:
        raise _index_error("download", link, exc, credentials) from None


#: twine's last words on a transient failure: its HTTPError line for a 5xx/408/429 answer (after its
#: own retries), or the requests exception of a connection that failed (DNS, refused, reset, timeout)
_TWINE_TRANSIENT = re.compile(
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
    transient = [m.group(0).strip() for m in _TWINE_TRANSIENT.finditer(output)]
    if transient:
        raise PublishUnavailable(f"{failed}: {transient[-1]}\n  {_RETRY_HINT}")
    tail = "\n".join(output.splitlines()[-8:])
    raise PublishRefused(f"{failed}:\n{tail}")
