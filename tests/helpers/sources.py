"""Source archives and the places they are fetched from, for the source-stage tests: sdists built
here, pip isolated from this machine's configuration, and local HTTP(S) servers that record what
they were asked."""

from __future__ import annotations

import datetime
import hashlib
import io
import ipaddress
import os
import ssl
import tarfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def targz(files: Mapping[str, bytes | str], mtime: int = 1_600_000_000) -> bytes:
    """A tar.gz of ``files`` (name -> content), in the order given."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = mtime
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def sdist(name: str, version: str, files: Mapping[str, str]) -> tuple[str, bytes]:
    """``(filename, bytes)`` of an sdist ``name-version.tar.gz`` whose top folder holds ``files``."""
    stem = f"{name}-{version}"
    return f"{stem}.tar.gz", targz({f"{stem}/{k}": v for k, v in files.items()})


def isolate_pip(monkeypatch: pytest.MonkeyPatch, cache: Path, **settings: str) -> None:
    """pip's configuration is only ``settings`` (``PIP_<NAME>`` variables): no config file, none of
    this machine's ``PIP_*``; the source cache in ``cache``."""
    for name in list(os.environ):
        if name.startswith("PIP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for key, value in settings.items():
        monkeypatch.setenv(f"PIP_{key.upper()}", value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("HOME", str(cache / "home"))  # no ~/.netrc of this machine


@dataclass
class Served:
    """What a local server serves (path -> (bytes, content type)) and the requests it got."""

    routes: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    auth: str | None = None  # a required ``Authorization`` header value
    length: bool = True  # send Content-Length
    url: str = ""

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]


def _handler(served: Served) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def do_GET(self) -> None:
            served.requests.append((self.path, dict(self.headers.items())))
            if served.auth is not None and self.headers.get("Authorization") != served.auth:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="index"')
                self.end_headers()
                return
            route = served.routes.get(self.path)
            if route is None:
                self.send_error(404)
                return
            body, ctype = route
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            if served.length:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


@contextmanager
def serve(served: Served, tls: tuple[Path, Path] | None = None) -> Iterator[Served]:
    """Serve ``served`` on 127.0.0.1 (HTTPS with ``tls`` = (cert, key)); ``served.url`` is its root."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(served))
    scheme = "http"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        scheme = "https"
    served.url = f"{scheme}://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by itself, and its key (PEM files in ``folder``)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def simple_index(root: Path, project: str, files: Mapping[str, bytes], hashes: bool = True) -> Path:
    """A PEP 503 index in ``root`` (``simple/<project>/index.html`` linking ``../../files/<name>``,
    ``#sha256=`` fragments when ``hashes``); returns the ``simple`` folder."""
    (root / "files").mkdir(parents=True, exist_ok=True)
    page = root / "simple" / project
    page.mkdir(parents=True, exist_ok=True)
    links = []
    for name, data in files.items():
        (root / "files" / name).write_bytes(data)
        fragment = f"#sha256={sha256(data)}" if hashes else ""
        links.append(f'<a href="../../files/{name}{fragment}">{name}</a>')
    (page / "index.html").write_text(
        "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n"
    )
    return root / "simple"
