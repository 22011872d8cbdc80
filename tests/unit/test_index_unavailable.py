"""An index that cannot be reached is the same error, exit 13 (IndexUnavailable), from every command
that reads one: ``diff --against-index``, a recipe's source fetched (``plan``), the no-regression
baseline (``build``) and ``publish`` (before, 2, 9, 9 and 13).

Real local servers on 127.0.0.1 answer HTTP 503; a closed loopback port refuses connections. The
build itself cannot run here (no engine for it in a unit test): its job runs with the stand-ins of
tests/unit/test_build_job.py, the regression check against the real unreachable index.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from buildkit.building.job import JobResult
from buildkit.cli import main
from buildkit.compare.baseline import compare_with_last_release
from buildkit.errors import IndexUnavailable
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe, parse_recipe
from tests.helpers.sources import isolate_pip
from tests.helpers.wheel_zip import write_wheel
from tests.helpers.wheels_for_publish import make_wheel, trust_test_key
from tests.unit.test_build_job import RECIPE as BUILD_RECIPE
from tests.unit.test_build_job import make_harness

UNAVAILABLE = 13
NEW = "demo-1.1-py3-none-any.whl"


def closed_port() -> str:
    """An http root on a loopback port nothing listens on (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def failing() -> Iterator[str]:
    """An http root on 127.0.0.1 answering every GET with HTTP 503."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(params=["refused", "503"])
def root(request: pytest.FixtureRequest) -> str:
    """The index's root: a port refusing connections, or a server answering 503."""
    if request.param == "refused":
        return closed_port()
    return str(request.getfixturevalue("failing"))


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def _diff(
    tmp_path: Path, root: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str]:
    wheel = write_wheel(tmp_path / NEW, {"demo/__init__.py": b""})
    return cli(capsys, "diff", "--against-index", root + "/simple/", str(wheel))


def _plan(
    tmp_path: Path, root: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str]:
    isolate_pip(monkeypatch, tmp_path / "cache")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        f"name: demo\nsource:\n  url: {root}/demo-1.0.tar.gz\n  sha256: {'f' * 64}\n"
        'version: {base: "1.0"}\npython: ["3.12"]\nrocm: ["6.4"]\narchs: {list: [gfx90a]}\n'
        "manylinux: {policy: manylinux_2_28}\nimage: manylinux_2_28-rocm\n"
    )
    return cli(capsys, "plan", str(recipe))


def _publish(
    tmp_path: Path, root: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str]:
    trust_test_key(monkeypatch, tmp_path / "key")
    monkeypatch.setenv("TWINE_USERNAME", "__token__")
    monkeypatch.setenv("TWINE_PASSWORD", "pypi-index-unavailable-test")
    make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    return cli(capsys, "publish", str(tmp_path / "dist"), "--to", root + "/")


def _build(
    tmp_path: Path, root: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str]:
    """``buildkit build``, its job run with the stand-ins: the gate passes, the baseline's index fails."""
    h = make_harness(tmp_path, monkeypatch)
    path = tmp_path / "recipe.yaml"
    path.write_text(
        BUILD_RECIPE.format(limit="20MiB") + f"gate: {{no_regression_against: '{root}/simple/'}}\n"
    )
    recipe = load_recipe(path)
    results: list[JobResult] = []

    def build_plan(*_args: Any, **_kwargs: Any) -> list[JobResult]:
        results.append(h.build(recipe, expand(recipe, env={}).jobs[0]))
        return results

    monkeypatch.setattr("buildkit.service.build.build_plan", build_plan)  # the stage call build makes
    monkeypatch.setattr("buildkit.service.plan.image_ceilings", None)  # the reader build injects
    code, err = cli(
        capsys, "build", str(path), "--out", str(tmp_path / "out"), "--log-dir", str(tmp_path / "logs")
    )
    (result,) = results
    assert (result.status, result.exit_code) == ("build-failed", UNAVAILABLE)
    assert "cannot read" in result.message and f"{root}/simple/demo" in result.message
    return code, err


COMMANDS: dict[str, Callable[..., tuple[int, str]]] = {
    "diff --against-index": _diff,
    "plan (a url source)": _plan,
    "build (the regression baseline)": _build,
    "publish": _publish,
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_exits_13_for_an_index_it_cannot_reach(
    command: str,
    root: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, err = COMMANDS[command](tmp_path, root, capsys, monkeypatch)
    assert code == UNAVAILABLE, err
    assert "127.0.0.1" in err and "Traceback" not in err
    assert ("Connection refused" in err) or ("HTTP 503" in err), err


def test_the_baseline_raises_index_unavailable(tmp_path: Path, root: str) -> None:
    """The library call ``build`` makes after the gate."""
    recipe = parse_recipe(
        "name: demo\nsource: {path: src}\nversion: {base: '1.1'}\npython: ['3.11']\nrocm: ['6.4']\n"
        "archs: {list: [gfx90a]}\nmanylinux: {policy: manylinux_2_28}\nimage: manylinux_2_28-rocm\n"
        f"gate: {{no_regression_against: '{root}/simple/'}}\n",
        path=tmp_path / "recipe.yaml",
    )
    (job,) = expand(recipe, env={}).jobs
    wheel = write_wheel(tmp_path / NEW, {"demo/__init__.py": b""})
    with pytest.raises(IndexUnavailable, match=rf"cannot read {root}/simple/demo/: ") as info:
        compare_with_last_release(job, wheel, workdir=tmp_path / "work")
    assert info.value.exit_code == UNAVAILABLE
