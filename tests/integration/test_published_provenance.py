"""A signed job wheel published to a ``file://`` static index with signatures required, downloaded back
through the index by real pip, and checked by ``buildkit verify --index`` against the provenance the
index serves beside it (issue 38); the same download with one byte changed is refused (exit 12).

The wheel is the one ``build`` makes for the reference-like demo recipe's job (a gcc-built HIP library,
tests/helpers/wheels_for_publish.py), signed with the test key as a build with BUILDKIT_SIGNING_KEY
signs it; every command is the real CLI in its own process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.shared_library import have_gcc
from tests.helpers.wheels_for_publish import DEMO_RECIPE, job_wheel, public_key_file

pytestmark = pytest.mark.skipif(not have_gcc(), reason="gcc/g++ build the wheel's library")
ROOT = Path(__file__).resolve().parents[2]
JOB = "cp312-rocm6.4"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BUILDKIT_PUBLISH_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=300)


def test_a_signed_wheel_published_downloaded_and_verified(tmp_path: Path) -> None:
    recipe = tmp_path / "recipes" / "demo.yaml"
    recipe.parent.mkdir()
    recipe.write_text(DEMO_RECIPE + "  require_signature: true\n")
    wheel = job_wheel(tmp_path / "dist" / JOB, recipe, JOB)
    key = public_key_file(tmp_path / "keys")
    done = _run(
        "-m", "buildkit", "publish", str(tmp_path / "dist"), "--recipe", str(recipe), "--public-key", str(key)
    )
    assert done.returncode == 0, done.stderr
    simple = (recipe.parent / "site" / "index" / "simple").as_uri()

    download = tmp_path / "download"
    done = _run(
        "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
        "--platform", wheel.name.rsplit("-", 1)[1].removesuffix(".whl"), "--index-url", simple,
        "--dest", str(download), "demo",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    downloaded = download / wheel.name
    assert downloaded.read_bytes() == wheel.read_bytes()
    assert not (download / (wheel.name + ".intoto.json")).exists()  # only what the index serves counts

    verify = ("-m", "buildkit", "verify", "--index", simple, "--public-key", str(key), str(downloaded))
    done = _run(*verify)
    assert done.returncode == 0, done.stderr
    assert f"{wheel.name}: attestation verified" in done.stdout

    data = bytearray(downloaded.read_bytes())
    data[len(data) // 2] ^= 0xFF
    downloaded.write_bytes(bytes(data))
    done = _run(*verify)
    assert done.returncode == 12, done.stdout + done.stderr
    assert "is not the attested subject" in done.stderr and "Traceback" not in done.stderr
