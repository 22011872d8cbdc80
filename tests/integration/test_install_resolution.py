"""``publish --check-install``: real pip and real uv asked which file they resolve, against a real index
server (pypiserver on loopback, as tests/integration/test_pypiserver.py runs it) and a stand-in for
PyPI on loopback (a static PEP 503 index served by ``http.server``) that serves a same-name wheel.

The vLLM #44660 case: the recipe supports CPython 3.11 and 3.12, only the cp312 wheel was published,
and PyPI has ``demo-1.0-py3-none-any.whl`` (the CUDA build, say): a 3.11 user silently gets PyPI's
wheel; the check fails (exit 15) naming it. A complete publish passes for pip in both configurations
and for uv with ``--extra-index-url INDEX``; uv with ``--index-url INDEX --extra-index-url PYPI`` asks
PyPI first (uv ranks an extra index above the index) and gets PyPI's wheel: reported as a failure,
which it is for such a user. uv with ``--extra-index-url INDEX`` and no cp311 wheel there stops with an
error (its first-index strategy): failed too (a supported Python that installs nothing).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from buildkit.manifest import sha256_file
from buildkit.publish import index
from tests.helpers.shared_library import have_gcc
from tests.helpers.wheel_zip import write_wheel
from tests.helpers.wheels_for_publish import DEMO_RECIPE, job_wheel
from tests.integration import test_pypiserver
from tests.integration.test_pypiserver import USER, Server

ROOT = Path(__file__).resolve().parents[2]
server = test_pypiserver.server  # the index server fixture: pypiserver on loopback


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def pypi(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A stand-in for PyPI: a static index on loopback serving ``demo-1.0-py3-none-any.whl``."""
    root = tmp_path / "pypi"
    (tmp_path / "upstream").mkdir()
    cuda = write_wheel(
        tmp_path / "upstream" / "demo-1.0-py3-none-any.whl", {"demo/__init__.py": b"CUDA = 1\n"}
    )
    index.add_wheels(root, [(cuda, sha256_file(cuda))])
    handler = functools.partial(_Quiet, directory=str(root / "simple"))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/", root
    finally:
        httpd.shutdown()
        httpd.server_close()


def _publish(server: Server, recipe: Path, dist: Path, pypi_url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TWINE_USERNAME": USER, "TWINE_PASSWORD": server.token, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "buildkit", "publish", str(dist), "--recipe", str(recipe)]
    command += ["--check-install", "--pypi-url", pypi_url, "--json"]
    return subprocess.run(command, capture_output=True, text=True, check=False, env=env, timeout=600)


def _recipe(tmp_path: Path, server: Server) -> Path:
    recipe = tmp_path / "demo.yaml"
    text = DEMO_RECIPE.replace('python: ["3.12"]', 'python: ["3.11", "3.12"]')
    recipe.write_text(text.replace("  directory: site/index\n", f"  index: {server.url}\n"))
    return recipe


@pytest.fixture(autouse=True)
def tools() -> None:
    if not have_gcc():
        pytest.skip("gcc builds the wheels' libraries")
    if shutil.which("uv") is None:
        reason = "uv is not installed (pip install uv)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {reason}", pytrace=False)
        pytest.skip(reason)


def _by(resolved: list[dict[str, object]]) -> dict[tuple[object, object, object], dict[str, object]]:
    return {(r["python"], r["tool"], r["mode"]): r for r in resolved}


def test_a_python_without_its_wheel_gets_pypis_and_the_check_fails(
    tmp_path: Path,
    server: Server,
    pypi: tuple[str, Path],
) -> None:
    pypi_url, _ = pypi
    recipe = _recipe(tmp_path, server)
    dist = tmp_path / "dist"
    wheel = job_wheel(dist / "cp312-rocm6.4", recipe, "cp312-rocm6.4")  # the cp311 job published nothing
    result = _publish(server, recipe, dist, pypi_url)
    assert result.returncode == 15, result.stdout + result.stderr
    assert (server.packages / wheel.name).is_file()  # it was published; the check comes after
    data = json.loads(result.stdout)
    rows = _by(data["install_check"])
    for tool, mode in (("pip", "index-url"), ("pip", "extra-index-url"), ("uv", "index-url")):
        row = rows[("3.11", tool, mode)]
        assert row["failed"] is True and row["ours"] is False, row
        assert str(row["source"]).startswith(pypi_url), row
    # uv asks the published index first there, finds the project without a cp311 wheel and stops
    # (its first-index strategy): not a silent wrong install, but a supported Python that resolves to
    # nothing, which fails the check too (issue 38: it was reported, not failed)
    loud = rows[("3.11", "uv", "extra-index-url")]
    assert loud["failed"] is True and loud["version"] is None and "No solution found" in str(loud["detail"])
    assert str(rows[("3.11", "pip", "index-url")]["source"]).endswith("/demo-1.0-py3-none-any.whl")
    # CPython 3.12 gets the published wheel from pip either way (the more specific tag of one version)
    for mode in ("index-url", "extra-index-url"):
        row = rows[("3.12", "pip", mode)]
        assert row["ours"] is True and row["failed"] is False, row
        assert str(row["source"]).endswith(wheel.name.replace("+", "%2B"))
    assert "CPython 3.11 manylinux_2_28_x86_64: demo -> " in result.stderr
    assert "a file from another index, not the published for this Python demo" in result.stderr


def test_a_complete_release_resolves_to_the_published_wheels(
    tmp_path: Path,
    server: Server,
    pypi: tuple[str, Path],
) -> None:
    """Both Pythons published, with a version above PyPI's: pip gets them in both configurations, uv
    with --extra-index-url INDEX; uv with --index-url INDEX --extra-index-url PYPI asks PyPI first."""
    pypi_url, _ = pypi
    recipe = _recipe(tmp_path, server)
    text = recipe.read_text().replace('base: "1.0"', 'base: "1.1"')
    recipe.write_text(text)
    dist = tmp_path / "dist"
    for job in ("cp311-rocm6.4", "cp312-rocm6.4"):
        job_wheel(dist / job, recipe, job)
    result = _publish(server, recipe, dist, pypi_url)
    rows = _by(json.loads(result.stdout)["install_check"])
    for python in ("3.11", "3.12"):
        for tool, mode in (("pip", "index-url"), ("pip", "extra-index-url"), ("uv", "extra-index-url")):
            row = rows[(python, tool, mode)]
            assert row["ours"] is True and row["failed"] is False and row["version"] == "1.1", row
        uv_first = rows[(python, "uv", "index-url")]
        assert uv_first["failed"] is True and uv_first["version"] == "1.0", uv_first
        assert str(uv_first["source"]).startswith(pypi_url)
    assert result.returncode == 15  # uv's users of --index-url INDEX --extra-index-url PYPI
