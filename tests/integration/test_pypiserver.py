"""``buildkit publish`` to a REAL index server: pypiserver on 127.0.0.1 with htpasswd auth and a token.

Uploads go through twine; the same bytes come back with ``pip download``; a second publish is a no-op;
other bytes under the same name are refused; the token appears in no output and no log.
pypiserver and passlib come from the dev extras; under CI=true their absence is a failure.
"""

from __future__ import annotations

import importlib.util
import json
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

from buildkit.errors import PublishRefused
from buildkit.manifest import manifest_path, sha256_file
from buildkit.publish import run as publishing
from buildkit.publish.target import parse_target
from tests.helpers.shared_library import have_gcc
from tests.helpers.wheels_for_publish import (
    DEMO_RECIPE,
    GLIBCXX_3_4_25_SOURCE,
    forge_three_key_manifest,
    job_wheel,
    make_wheel,
    trust_test_key,
)


@pytest.fixture(autouse=True)
def publisher_key(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The publisher names the key the test builds sign with (``BUILDKIT_PUBLISH_KEY``): ``publish``
    runs the gate again with the configuration those signed manifests record."""
    return trust_test_key(monkeypatch, tmp_path_factory.mktemp("publisher"))


USER = "__token__"


@dataclass
class Server:
    url: str
    token: str
    log_file: Path
    output: Path
    packages: Path
    proc: subprocess.Popen[bytes]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Server]:
    """pypiserver; ``request.param`` (indirect parametrize): the actions that need a login."""
    authenticated = getattr(request, "param", "update")
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
                "-P", str(tmp_path / "htpasswd"), "-a", authenticated, "--hash-algo", "sha256",
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
            except urllib.error.HTTPError as exc:  # up, but asks for a login
                if exc.code == 401:
                    break
                raise
            except (urllib.error.URLError, OSError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"pypiserver did not start:\n{output.read_text()}")
                time.sleep(0.2)
        yield Server(url, token, log_file, output, packages, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def publish(
    server: Server, dist: Path, log: Path, token: str | None = None, *extra: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TWINE_USERNAME": USER, "TWINE_PASSWORD": token or server.token}
    env.pop("TWINE_REPOSITORY_URL", None)
    command = [sys.executable, "-m", "buildkit", "publish", str(dist), "--to", server.url, "--log", str(log)]
    return subprocess.run([*command, *extra], capture_output=True, text=True, check=False, env=env)


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


def _env(server: Server) -> dict[str, str]:
    env = {**os.environ, "TWINE_USERNAME": USER, "TWINE_PASSWORD": server.token}
    env.pop("TWINE_REPOSITORY_URL", None)
    return env


def test_one_conflict_uploads_nothing(server: Server, tmp_path: Path) -> None:
    """The server's state of EVERY wheel is checked before the first upload."""
    released = make_wheel(tmp_path / "released", "demo_rocm-1.0-py3-none-any.whl")
    assert publishing.publish(tmp_path / "released", parse_target(server.url), env=_env(server))
    dist = tmp_path / "dist"
    make_wheel(dist / "a", "alpha-1.0-py3-none-any.whl")  # new, sorted first
    make_wheel(dist / "b", released.name, payload=b"VALUE = 2\n")  # same name, other bytes
    with pytest.raises(PublishRefused, match=r"1 of 2 wheel\(s\); nothing was published"):
        publishing.publish(dist, parse_target(server.url), env=_env(server))
    assert sorted(p.name for p in server.packages.iterdir()) == [released.name]


def test_the_bytes_uploaded_are_the_bytes_checked(server: Server, tmp_path: Path) -> None:
    """The wheel is rewritten while twine runs: twine uploads the private copy made while hashing."""
    wheel = make_wheel(tmp_path / "dist", "demo_rocm-1.0-py3-none-any.whl")
    checked = wheel.read_bytes()

    def tamper(line: str) -> None:
        if line.startswith("$ twine"):  # logged just before twine starts
            wheel.write_bytes(checked + b"tampered")

    outcomes = publishing.publish(tmp_path / "dist", parse_target(server.url), env=_env(server), log=tamper)
    assert [o.status for o in outcomes] == ["published"]
    assert (server.packages / wheel.name).read_bytes() == checked
    assert sha256_file(server.packages / wheel.name) != sha256_file(wheel)


@pytest.mark.parametrize("server", ["list,download,update"], indirect=True)
def test_a_server_that_needs_a_login_to_read(server: Server, tmp_path: Path) -> None:
    """The simple page answers 401 without credentials: they are sent (same origin, loopback)."""
    wheel = make_wheel(tmp_path / "dist", "demo_rocm-1.0-py3-none-any.whl")
    target = parse_target(server.url)
    assert [o.status for o in publishing.publish(tmp_path / "dist", target, env=_env(server))] == [
        "published"
    ]
    assert (server.packages / wheel.name).read_bytes() == wheel.read_bytes()
    again = publishing.publish(tmp_path / "dist", target, env=_env(server))
    assert [o.status for o in again] == ["already published"]
    # without credentials the page cannot be read: refused before any upload, and said so
    env = {k: v for k, v in _env(server).items() if not k.startswith("TWINE_")}
    with pytest.raises(PublishRefused, match=r"asks for credentials \(HTTP 401\)"):
        publishing.publish(tmp_path / "dist", target, env=env)


def test_dry_run_reads_the_server_and_uploads_nothing(server: Server, tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    wheel = make_wheel(dist, "demo_rocm-1.0+rocm5.7-py3-none-any.whl")
    log = tmp_path / "publish.log"
    dry = publish(server, dist, log, None, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would publish     {wheel.name}  {server.url}simple/demo-rocm/" in dry.stdout
    assert list(server.packages.iterdir()) == []
    assert "twine" not in log.read_text()

    assert publish(server, dist, log).returncode == 0
    again = publish(server, dist, log, None, "--dry-run")
    assert again.returncode == 0, again.stderr
    assert f"already published {wheel.name}" in again.stdout

    other = tmp_path / "other"
    make_wheel(other, wheel.name, payload=b"VALUE = 2\n")
    refused = publish(server, other, log, None, "--dry-run")
    assert refused.returncode == 10 and "other bytes" in refused.stderr


def test_a_stopped_server_is_unavailable_not_refused(server: Server, tmp_path: Path) -> None:
    """Connection refused: exit 13 (retry), told apart from a refusal (10), dry run or not."""
    dist = tmp_path / "dist"
    make_wheel(dist, "demo_rocm-1.0-py3-none-any.whl")
    server.proc.terminate()
    server.proc.wait(timeout=10)
    down = publish(server, dist, tmp_path / "publish.log")
    assert down.returncode == 13, down.stdout + down.stderr
    assert "Connection refused" in down.stderr and "retry" in down.stderr
    assert "nothing was published" in down.stderr and "Traceback" not in down.stderr
    assert publish(server, dist, tmp_path / "publish.log", None, "--dry-run").returncode == 13


def test_forged_and_failing_wheels_never_reach_the_server(server: Server, tmp_path: Path) -> None:
    """The issue's forged three-key manifest beside a wheel the gate fails (GLIBCXX_3.4.25 above
    manylinux_2_28), a forged configuration, and a signed manifest the gate, run again, refuses:
    refused before any upload, with and without --dry-run; the server holds nothing."""
    if not have_gcc():
        pytest.skip("gcc/g++ build the wheels' libraries")
    recipe = tmp_path / "demo.yaml"
    recipe.write_text(DEMO_RECIPE)
    job = "cp312-rocm6.4"
    forged, configured, failing = (tmp_path / name for name in ("forged", "configured", "failing"))
    wheel = job_wheel(forged, recipe, job, source=GLIBCXX_3_4_25_SOURCE)
    forge_three_key_manifest(wheel)
    loose = job_wheel(configured, recipe, job, source=GLIBCXX_3_4_25_SOURCE)
    data = json.loads(manifest_path(loose).read_text())
    data["gate"]["ceilings"]["GLIBCXX"] = "3.4.30"
    manifest_path(loose).write_text(json.dumps(data))
    job_wheel(failing, recipe, job, source=GLIBCXX_3_4_25_SOURCE)  # signed, claims a pass
    expected = {
        forged: "unsigned: no attestation",
        configured: "forged manifest: its gate configuration is not the one the attestation signs",
        failing: "the gate, run again, fails it: ",
    }
    for dist, reason in expected.items():
        for extra in ((), ("--dry-run",), ("--json",)):
            result = publish(server, dist, tmp_path / "publish.log", None, *extra)
            assert result.returncode == 10, result.stdout + result.stderr
            assert f"{dist / wheel.name}: {reason}" in result.stderr
            if extra == ("--json",):
                [refused] = json.loads(result.stdout)["refused"]
                assert refused["wheel"] == str(dist / wheel.name) and reason in refused["reason"]
            assert "Traceback" not in result.stderr
    assert list(server.packages.iterdir()) == []
    assert "twine upload" not in (tmp_path / "publish.log").read_text()
