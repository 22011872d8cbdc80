"""The one index client (buildkit/pyindex.py): PEP 691 and PEP 503 pages read the same, downloads
hashed into a temporary file and renamed into place, credentials kept to their origin (redirects
included), one error for an index that cannot be reached; and no other module of buildkit/ parses an
index page or talks HTTP to an index.

Real servers on 127.0.0.1 (http.server in a thread of this process) answer with chosen pages,
statuses and redirects; a closed loopback port refuses connections.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from buildkit import pyindex
from buildkit.errors import IndexUnavailable

ROOT = Path(__file__).resolve().parents[2]
WHEEL = b"PK\x05\x06" + b"\0" * 18  # the bytes of a file the index lists (not read as a wheel here)
DIGEST = hashlib.sha256(WHEEL).hexdigest()


# --------------------------------------------------------------------------- one module parses pages
#: module names whose import parses HTML or talks HTTP
HTML_PARSERS = ("html.parser", "lxml", "bs4", "html5lib")
HTTP_CALLS = {"urlopen", "build_opener", "Request", "Session", "get", "post", "request", "head"}


def index_handling(source: str) -> list[str]:
    """What in ``source`` parses an index page or reads one over HTTP: an HTML parser imported, the
    PEP 691 content type, a URL fragment split off (``#sha256=``), an HTTP request made with urllib
    or requests."""
    found = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            names += (
                [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) else []
            )
            found += [
                f"{line}: imports {n}" for n in names if n.startswith(HTML_PARSERS) or "HTMLParser" in n
            ]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "vnd.pypi.simple" in node.value:
                found.append(f"{line}: the PEP 691 content type")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr, owner = node.func.attr, node.func.value
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if attr in ("partition", "split", "rpartition") and "#" in args and _names_a_url(owner):
                found.append(f"{line}: a URL fragment split off")
            elif attr in ("startswith", "removeprefix") and any(
                isinstance(a, str) and "sha256=" in a for a in args
            ):
                found.append(f"{line}: a hash fragment read")
            elif attr == "urldefrag":
                found.append(f"{line}: a URL fragment split off")
            elif attr in HTTP_CALLS and _names_http_client(owner):
                found.append(f"{line}: an HTTP request ({ast.unparse(node.func)})")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("urlopen", "urldefrag")
        ):
            found.append(f"{line}: {node.func.id}(...)")
    return found


def _names_a_url(owner: ast.expr) -> bool:
    """Whether an expression is a URL by its name (``url``, ``href``, ``link``, ``urljoin(...)``)."""
    return any(word in ast.unparse(owner).lower() for word in ("url", "href", "link"))


def _names_http_client(owner: ast.expr) -> bool:
    text = ast.unparse(owner)
    return text in ("requests", "urllib.request", "request") or text.startswith(
        ("requests.", "urllib.request")
    )


def test_the_scanner_finds_what_it_must() -> None:
    bad = [
        "from html.parser import HTMLParser",
        "import lxml.html",
        "ACCEPT = 'application/vnd.pypi.simple.v1+json'",
        "url, _, fragment = href.partition('#')",
        "link, _, fragment = urllib.parse.urljoin(final, href).partition('#')",
        "ok = fragment.startswith('sha256=')",
        "import urllib.request\nurllib.request.urlopen(u)",
        "import requests\nrequests.get(u)",
        "import requests\nrequests.Session()",
        "from urllib.request import urlopen\nurlopen(u)",
    ]
    for source in bad:
        assert index_handling(source), source
    fine = "import json\nimport requests\nx = requests.exceptions.RequestException\nname.split('-')\n"
    fine += "line = raw.split('#', 1)[0]\n"  # a comment stripped, not a URL's fragment
    fine += "f'<a href=\"{n}#sha256={d}\">'\n"  # writing a page (publish/index.py) is not reading one
    assert index_handling(fine) == []


def test_only_pyindex_parses_index_pages_or_talks_http_to_them() -> None:
    assert index_handling((ROOT / "buildkit" / "pyindex.py").read_text("utf-8"))  # the scan sees it there
    found = {
        str(path.relative_to(ROOT)): hits
        for path in sorted((ROOT / "buildkit").rglob("*.py"))
        if path.name != "pyindex.py" or path.parent.name != "buildkit"
        if (hits := index_handling(path.read_text("utf-8")))
    }
    assert found == {}


# --------------------------------------------------------------------------- pages
def test_a_pep_503_page() -> None:
    page = (
        b'<html><head><base href="https://files.example/base/"></head><body>'
        b'<a href="../pkgs/demo-1.0-py3-none-any.whl#SHA256=ABCDEF">demo</a>'
        b'<a href="demo-0.9.tar.gz#sha512=0011" data-yanked="">old</a>'
        b'<a href="demo%2B2.0.tar.gz">quoted</a><a>no href</a></body></html>'
    )
    links = pyindex.parse_page(page, "text/html", "https://index.example/simple/demo/")
    assert links == [
        pyindex.Link(
            "demo-1.0-py3-none-any.whl",
            "https://files.example/pkgs/demo-1.0-py3-none-any.whl",
            {"sha256": "abcdef"},
        ),
        pyindex.Link(
            "demo-0.9.tar.gz", "https://files.example/base/demo-0.9.tar.gz", {"sha512": "0011"}, True
        ),
        pyindex.Link("demo+2.0.tar.gz", "https://files.example/base/demo%2B2.0.tar.gz", {}),
    ]
    assert links[0].sha256 == "abcdef" and links[1].sha256 is None


def test_a_pep_691_page() -> None:
    doc = {
        "meta": {"api-version": "1.1"},
        "name": "demo",
        "files": [
            {"filename": "demo-1.0.tar.gz", "url": "../../f/demo-1.0.tar.gz", "hashes": {"sha256": "AB"}},
            {"filename": "demo-0.9.tar.gz", "url": "https://f.example/x", "hashes": {}, "yanked": "bad"},
            {"filename": 3, "url": "ignored"},
        ],
    }
    links = pyindex.parse_page(
        json.dumps(doc).encode(),
        "application/vnd.pypi.simple.v1+json; charset=utf-8",
        "https://i.example/simple/demo/",
    )
    assert links == [
        pyindex.Link("demo-1.0.tar.gz", "https://i.example/f/demo-1.0.tar.gz", {"sha256": "ab"}),
        pyindex.Link("demo-0.9.tar.gz", "https://f.example/x", {}, True),
    ]
    assert pyindex.parse_page(b"not json", pyindex.PEP691_JSON, "https://i.example/") == []


def test_a_file_folder_is_its_index_html_or_its_files(tmp_path: Path) -> None:
    client = pyindex.IndexClient()
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "demo-1.0.tar.gz").write_bytes(b"x")
    page = client.page((tmp_path / "bare").as_uri())
    assert [link.filename for link in page.links] == ["demo-1.0.tar.gz"]
    assert page.links[0].url == (tmp_path / "bare" / "demo-1.0.tar.gz").as_uri()
    (tmp_path / "bare" / "index.html").write_text('<a href="other-2.0.tar.gz#sha256=00">o</a>')
    assert [link.filename for link in client.page((tmp_path / "bare").as_uri()).links] == ["other-2.0.tar.gz"]
    with pytest.raises(pyindex.NotFound):
        client.page((tmp_path / "missing").as_uri())


# --------------------------------------------------------------------------- a local index server
@dataclass
class Server:
    """GET answers: ``pages`` (path -> (status, headers, body)); anything else 404. Records each request."""

    pages: dict[str, tuple[int, dict[str, str], bytes]] = field(default_factory=dict)
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    """Two servers: two origins on 127.0.0.1."""
    made = []
    for _ in range(2):
        rec = Server()

        class Handler(BaseHTTPRequestHandler):
            server_rec = rec

            def do_GET(self) -> None:
                self.server_rec.seen.append((self.path, dict(self.headers.items())))
                status, headers, body = self.server_rec.pages.get(self.path, (404, {}, b""))
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        rec.url = f"http://127.0.0.1:{httpd.server_address[1]}"
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        made.append((rec, httpd))
    try:
        yield made[0][0], made[1][0]
    finally:
        for _, httpd in made:
            httpd.shutdown()
            httpd.server_close()


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_json_is_asked_for_and_read(servers: tuple[Server, Server]) -> None:
    index, _ = servers
    doc = {
        "meta": {"api-version": "1.0"},
        "files": [{"filename": "a-1.tar.gz", "url": "/f/a-1.tar.gz", "hashes": {}}],
    }
    index.pages["/simple/a/"] = (200, {"Content-Type": pyindex.PEP691_JSON}, json.dumps(doc).encode())
    page = pyindex.IndexClient().page(pyindex.simple_page_url(index.url + "/simple", "A"))
    assert [link.url for link in page.links] == [index.url + "/f/a-1.tar.gz"]
    ((_, headers),) = index.seen
    assert headers["Accept"].startswith("application/vnd.pypi.simple.v1+json")


def test_credentials_stay_on_their_origin_across_redirects(
    servers: tuple[Server, Server], tmp_path: Path
) -> None:
    index, files = servers
    index.pages["/simple/demo/"] = (302, {"Location": "/simple/demo/v2/"}, b"")  # same origin: kept
    index.pages["/simple/demo/v2/"] = (200, {"Content-Type": "text/html"}, b'<a href="x-1.tar.gz">x</a>')
    index.pages["/f/x-1.tar.gz"] = (302, {"Location": files.url + "/x-1.tar.gz"}, b"")  # elsewhere: dropped
    files.pages["/x-1.tar.gz"] = (200, {}, WHEEL)
    client = pyindex.IndexClient()
    netloc = index.url.removeprefix("http://")
    plain = client.strip(f"http://ci:s3cret@{netloc}/simple")
    assert plain == index.url + "/simple" and "s3cret" not in repr(client)
    client.page(plain + "/demo/")
    client.download(index.url + "/f/x-1.tar.gz", tmp_path / "x-1.tar.gz", hashes={"sha256": DIGEST})
    token = "Basic " + base64.b64encode(b"ci:s3cret").decode()
    assert [(p, h.get("Authorization")) for p, h in index.seen] == [
        ("/simple/demo/", token),
        ("/simple/demo/v2/", token),
        ("/f/x-1.tar.gz", token),
    ]
    assert [(p, h.get("Authorization")) for p, h in files.seen] == [("/x-1.tar.gz", None)]
    assert files.seen[0][1]["Accept-Encoding"] == "identity"  # the bytes as listed, hashed as such


def test_credentials_given_for_401_are_sent_only_when_asked(servers: tuple[Server, Server]) -> None:
    index, other = servers
    index.pages["/simple/demo/"] = (401, {"WWW-Authenticate": 'Basic realm="x"'}, b"")
    creds = pyindex.Credentials.basic(index.url, "u", "p")
    assert creds is not None and not creds.preemptive
    client = pyindex.IndexClient(credentials=[creds])
    with pytest.raises(pyindex.IndexRefused) as info:  # the server refuses them too
        client.page(index.url + "/simple/demo/")
    assert info.value.status == 401
    assert [h.get("Authorization") for _, h in index.seen] == [None, creds.header]
    other.pages["/simple/demo/"] = (401, {}, b"")
    with pytest.raises(pyindex.IndexRefused):
        client.page(other.url + "/simple/demo/")
    assert [h.get("Authorization") for _, h in other.seen] == [None]  # another origin: never


# --------------------------------------------------------------------------- downloads
def test_a_download_is_renamed_into_place_only_when_its_hash_matches(
    servers: tuple[Server, Server], tmp_path: Path
) -> None:
    index, _ = servers
    index.pages["/f/x.whl"] = (200, {}, WHEEL)
    client = pyindex.IndexClient()
    dest = tmp_path / "x.whl"
    dest.write_bytes(b"the previous bytes")
    with pytest.raises(pyindex.DigestMismatch) as info:
        client.download(index.url + "/f/x.whl", dest, hashes={"sha256": "00" * 32})
    assert (info.value.expected, info.value.actual) == ("00" * 32, DIGEST)
    assert dest.read_bytes() == b"the previous bytes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.whl"]  # no temporary file left
    assert client.download(index.url + "/f/x.whl", dest, hashes={"SHA256": DIGEST.upper()}) == DIGEST
    assert dest.read_bytes() == WHEEL
    with pytest.raises(pyindex.TooLarge) as too_large:
        client.download(index.url + "/f/x.whl", tmp_path / "y.whl", max_bytes=len(WHEEL) - 1)
    assert too_large.value.size == len(WHEEL)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.whl"]
    source = tmp_path / "local.whl"
    source.write_bytes(WHEEL)
    assert client.digest(source.as_uri()) == DIGEST


# --------------------------------------------------------------------------- failures
@pytest.mark.parametrize(
    ("status", "unavailable"), [(503, True), (500, True), (429, True), (408, True), (403, False)]
)
def test_a_status_is_transient_or_a_refusal(
    servers: tuple[Server, Server], status: int, unavailable: bool
) -> None:
    index, _ = servers
    index.pages["/simple/demo/"] = (status, {}, b"")
    expected = IndexUnavailable if unavailable else pyindex.IndexRefused
    with pytest.raises(expected, match=rf"cannot read {index.url}/simple/demo/: HTTP {status}") as info:
        pyindex.IndexClient().page(index.url + "/simple/demo/")
    if unavailable:
        assert info.value.exit_code == 13  # type: ignore[union-attr]


def test_an_unreachable_index_is_index_unavailable() -> None:
    url = closed_port_url() + "/simple/demo/"
    with pytest.raises(IndexUnavailable, match="Connection refused") as info:
        pyindex.IndexClient(timeout=5).page(url)
    assert (info.value.exit_code, info.value.url) == (13, url)
    with pytest.raises(IndexUnavailable, match=r"cannot download http://127\.0\.0\.1:\d+/f\.whl"):
        pyindex.IndexClient(timeout=5).digest(url.replace("/simple/demo/", "/f.whl"))


def test_credentials_never_appear_in_errors() -> None:
    url = closed_port_url().replace("http://", "http://ci:s3cret@") + "/simple/"
    with pytest.raises(IndexUnavailable) as info:
        pyindex.IndexClient(timeout=5).page(url)
    assert "s3cret" not in str(info.value) and "ci" not in str(info.value).split("//")[1].split("/")[0]
