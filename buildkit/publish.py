"""``publish``: put gated wheels on an index, only when their manifest proves the gate passed.

The manifest beside each wheel (``<wheel>.manifest.json``, :mod:`buildkit.manifest`) is the proof:
nothing heavy is re-run, but the wheel's sha256 IS recomputed and must be the one the manifest names.
Every wheel under DIST is checked before any is published: one refusal publishes nothing
(:class:`~buildkit.errors.PublishRefused`, exit 10, naming each wheel and its reason).

Targets (:func:`parse_target`):

- ``directory``: a path or ``file://`` URL: a static PEP 503 index written by :mod:`buildkit.index`.
  An empty path (``--to ''``, ``file://``) or a path that cannot become a writable directory (an
  existing file, a path through a file, ``/proc/...``) is a :class:`~buildkit.errors.UsageError`
  (exit 2), raised before anything is written.
- ``index``: an ``http(s)://`` upload URL of an index server (pypiserver, devpi, ...): uploaded with
  ``twine upload --repository-url``. Credentials: ``TWINE_USERNAME``/``TWINE_PASSWORD`` in the
  environment, or twine's keyring lookup; they reach twine only through its environment and every
  line echoed back is scrubbed of them.
- ``pypi``: ``pypi`` or an ``upload.pypi.org``/``test.pypi.org`` URL: like ``index``, but wheels with a
  PEP 440 local label are refused (PyPI rejects them).

Idempotent: before uploading, the index's simple page is read; a file already there with the same
sha256 is reported "already published", one with other bytes is refused.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from buildkit import index as static_index
from buildkit import manifest
from buildkit.errors import PublishRefused, UsageError
from buildkit.version import PYPI_LOCAL_REASON

PYPI_UPLOAD = "https://upload.pypi.org/legacy/"
PYPI_HOSTS = {"upload.pypi.org": "https://pypi.org/simple/", "test.pypi.org": "https://test.pypi.org/simple/"}
SECRET_ENV = ("TWINE_PASSWORD", "TWINE_USERNAME")
SECRET_NAME = re.compile(r"(TOKEN|PASSWORD|SECRET|API_KEY)", re.IGNORECASE)
REDACTED = "***"


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
    status: str  # "published" | "already published"
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


def _directory(text: str, path: str) -> str:
    """The directory of a ``directory`` target; an empty one would silently mean the current directory."""
    if not path.strip():
        raise UsageError(
            f"--to {text!r}: empty directory path (give a directory, e.g. --to ./site/index or "
            "--to file:///srv/index)"
        )
    return path


def collect(dist: Path) -> list[Path]:
    """Every ``*.whl`` under ``dist`` (recursively, sorted; temporary dot-files skipped)."""
    if dist.is_file() and dist.suffix == ".whl":
        return [dist]
    if not dist.is_dir():
        raise UsageError(f"{dist}: no such directory")
    return sorted(p for p in dist.rglob("*.whl") if p.is_file() and not p.name.startswith("."))


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


def check_all(wheels: list[Path], target: Target) -> list[Candidate]:
    """Examine every wheel; any refusal raises one PublishRefused listing them all."""
    if not wheels:
        raise PublishRefused("no wheels to publish (no *.whl found)")
    candidates: list[Candidate] = []
    refusals: list[Refusal] = []
    for wheel in wheels:
        result = examine(wheel)
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


def _auth_header(env: Mapping[str, str]) -> dict[str, str]:
    user, password = env.get("TWINE_USERNAME"), env.get("TWINE_PASSWORD")
    if not user or not password:
        return {}
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def remote_files(simple_url: str, project: str, env: Mapping[str, str]) -> dict[str, str | None]:
    """Files of ``project`` on a PEP 503 index: filename -> sha256 (None when the page has no hash)."""
    url = urllib.parse.urljoin(simple_url.rstrip("/") + "/", f"{project}/")
    request = urllib.request.Request(url, headers={"Accept": "text/html", **_auth_header(env)})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            page = response.read().decode("utf-8", errors="replace")
            final = response.geturl()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return {}
        raise PublishRefused(f"cannot read {strip_userinfo(url)}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise PublishRefused(f"cannot read {strip_userinfo(url)}: {exc}") from None
    parser = _Links()
    parser.feed(page)
    files: dict[str, str | None] = {}
    for href in parser.hrefs:
        absolute = urllib.parse.urljoin(final, href)
        path, _, fragment = absolute.partition("#")
        filename = urllib.parse.unquote(path.rsplit("/", 1)[-1])
        sha = fragment[len("sha256=") :] if fragment.startswith("sha256=") else None
        files[filename] = sha
    return files


def _fetch_sha256(simple_url: str, project: str, filename: str, env: Mapping[str, str]) -> str:
    """Download a file the index lists without a hash, and hash it."""
    url = urllib.parse.urljoin(simple_url.rstrip("/") + "/", f"{project}/")
    with urllib.request.urlopen(urllib.request.Request(url, headers=_auth_header(env)), timeout=60) as r:
        parser = _Links()
        parser.feed(r.read().decode("utf-8", errors="replace"))
        base = r.geturl()
    for href in parser.hrefs:
        link = urllib.parse.urljoin(base, href).partition("#")[0]
        if urllib.parse.unquote(link.rsplit("/", 1)[-1]) == filename:
            digest = hashlib.sha256()
            request = urllib.request.Request(link, headers=_auth_header(env))
            with urllib.request.urlopen(request, timeout=600) as response:
                while block := response.read(1 << 20):
                    digest.update(block)
            return digest.hexdigest()
    raise PublishRefused(f"{filename}: listed by {strip_userinfo(url)} but not downloadable")


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
    if result.returncode != 0:
        tail = "\n".join(output.splitlines()[-8:])
        raise PublishRefused(
            f"{wheel.name}: twine upload to {strip_userinfo(url)} failed (exit {result.returncode}):\n{tail}"
        )


# ---------------------------------------------------------------- publish


def publish(
    dist: Path,
    target: Target,
    *,
    env: Mapping[str, str] | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> list[Outcome]:
    """Check every wheel under ``dist``, then publish each to ``target``; returns what happened."""
    environ = dict(os.environ if env is None else env)
    if target.kind == "directory":  # an unwritable target is refused before anything is written
        static_index.check_root(Path(target.location))
    candidates = check_all(collect(dist), target)
    log(f"{len(candidates)} wheel(s) checked: manifests passed, sha256 recomputed and matching")
    outcomes: list[Outcome] = []
    for c in candidates:
        if target.kind == "directory":
            result = static_index.add_wheel(Path(target.location), c.wheel, c.sha256)
            status = "published" if result.status == "published" else "already published"
            outcomes.append(Outcome(c.wheel, status, str(result.path)))
        else:
            outcomes.append(_publish_remote(c, target, environ, log))
        log(f"{outcomes[-1].status}: {c.wheel.name} -> {outcomes[-1].where}")
    return outcomes


def _publish_remote(
    c: Candidate, target: Target, env: Mapping[str, str], log: Callable[[str], None]
) -> Outcome:
    assert target.simple_url is not None
    project = canonicalize_name(parse_wheel_filename(c.wheel.name)[0])
    present = remote_files(target.simple_url, project, env)
    where = f"{strip_userinfo(target.simple_url).rstrip('/')}/{project}/"
    if c.wheel.name in present:
        remote = present[c.wheel.name] or _fetch_sha256(target.simple_url, project, c.wheel.name, env)
        if remote == c.sha256:
            return Outcome(c.wheel, "already published", where)
        raise PublishRefused(
            f"{c.wheel.name}: {where} already has a file of this name with other bytes "
            f"(sha256 {remote}, this wheel {c.sha256}); a released file is never replaced"
        )
    twine_upload(c.wheel, target.location, env, log)
    return Outcome(c.wheel, "published", where)


def outcomes_json(outcomes: list[Outcome], target: Target) -> str:
    data = {
        "target": {"kind": target.kind, "location": target.location},
        "wheels": [{"wheel": str(o.wheel), "status": o.status, "where": o.where} for o in outcomes],
    }
    return json.dumps(data, indent=2, sort_keys=True)
