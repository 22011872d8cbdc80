"""``buildkit publish`` to a REAL index server: pypiserver on 127.0.0.1 with htpasswd auth and a token.

Uploads go through twine; the same bytes come back with ``pip download``; a second publish is a no-op;
other bytes under the same name are refused; the token appears in no output and no log.
pypiserver and passlib come from the dev extras; under CI=true their absence is a failure.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.wheels_for_publish import make_wheel

USER = "__token__"


@dataclass
class Server:
    url: str
    token: str
    log_file: Path
    output: Path
    packages: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    for module in ("pypiserver", "passlib"):
        if importlib.util.find_spec(module) is None:
            reason = f"{module} is not installed (pip install pypiserver passlib)"
            if os.environ.get("CI") == "true":
                pytest.fail(f"CI=true but {reason}", pytrace=False)
            pytest.skip(reason)
    from passlib.apache import HtpasswdFile

    token = "pypi-" + secrets.token_urlsafe(24)
    htpasswd = HtpasswdFile(str(tmp_path / "htpasswd"), new=True)
    htpasswd.set_password(USER, token)
    htpasswd.save()
    packages = tmp_path / "packages"
    packages.mkdir()
    port = _free_port()
    log_file = tmp_path / "pypiserver.log"
    output = tmp_path / "pypiserver.out"
    with output.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "pypiserver", "run", "-i", "127.0.0.1", "-p", str(port),
                "-P", str(tmp_path / "htpasswd"), "-a", "update", "--hash-algo", "sha256",
                "--log-file", str(log_file), "-v", str(packages),
            ],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(url + "simple/", timeout=2):
                    break
            except (urllib.error.URLError, OSError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"pypiserver did not start:\n{output.read_text()}")
                time.sleep(0.2)
        yield Server(url, token, log_file, output, packages)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def publish(
    server: Server, dist: Path, log: Path, token: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TWINE_USERNAME": USER, "TWINE_PASSWORD": token or server.token}
    env.pop("TWINE_REPOSITORY_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "buildkit", "publish", str(dist), "--to", server.url, "--log", str(log)],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip


def test_publish_to_pypiserver_roundtrip_idempotent_and_secret(server: Server, tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    wheel = make_wheel(dist / "cp313-rocm5.7", "demo_rocm-1.0+rocm5.7-py3-none-any.whl")
    log = tmp_path / "publish.log"
    outputs: list[str] = []

    first = publish(server, dist, log)
    outputs += [first.stdout, first.stderr]
    assert first.returncode == 0, first.stderr
    assert f"published         {wheel.name}" in first.stdout
    assert (server.packages / wheel.name).read_bytes() == wheel.read_bytes()

    # pip, through the server's simple index, gets the very same bytes
    down = tmp_path / "down"
    pip = subprocess.run(
        [
            sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
            "--index-url", server.url + "simple/", "--dest", str(down), "demo-rocm==1.0+rocm5.7",
        ],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stdout + pip.stderr
    assert (down / wheel.name).read_bytes() == wheel.read_bytes()

    # the same file again: a no-op, reported
    again = publish(server, dist, log)
    outputs += [again.stdout, again.stderr]
    assert again.returncode == 0, again.stderr
    assert f"already published {wheel.name}" in again.stdout

    # the same name with other bytes: refused, the served file unchanged
    other = tmp_path / "other"
    make_wheel(other, wheel.name, payload=b"VALUE = 2\n")
    refused = publish(server, other, log)
    outputs += [refused.stdout, refused.stderr]
    assert refused.returncode == 10
    assert "already has a file of this name with other bytes" in refused.stderr
    assert (server.packages / wheel.name).read_bytes() == wheel.read_bytes()

    # a wrong token: the server refuses the upload, twine's error is shown, neither token is
    wrong_token = "pypi-" + secrets.token_urlsafe(24)
    new = tmp_path / "new"
    make_wheel(new, "demo_rocm-1.1-py3-none-any.whl")
    denied = publish(server, new, log, token=wrong_token)
    outputs += [denied.stdout, denied.stderr]
    assert denied.returncode == 10
    assert "twine upload" in denied.stderr and "failed" in denied.stderr
    assert not (server.packages / "demo_rocm-1.1-py3-none-any.whl").exists()

    logs = [log.read_text(), server.log_file.read_text(), server.output.read_text()]
    assert "twine upload" in logs[0]
    for text in outputs + logs:
        assert server.token not in text
        assert wrong_token not in text


def test_refused_wheels_never_reach_the_server(server: Server, tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    make_wheel(dist / "a", "fine-1.0-py3-none-any.whl")
    make_wheel(dist / "b", "tampered-1.0-py3-none-any.whl", manifest_sha256="0" * 64)
    result = publish(server, dist, tmp_path / "publish.log")
    assert result.returncode == 10
    assert "tampered-1.0-py3-none-any.whl: sha256 mismatch" in result.stderr
    assert list(server.packages.iterdir()) == []
