"""Issue 38, case 4: ``publish --check-install`` said OK when nothing was checked. Now a Python-independent
wheel is asked about under every CPython it serves, a wheel pip or uv refuses (or nothing resolving)
fails the check (exit 15), and an unreachable public index makes it inconclusive (exit 18) unless
``--local-only`` asks for the published index alone.

Real pip and real uv against a static index on disk (file://) and the loopback stand-in for PyPI of
tests/integration/test_install_resolution.py; the unreachable index is a closed port on loopback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit.manifest import sha256_file
from buildkit.publish import index, resolution
from tests.helpers.wheel_edit import edit_wheel
from tests.helpers.wheels_for_publish import make_wheel, public_key_file

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CLOSED = "http://127.0.0.1:9/simple/"  # the discard port: nothing listens on loopback


@pytest.fixture(autouse=True)
def tools() -> None:
    if shutil.which("uv") is None:
        reason = "uv is not installed (pip install uv; it is in .[dev])"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {reason}", pytrace=False)
        pytest.skip(reason)


def _publish(dist: Path, idx: Path, key: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "buildkit", "publish", str(dist), "--to", str(idx)]
    command += ["--public-key", str(key), "--check-install", "--json", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, capture_output=True, text=True, check=False, env=env, timeout=900)


def test_a_pure_wheel_is_checked_under_every_python_it_serves(tmp_path: Path) -> None:
    """``install_check: []`` and exit 0 before: now each CPython the installed cibuildwheel builds
    within the wheel's Requires-Python, both resolvers, the published file each time."""
    dist = tmp_path / "dist"
    wheel = make_wheel(dist, "fine-1.0-py3-none-any.whl", requires_python=">=3.14")
    result = _publish(dist, tmp_path / "idx", public_key_file(tmp_path / "k"), "--local-only")
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(result.stdout)
    rows = data["install_check"]
    expected = [p for p in resolution._known_pythons() if tuple(map(int, p.split("."))) >= (3, 14)]
    assert sorted({r["python"] for r in rows}, key=lambda p: int(p.split(".")[1])) == expected
    assert {(r["tool"], r["mode"]) for r in rows} == {("pip", "local"), ("uv", "local")}
    assert all(r["ours"] and not r["failed"] and r["version"] == "1.0" for r in rows), rows
    assert any(str(r["source"]).endswith(wheel.name) for r in rows if r["tool"] == "pip")
    assert data["install_check_inconclusive"] is None


def test_an_unreachable_public_index_is_inconclusive(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    make_wheel(dist, "fine-1.0-py3-none-any.whl", requires_python=">=3.14")
    key = public_key_file(tmp_path / "k")
    result = _publish(dist, tmp_path / "idx", key, "--pypi-url", CLOSED)
    assert result.returncode == 18, result.stdout + result.stderr
    assert f"{CLOSED} cannot be reached" in result.stderr and "--local-only" in result.stderr
    data = json.loads(result.stdout)
    assert "cannot be reached" in data["install_check_inconclusive"]
    assert {r["mode"] for r in data["install_check"]} == {"local"}  # the published index alone was asked
    assert all(not r["failed"] for r in data["install_check"])


def test_a_wheel_pip_refuses_fails_the_check(tmp_path: Path) -> None:
    """A published wheel whose METADATA says another version (the gate refuses it now: here it is put
    on the index directly, as an older buildkit published it): pip refuses it and resolves nothing,
    which fails its rows (it was "reported, not failed"); the run's verdict is exit 15. uv's compile
    takes the version from the file name and resolves it."""
    from buildkit.errors import InstallResolutionFailed
    from buildkit.service.publish import PublishRun

    wheel = make_wheel(
        tmp_path / "dist", "demo-1.0-cp312-cp312-manylinux_2_28_x86_64.whl", with_manifest=False
    )
    edit_wheel(
        wheel,
        put={"demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 9.9\n"},
        rerecord=True,
    )
    root = tmp_path / "idx"
    index.add_wheels(root, [(wheel, sha256_file(wheel))])
    targets = resolution.targets_of([wheel])
    assert [(t.python, t.version) for t in targets] == [("3.12", "1.0")]
    rows = resolution.check_install(targets, (root / "simple").as_uri() + "/", modes=[resolution.LOCAL])
    [pip_row] = [r for r in rows if r.tool == "pip"]
    assert pip_row.failed and pip_row.checked and pip_row.version is None, pip_row
    assert "nothing resolves" in pip_row.detail and "inconsistent version" in pip_row.detail, pip_row.detail
    failure = PublishRun([], None, rows).failure()  # type: ignore[arg-type]
    assert isinstance(failure, InstallResolutionFailed) and failure.exit_code == 15


def test_every_extra_and_requirement_of_the_release_resolves(tmp_path: Path) -> None:
    """Issue 38, case 9: ROCm's pip packages shipped a Requires-Dist on a never-built package behind
    an extra (``pip install 'pkg[device-gfx942]'`` only warned and installed no device code). uv is
    asked for the project with every extra its wheel provides, on the published index: the missing
    device package fails the row, naming it; once it is published, the row passes."""
    from tests.helpers.wheel_zip import write_wheel

    root = tmp_path / "idx"
    (tmp_path / "w").mkdir()
    host = write_wheel(
        tmp_path / "w" / "demo-1.0-py3-none-any.whl",
        {"demo/__init__.py": b""},
        requires=('demo-device-gfx942==1.0; extra == "device-gfx942"',),
        extras=("device-gfx942",),
        requires_python=">=3.14",
    )
    index.add_wheels(root, [(host, sha256_file(host))])
    targets = resolution.targets_of([host])
    assert {t.extras for t in targets} == {("device-gfx942",)}
    url = (root / "simple").as_uri() + "/"
    rows = resolution.check_install(targets, url, tools=["uv"], modes=[resolution.LOCAL])
    assert rows and all(r.failed for r in rows), [r.describe() for r in rows]
    assert all("demo-device-gfx942 was not found" in r.detail for r in rows), [r.detail for r in rows]
    device = write_wheel(
        tmp_path / "w" / "demo_device_gfx942-1.0-py3-none-any.whl", {"demo_device/a.co": b"x"}
    )
    index.add_wheels(root, [(device, sha256_file(device))])
    rows = resolution.check_install(targets, url, tools=["uv"], modes=[resolution.LOCAL])
    assert rows and all(not r.failed and r.version == "1.0" for r in rows), [r.describe() for r in rows]
