"""``publish``: put gated wheels on an index, only when their manifest proves the gate passed.

The manifest beside each wheel (``<wheel>.manifest.json``, :mod:`buildkit.manifest`) is the proof:
nothing heavy is re-run, but the wheel's sha256 IS recomputed and must be the one the manifest names.
Every wheel under DIST is checked before any is published: one refusal publishes nothing
(:class:`~buildkit.errors.PublishRefused`, exit 10, naming each wheel and its reason).

With a recipe (``publish DIST --recipe R``: the target is the recipe's ``publish`` section), every
wheel must also have been built from that very recipe file: a wheel whose manifest records another
recipe sha256 (another recipe, or this one edited since the build) is refused, naming both recipes.
``--to TARGET`` publishes wheels of any recipe.

``dry_run``: every check above and the target's state (the static index read without its lock, or the
index's simple pages) is done; nothing is written or uploaded, and each wheel's outcome is "would
publish" or "already published".

A network failure (DNS, connection refused or reset, timeout, HTTP 5xx / 408 / 429) while reading the
index or uploading is :class:`~buildkit.errors.PublishUnavailable` (exit 13: transient, retry), never
a refusal (exit 10: retrying gives the same answer). A TLS certificate that does not verify is a
refusal.

Targets (:func:`parse_target`):

- ``directory``: a path or ``file://`` URL: a static PEP 503 index written by :mod:`buildkit.publish.index`.
  An empty path (``--to ''``, ``file://``) or a path that cannot become a writable directory (an
  existing file, a path through a file, ``/proc/...``) is a :class:`~buildkit.errors.UsageError`
  (exit 2), raised before anything is written.
- ``index``: an ``http(s)://`` upload URL of an index server (pypiserver, devpi, ...): uploaded with
  ``twine upload --repository-url``. Credentials: ``TWINE_USERNAME``/``TWINE_PASSWORD`` in the
  environment, or twine's keyring lookup; they reach twine only through its environment and every
  line echoed back is scrubbed of them.
- ``pypi``: ``pypi`` or an ``upload.pypi.org``/``test.pypi.org`` URL: like ``index``, but wheels with a
  PEP 440 local label are refused (PyPI rejects them).

Idempotent: before anything is uploaded or written, EVERY checked wheel is compared with the
target's current state (the index's simple page, or the static index under its lock): a file already
there with the same sha256 is reported "already published"; one with other bytes refuses the whole
batch, so nothing is published.

The bytes published are the bytes checked: each wheel is copied (and hashed while copied) into the
static index, or into a private temporary folder that twine then uploads from.

Credentials (``TWINE_USERNAME``/``TWINE_PASSWORD``) are sent by this module only to the exact origin
(scheme, host, port) of the upload URL, and only over https or to a loopback http host (127.0.0.0/8,
::1, localhost): never to another host the simple page links to, never across a redirect to another
origin, never to pypi.org for an upload.pypi.org target. A simple page is read without credentials
first; they are added only when that origin answers HTTP 401.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import ipaddress
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from buildkit import manifest
from buildkit.errors import BuildkitError, PublishRefused, PublishUnavailable, UsageError
from buildkit.publish import index as static_index
from buildkit.version import PYPI_LOCAL_REASON

if TYPE_CHECKING:
    from buildkit.recipe import Recipe

PYPI_UPLOAD = "https://upload.pypi.org/legacy/"
PYPI_HOSTS = {"upload.pypi.org": "https://pypi.org/simple/", "test.pypi.org": "https://test.pypi.org/simple/"}
SECRET_ENV = ("TWINE_PASSWORD", "TWINE_USERNAME")
SECRET_NAME = re.compile(r"(TOKEN|PASSWORD|SECRET|API_KEY)", re.IGNORECASE)
REDACTED = "***"
#: HTTP answers that say "not now" rather than "no": 5xx, request timeout, too many requests
TRANSIENT_STATUS = frozenset({408, 429})
RETRY_HINT = (
    "the index is unreachable or failing (transient, exit 13): retry the same command; "
    'a wheel already uploaded is then reported "already published"'
)


@dataclass(frozen=True)
class Target:
    kind: str  # "directory" | "index" | "pypi"
    location: str  # a directory path, or an upload URL (credentials stripped)
    simple_url: str | None = None  # where the index's PEP 503 pages are read (index / pypi)

    def describe(self) -> str:
        return f"{self.kind} {self.location}"


@dataclass(frozen=True)
class Candidate:
    """A wheel whose manifest was read and whose sha256 was recomputed."""

    wheel: Path
    sha256: str
    manifest: Mapping[str, Any]


@dataclass(frozen=True)
class Refusal:
    wheel: Path
    reason: str


@dataclass(frozen=True)
class Outcome:
    wheel: Path
    status: str  # "published" | "already published" | "would publish" (dry run)
    where: str


def strip_userinfo(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def parse_target(text: str, *, simple_url: str | None = None) -> Target:
    """``pypi``, an upload URL, ``file://DIR`` or a directory path -> :class:`Target`."""
    if text == "pypi":
        return Target("pypi", PYPI_UPLOAD, simple_url or PYPI_HOSTS["upload.pypi.org"])
    parts = urllib.parse.urlsplit(text)
    if parts.scheme == "file":
        return Target("directory", _directory(text, urllib.request.url2pathname(parts.path)))
    if parts.scheme in ("http", "https"):
        if parts.username is not None or parts.password is not None:
            raise UsageError(
                f"--to {strip_userinfo(text)}: credentials in the URL are refused (they end up in shell "
                "history and logs); set TWINE_USERNAME/TWINE_PASSWORD or store them in the keyring"
            )
        host = parts.hostname or ""
        if host in PYPI_HOSTS:
            return Target("pypi", text, simple_url or PYPI_HOSTS[host])
        return Target("index", text, simple_url or f"{text.rstrip('/')}/simple/")
    if parts.scheme and len(parts.scheme) > 1:
        raise UsageError(
            f"--to {text!r}: unsupported scheme {parts.scheme!r} (use a path, file://, http(s)://)"
        )
    return Target("directory", _directory(text, text))


def recipe_target(recipe: str | Path) -> Target:
    """The :class:`Target` named by the ``publish`` section of the recipe at ``recipe``: a directory
    relative to the recipe's folder, ``pypi``, or an index URL (UsageError when it has no such section)."""
    from buildkit.recipe import load_recipe

    return target_of(load_recipe(recipe))


def target_of(recipe: Recipe, *, simple_url: str | None = None) -> Target:
    """The :class:`Target` of a loaded recipe's ``publish`` section (see :func:`recipe_target`);
    ``simple_url`` overrides where an index's PEP 503 pages are read (a directory has none: UsageError)."""
    spec = recipe.publish
    if spec is None:
        raise UsageError(f"{recipe.display_path} has no publish section: pass --to")
    if spec.kind == "directory":
        if simple_url is not None:
            raise UsageError(
                f"--simple-url: {recipe.display_path} publishes to a directory, which has no simple pages"
            )
        return parse_target(str(Path(recipe.path).parent / spec.target))
    return parse_target("pypi" if spec.kind == "pypi" else spec.target, simple_url=simple_url)


def _directory(text: str, path: str) -> str:
    """The directory of a ``directory`` target; an empty one would silently mean the current directory."""
    if not path.strip():
        raise UsageError(
            f"--to {text!r}: empty directory path (give a directory, e.g. --to ./site/index or "
            "--to file:///srv/index)"
        )
    return path


def collect(dist: Path, target: Target | None = None) -> list[Path]:
    """Every ``*.whl`` under ``dist`` (recursively, sorted).

    A path with any dot-component below ``dist`` is skipped: temporary dot-files, and dot-folders such
    as the ``.<job>.incoming-*`` staging folders of ``buildkit build``. With a ``directory`` target
    inside ``dist`` (``--to dist/index``), the wheels already published there are skipped too: they
    are the index's copies, not wheels to publish (they have no manifest beside them).
    """
    if dist.is_file() and dist.suffix == ".whl":
        return [dist]
    if not dist.is_dir():
        raise UsageError(f"{dist}: no such directory")
    index = _index_inside(dist, target)
    return sorted(
        p
        for p in dist.rglob("*.whl")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(dist).parts)
        and not (index is not None and p.resolve().is_relative_to(index))
    )


def _index_inside(dist: Path, target: Target | None) -> Path | None:
    """The resolved root of a directory ``target`` that lies in ``dist`` (or is it), else None."""
    if target is None or target.kind != "directory":
        return None
    root = Path(target.location).resolve()
    return root if root.is_relative_to(dist.resolve()) else None


def examine(wheel: Path) -> Candidate | Refusal:
    """Read the manifest of ``wheel`` and recompute its sha256: a Candidate, or the Refusal's reason."""
    try:
        parse_wheel_filename(wheel.name)
    except InvalidWheelFilename as exc:
        return Refusal(wheel, f"not a valid wheel file name: {exc}")
    path = manifest.manifest_path(wheel)
    if not path.is_file():
        return Refusal(wheel, f"no manifest ({path.name} missing): build and gate it with `buildkit build`")
    try:
        data = manifest.read(wheel)
    except (ValueError, OSError) as exc:
        return Refusal(wheel, f"manifest {path.name} is unreadable: {exc}")
    if not isinstance(data, dict) or data.get("schema") != manifest.SCHEMA:
        return Refusal(wheel, f"manifest {path.name} is not a {manifest.SCHEMA} document")
    verdict = data.get("verdict")
    if not isinstance(verdict, dict) or verdict.get("passed") is not True:
        errors = []
        if isinstance(verdict, dict):
            errors = [
                str(f.get("message", f))
                for f in verdict.get("findings", [])
                if isinstance(f, dict) and f.get("severity", "error") == "error"
            ]
        detail = f": {'; '.join(errors[:3])}" if errors else ""
        return Refusal(wheel, f"the gate failed on this wheel (manifest verdict.passed is not true){detail}")
    recorded = data.get("wheel", {}).get("sha256") if isinstance(data.get("wheel"), dict) else None
    if not isinstance(recorded, str):
        return Refusal(wheel, f"manifest {path.name} names no wheel.sha256")
    named = data["wheel"].get("filename")
    if named is not None and named != wheel.name:
        return Refusal(wheel, f"manifest {path.name} is for another file ({named})")
    actual = manifest.sha256_file(wheel)
    if actual != recorded:
        return Refusal(
            wheel,
            f"sha256 mismatch: the wheel is {actual}, the manifest names {recorded} "
            "(the gate did not see these bytes)",
        )
    return Candidate(wheel, actual, data)


def refuse_for_pypi(candidate: Candidate) -> Refusal | None:
    version = parse_wheel_filename(candidate.wheel.name)[1]
    if version.local is not None:
        return Refusal(candidate.wheel, f"local version label '+{version.local}': {PYPI_LOCAL_REASON}")
    return None


def project_of(wheel: Path) -> str:
    """The canonical (PEP 503) project name in a wheel's file name."""
    return canonicalize_name(parse_wheel_filename(wheel.name)[0])


def refuse_for_recipe(candidate: Candidate, recipe: Recipe) -> Refusal | None:
    """A Refusal when the manifest does not record ``recipe``'s file bytes (its sha256) as the recipe
    the wheel was built from; the message names both recipes (file, name, sha256)."""
    recorded = candidate.manifest.get("recipe")
    given = f"--recipe {recipe.display_path} ({recipe.name}, sha256 {recipe.sha256[:12]})"
    project = project_of(candidate.wheel)
    if not isinstance(recorded, dict) or not isinstance(recorded.get("sha256"), str):
        return Refusal(
            candidate.wheel,
            f"project {project}: the manifest records no recipe (recipe.sha256), so the wheel cannot be "
            f"tied to {given}; publish it with --to",
        )
    if recorded["sha256"] == recipe.sha256:
        if project != canonicalize_name(recipe.name):
            return Refusal(
                candidate.wheel,
                f"project {project} is not the distribution {given} names "
                f"({canonicalize_name(recipe.name)}): the recipe's name is its wheels' distribution name",
            )
        return None
    built = (
        f"recipe {recorded.get('file', '?')} ({recorded.get('name', '?')}, "
        f"sha256 {str(recorded['sha256'])[:12]})"
    )
    return Refusal(
        candidate.wheel,
        f"project {project} was built from {built}, not from {given}: publish it with the recipe it "
        "was built from (or rebuild it, if this recipe was edited since)",
    )


def check_all(wheels: list[Path], target: Target, recipe: Recipe | None = None) -> list[Candidate]:
    """Examine every wheel (and, with ``recipe``, that it was built from that recipe file); any
    refusal raises one PublishRefused listing them all."""
    if not wheels:
        raise PublishRefused("no wheels to publish (no *.whl found)")
    candidates: list[Candidate] = []
    refusals: list[Refusal] = []
    for wheel in wheels:
        result = examine(wheel)
        if isinstance(result, Candidate) and recipe is not None:
            result = refuse_for_recipe(result, recipe) or result
        if isinstance(result, Candidate) and target.kind == "pypi":
            result = refuse_for_pypi(result) or result
        if isinstance(result, Candidate):
            candidates.append(result)
        else:
            refusals.append(result)
    if refusals:
        lines = [f"publish refused: {len(refusals)} of {len(wheels)} wheel(s); nothing was published"]
        lines += [f"  {r.wheel}: {r.reason}" for r in refusals]
        raise PublishRefused("\n".join(lines))
    return candidates


# ---------------------------------------------------------------- secrets


def secrets_from(env: Mapping[str, str]) -> list[str]:
    """Values that must never be echoed: twine credentials and any *TOKEN*/*PASSWORD* variable."""
    values = {env[k] for k in SECRET_ENV if env.get(k)}
    values |= {v for k, v in env.items() if SECRET_NAME.search(k) and v}
    # a username such as __token__ is not secret; short values would redact ordinary words
    return sorted((v for v in values if len(v) >= 6 and v != "__token__"), key=len, reverse=True)


def scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
        quoted = urllib.parse.quote(secret, safe="")
        if quoted != secret:
            text = text.replace(quoted, REDACTED)
    return text


# ---------------------------------------------------------------- index servers


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


# ---------------------------------------------------------------- publish


def publish(
    dist: Path,
    target: Target,
    *,
    env: Mapping[str, str] | None = None,
    log: Callable[[str], None] = lambda line: None,
    recipe: Recipe | None = None,
    dry_run: bool = False,
) -> list[Outcome]:
    """Check every wheel under ``dist`` and the target's state, then publish; returns what happened.

    ``recipe``: every wheel must have been built from that recipe file (manifest ``recipe.sha256``).
    ``dry_run``: all the checks and the target's state, nothing written or uploaded ("would publish").
    """
    environ = dict(os.environ if env is None else env)
    if target.kind == "directory":  # an unwritable target is refused before anything is written
        static_index.check_root(Path(target.location))
    candidates = check_all(collect(dist, target), target, recipe)
    log(f"{len(candidates)} wheel(s) checked: manifests passed, sha256 recomputed and matching")
    if recipe is not None:
        _log_recipe(candidates, recipe, log)
    if target.kind == "directory":
        return _publish_directory(candidates, Path(target.location), log, dry_run=dry_run)
    return _publish_remote(candidates, target, environ, log, dry_run=dry_run)


def _log_recipe(candidates: list[Candidate], recipe: Recipe, log: Callable[[str], None]) -> None:
    log(f"every wheel was built from {recipe.display_path} (sha256 {recipe.sha256[:12]})")


def _publish_directory(
    candidates: list[Candidate], root: Path, log: Callable[[str], None], *, dry_run: bool
) -> list[Outcome]:
    pairs = [(c.wheel, c.sha256) for c in candidates]
    results = static_index.check_wheels(root, pairs) if dry_run else static_index.add_wheels(root, pairs)
    new = "would publish" if dry_run else "published"
    outcomes = [
        Outcome(c.wheel, new if r.status == "published" else "already published", str(r.path))
        for c, r in zip(candidates, results, strict=True)
    ]
    for o in outcomes:
        log(f"{o.status}: {o.wheel.name} -> {o.where}")
    if dry_run:
        log(f"dry run: nothing was written to {root}")
    return outcomes


def remote_state(candidates: list[Candidate], target: Target, credentials: Credentials | None) -> list[bool]:
    """For each candidate, whether it is already on the index; any conflict raises PublishRefused
    naming every one (same file name with other bytes there, or twice under DIST). An index that
    cannot be reached raises PublishUnavailable."""
    assert target.simple_url is not None
    pages: dict[str, dict[str, RemoteFile]] = {}
    seen: dict[str, str] = {}
    present: list[bool] = []
    conflicts: list[str] = []
    for c in candidates:
        name = c.wheel.name
        if name in seen:  # the same file twice under DIST: published once
            present.append(True)
            if seen[name] != c.sha256:
                conflicts.append(
                    f"  {c.wheel}: another wheel under DIST has this file name with other bytes "
                    f"(sha256 {seen[name]}, this wheel {c.sha256})"
                )
            continue
        seen[name] = c.sha256
        project = project_of(c.wheel)
        if project not in pages:
            pages[project] = remote_files(target.simple_url, project, credentials)
        remote = pages[project].get(name)
        if remote is None:
            present.append(False)
            continue
        sha = remote.sha256 or fetch_sha256(remote.url, credentials)
        present.append(True)
        if sha != c.sha256:
            where = f"{strip_userinfo(target.simple_url).rstrip('/')}/{project}/"
            conflicts.append(
                f"  {name}: {where} already has a file of this name with other bytes "
                f"(sha256 {sha}, this wheel {c.sha256}); a released file is never replaced"
            )
    if conflicts:
        head = f"publish refused: {len(conflicts)} of {len(candidates)} wheel(s); nothing was published"
        raise PublishRefused("\n".join([head, *conflicts]))
    return present


def _remote_state_or_unavailable(
    candidates: list[Candidate], target: Target, credentials: Credentials | None, *, dry_run: bool
) -> list[bool]:
    try:
        return remote_state(candidates, target, credentials)
    except PublishUnavailable as exc:
        done = (
            f"dry run: {len(candidates)} wheel(s) passed every check, but whether they are already on "
            f"{target.describe()} is unknown"
            if dry_run
            else "nothing was published"
        )
        raise PublishUnavailable(f"{exc.message}\n  {done}") from None


def _publish_remote(
    candidates: list[Candidate],
    target: Target,
    env: Mapping[str, str],
    log: Callable[[str], None],
    *,
    dry_run: bool = False,
) -> list[Outcome]:
    assert target.simple_url is not None
    credentials = credentials_for(target.location, env)
    present = _remote_state_or_unavailable(candidates, target, credentials, dry_run=dry_run)
    where = {
        c.wheel: f"{strip_userinfo(target.simple_url).rstrip('/')}/{project_of(c.wheel)}/" for c in candidates
    }
    if dry_run:
        planned = [
            Outcome(c.wheel, "already published" if there else "would publish", where[c.wheel])
            for c, there in zip(candidates, present, strict=True)
        ]
        for o in planned:
            log(f"{o.status}: {o.wheel.name} -> {o.where}")
        log(f"dry run: nothing was uploaded to {strip_userinfo(target.location)}")
        return planned
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="buildkit-publish-") as private:  # mode 0700
        copies: list[Path | None] = []
        for c, there in zip(candidates, present, strict=True):  # every copy verified before any upload
            copy = Path(private) / c.wheel.name
            if not there:
                static_index.copy_verified(c.wheel, copy, c.sha256)
            copies.append(None if there else copy)
        for c, upload in zip(candidates, copies, strict=True):
            if upload is None:
                outcomes.append(Outcome(c.wheel, "already published", where[c.wheel]))
            else:
                _upload(upload, target, env, log, outcomes)
                outcomes.append(Outcome(c.wheel, "published", where[c.wheel]))
            log(f"{outcomes[-1].status}: {c.wheel.name} -> {where[c.wheel]}")
    return outcomes


def _upload(
    wheel: Path, target: Target, env: Mapping[str, str], log: Callable[[str], None], done: list[Outcome]
) -> None:
    """:func:`twine_upload`; a failure names the wheels this run uploaded before it."""
    try:
        twine_upload(wheel, target.location, env, log)
    except (PublishRefused, PublishUnavailable) as exc:
        uploaded = [o.wheel.name for o in done if o.status == "published"]
        if not uploaded:
            raise
        raise type(exc)(f"{exc.message}\n  uploaded before the failure: {', '.join(uploaded)}") from None


def outcomes_json(outcomes: list[Outcome], target: Target, *, dry_run: bool = False) -> str:
    data = {
        "target": {"kind": target.kind, "location": target.location},
        "dry_run": dry_run,
        "wheels": [{"wheel": str(o.wheel), "status": o.status, "where": o.where} for o in outcomes],
    }
    return json.dumps(data, indent=2, sort_keys=True)
