"""``publish``: an index that cannot be reached or fails is exit 13 (PublishUnavailable: retry), not 10.

Real local servers on 127.0.0.1 (http.server) answer with chosen statuses; a closed loopback port
refuses connections. Uploads run the real twine against them.
"""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import subprocess
import sys
import threading
import urllib.error
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from buildkit.errors import PublishRefused, PublishUnavailable
from buildkit.manifest import sha256_file
from buildkit.publish.remote import network_failure, remote_files
from buildkit.publish.run import publish
from buildkit.publish.target import parse_target
from tests.helpers.wheels_for_publish import make_wheel, trust_test_key


@pytest.fixture(autouse=True)
def publisher_key(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The publisher names the key the test builds sign with (``BUILDKIT_PUBLISH_KEY``): ``publish``
    runs the gate again with the configuration those signed manifests record."""
    path = trust_test_key(monkeypatch, tmp_path_factory.mktemp("publisher"))
    monkeypatch.setitem(ENV, "BUILDKIT_PUBLISH_KEY", str(path))  # the environment given to publish()
    return path


ENV = {**os.environ, "TWINE_USERNAME": "__token__", "TWINE_PASSWORD": "pypi-unavailable-test-token"}
ENV.pop("TWINE_REPOSITORY_URL", None)


@dataclass
class Index:
    """GET answers per path (404 otherwise, body from ``pages``); POST answers in turn (the last repeats)."""

    url: str = ""
    statuses: dict[str, int] = field(default_factory=dict)
    pages: dict[str, bytes] = field(default_factory=dict)
    posts: list[int] = field(default_factory=lambda: [200])
    seen: list[tuple[str, str]] = field(default_factory=list)

    def uploads(self) -> int:
        return sum(1 for method, _ in self.seen if method == "POST")


def _handler(index: Index) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: bytes = b"") -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            index.seen.append(("GET", self.path))
            body = index.pages.get(self.path)
            self._answer(index.statuses.get(self.path, 200 if body is not None else 404), body or b"")

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status = index.posts[min(index.uploads(), len(index.posts) - 1)]
            index.seen.append(("POST", self.path))
            self._answer(status)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def index() -> Iterator[Index]:
    rec = Index()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(rec))
    rec.url = f"http://127.0.0.1:{httpd.server_address[1]}/"
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield rec
    finally:
        httpd.shutdown()
        httpd.server_close()


def closed_port_url() -> str:
    """An http URL on a loopback port nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


def run_publish(dist: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", "publish", str(dist), *args],
        capture_output=True,
        text=True,
        check=False,
        env=ENV,
    )


def _page(*links: str) -> bytes:
    return ("<html><body>" + "".join(f'<a href="{h}">x</a>' for h in links) + "</body></html>").encode()


@pytest.mark.parametrize("dry_run", [False, True])
def test_connection_refused_exits_13(tmp_path: Path, dry_run: bool) -> None:
    make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    url = closed_port_url()
    result = run_publish(tmp_path / "dist", "--to", url, *(["--dry-run"] if dry_run else []))
    assert result.returncode == 13, result.stdout + result.stderr
    assert f"cannot read {url}simple/demo/" in result.stderr and "Connection refused" in result.stderr
    assert "retry" in result.stderr and "Traceback" not in result.stderr
    if dry_run:
        assert "dry run: 1 wheel(s) passed every check" in result.stderr
    else:
        assert "nothing was published" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(("status", "code"), [(503, 13), (500, 13), (429, 13), (403, 10), (400, 10)])
def test_simple_page_status_decides_transient_or_refused(
    tmp_path: Path, index: Index, status: int, code: int
) -> None:
    make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    index.statuses["/simple/demo/"] = status
    result = run_publish(tmp_path / "dist", "--to", index.url)
    assert result.returncode == code, result.stderr
    assert f"cannot read {index.url}simple/demo/: HTTP {status}" in result.stderr
    assert ("retry" in result.stderr) == (code == 13)
    assert index.uploads() == 0


def test_an_unhashed_file_that_fails_to_download_is_transient(tmp_path: Path, index: Index) -> None:
    wheel = make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    index.pages["/simple/demo/"] = _page(f"/files/{wheel.name}")  # no #sha256=: the file is downloaded
    index.statuses[f"/files/{wheel.name}"] = 502
    with pytest.raises(PublishUnavailable, match=rf"cannot download {index.url}files/{wheel.name}: HTTP 502"):
        publish(tmp_path / "dist", parse_target(index.url), env=ENV)
    assert index.uploads() == 0


def test_upload_answered_503_exits_13(tmp_path: Path, index: Index) -> None:
    wheel = make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    index.posts = [503]
    result = run_publish(tmp_path / "dist", "--to", index.url)
    assert result.returncode == 13, result.stdout + result.stderr
    assert f"{wheel.name}: twine upload to {index.url} failed" in result.stderr
    assert "HTTPError: 503" in result.stderr and "retry" in result.stderr
    assert index.uploads() >= 1 and result.stdout == ""
    assert ENV["TWINE_PASSWORD"] not in result.stdout + result.stderr


def test_upload_answered_403_stays_a_refusal(tmp_path: Path, index: Index) -> None:
    make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    index.posts = [403]
    result = run_publish(tmp_path / "dist", "--to", index.url)
    assert result.returncode == 10, result.stdout + result.stderr
    assert "HTTPError: 403" in result.stderr and "retry" not in result.stderr


def test_upload_connection_refused_exits_13(tmp_path: Path, index: Index) -> None:
    """The simple pages answer (--simple-url), the upload URL refuses connections."""
    make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    upload = closed_port_url()
    result = run_publish(tmp_path / "dist", "--to", upload, "--simple-url", index.url + "simple/")
    assert result.returncode == 13, result.stdout + result.stderr
    assert "requests.exceptions.ConnectionError" in result.stderr and "retry" in result.stderr
    assert index.seen == [("GET", "/simple/demo/")]


def test_a_failure_after_an_upload_names_it_and_a_retry_completes(tmp_path: Path, index: Index) -> None:
    dist = tmp_path / "dist"
    alpha = make_wheel(dist, "alpha-1.0-py3-none-any.whl")
    demo = make_wheel(dist, "demo-1.0-py3-none-any.whl")
    index.posts = [200, 503]
    with pytest.raises(PublishUnavailable) as info:
        publish(dist, parse_target(index.url), env=ENV)
    assert f"{demo.name}: twine upload" in str(info.value)
    assert f"uploaded before the failure: {alpha.name}" in str(info.value)

    # the index now has alpha and answers again: the same command completes the batch
    index.pages["/simple/alpha/"] = _page(f"/files/{alpha.name}#sha256={sha256_file(alpha)}")
    index.posts = [200]
    outcomes = publish(dist, parse_target(index.url), env=ENV)
    assert [(o.wheel.name, o.status) for o in outcomes] == [
        (alpha.name, "already published"),
        (demo.name, "published"),
    ]


def test_an_unresolvable_host_is_transient() -> None:
    """.invalid never resolves (RFC 6761)."""
    with pytest.raises(PublishUnavailable, match=r"cannot read http://buildkit-test\.invalid/simple/demo/"):
        remote_files("http://buildkit-test.invalid/simple/", "demo")


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (
            urllib.error.URLError(socket.gaierror(-3, "Temporary failure in name resolution")),
            PublishUnavailable,
        ),
        (urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")), PublishUnavailable),
        (TimeoutError("timed out"), PublishUnavailable),
        (ConnectionResetError(104, "Connection reset by peer"), PublishUnavailable),
        (http.client.IncompleteRead(b"partial", 10), PublishUnavailable),
        (urllib.error.HTTPError("http://x/", 504, "Gateway Timeout", {}, None), PublishUnavailable),  # type: ignore[arg-type]
        (urllib.error.HTTPError("http://x/", 408, "Request Timeout", {}, None), PublishUnavailable),  # type: ignore[arg-type]
        (urllib.error.HTTPError("http://x/", 401, "Unauthorized", {}, None), PublishRefused),  # type: ignore[arg-type]
        (urllib.error.HTTPError("http://x/", 404, "Not Found", {}, None), PublishRefused),  # type: ignore[arg-type]
        (urllib.error.URLError(ssl.SSLCertVerificationError(1, "certificate verify failed")), PublishRefused),
    ],
)
def test_network_failure_classification(exc: BaseException, kind: type[Exception]) -> None:
    error = network_failure("read", "http://x/simple/demo/", exc)
    assert type(error) is kind
    assert error.exit_code == (13 if kind is PublishUnavailable else 10)
    assert str(error).startswith("cannot read http://x/simple/demo/: ")
