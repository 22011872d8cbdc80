"""Issue 38, case 5: with ``--recipe`` alone, a passing wheel whose library was changed after the build
and whose manifest's sha256 was rewritten to match is published: the gate passes it again, and only a
key ties the bytes to the build. A recipe's ``publish.require_signature: true`` (or
``--require-signature``) now makes ``publish`` require the key, and the attestation the build signed
then refuses the changed bytes.

The wheels are real job wheels (tests/helpers/wheels_for_publish.py: a gcc-built library, signed
with the test key as a build with BUILDKIT_SIGNING_KEY signs it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit import manifest
from buildkit.errors import PublishRefused, UsageError
from buildkit.publish.run import publish
from buildkit.publish.target import parse_target
from buildkit.recipe import load_recipe
from tests.helpers.shared_library import have_gcc
from tests.helpers.wheel_edit import edit_wheel, read_members
from tests.helpers.wheels_for_publish import DEMO_RECIPE, job_wheel, public_key_file

pytestmark = pytest.mark.skipif(not have_gcc(), reason="gcc/g++ build the wheels' libraries")
ROOT = Path(__file__).resolve().parents[2]
JOB = "cp312-rocm6.4"


@pytest.fixture(autouse=True)
def no_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BUILDKIT_PUBLISH_KEY", raising=False)


def _recipe(tmp_path: Path, *, signed: bool) -> Path:
    path = tmp_path / "recipes" / "demo.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = "  require_signature: true\n" if signed else ""
    path.write_text(DEMO_RECIPE + extra)
    return path


def _tampered(wheel: Path) -> Path:
    """The library's bytes changed after the build (a byte of its padding after the ELF's end:
    still a valid library the gate passes), RECORD, manifest sha256 and size rewritten to match;
    the attestation, which the tamperer cannot sign, left as the build wrote it."""
    library = next(n for n in read_members(wheel) if n.endswith(".so"))
    edit_wheel(wheel, put={library: read_members(wheel)[library] + b"\x90 backdoor"}, rerecord=True)
    data = manifest.read(wheel)
    data["wheel"].update(sha256=manifest.sha256_file(wheel), size=wheel.stat().st_size)
    manifest.write(wheel, data)
    return wheel


def test_the_recipe_alone_publishes_changed_bytes(tmp_path: Path) -> None:
    """The premise, as the issue found it: --recipe runs the gate again, which passes the changed wheel."""
    recipe = _recipe(tmp_path, signed=False)
    dist = tmp_path / "dist"
    _tampered(job_wheel(dist / JOB, recipe, JOB))
    outcomes = publish(dist, parse_target(str(tmp_path / "idx")), recipe=load_recipe(recipe), dry_run=True)
    assert [o.status for o in outcomes] == ["would publish"]


def test_a_recipe_requiring_signatures_refuses_changed_bytes(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, signed=True)
    loaded = load_recipe(recipe)
    assert loaded.publish is not None and loaded.publish.require_signature
    dist, idx = tmp_path / "dist", tmp_path / "idx"
    wheel = _tampered(job_wheel(dist / JOB, recipe, JOB))
    with pytest.raises(UsageError, match=r"sets publish\.require_signature: give --public-key K"):
        publish(dist, parse_target(str(idx)), recipe=loaded)
    key = public_key_file(tmp_path / "k")
    with pytest.raises(PublishRefused) as info:
        publish(dist, parse_target(str(idx)), recipe=loaded, public_key=key)
    assert f"{wheel}: the signature does not hold" in str(info.value)
    assert not idx.exists()


def test_a_recipe_requiring_signatures_publishes_the_builds_bytes(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, signed=True)
    dist = tmp_path / "dist"
    wheel = job_wheel(dist / JOB, recipe, JOB)
    key = public_key_file(tmp_path / "k")
    outcomes = publish(dist, parse_target(str(tmp_path / "idx")), recipe=load_recipe(recipe), public_key=key)
    assert [o.status for o in outcomes] == ["published"]
    assert (tmp_path / "idx" / "simple" / "demo" / wheel.name).read_bytes() == wheel.read_bytes()
    served = tmp_path / "idx" / "simple" / "demo" / (wheel.name + ".provenance")  # the signed attestation
    assert served.read_bytes() == wheel.with_name(wheel.name + ".intoto.json").read_bytes()


def test_the_flag_requires_a_key_from_the_command_line(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, signed=False)
    dist = tmp_path / "dist"
    _tampered(job_wheel(dist / JOB, recipe, JOB))
    env = {k: v for k, v in os.environ.items() if k != "BUILDKIT_PUBLISH_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "buildkit", "publish", str(dist), "--recipe", str(recipe)]
    done = subprocess.run([*command, "--require-signature"], capture_output=True, text=True, env=env)
    assert done.returncode == 2 and "--require-signature: give --public-key K" in done.stderr, done.stderr
    key = public_key_file(tmp_path / "k")
    done = subprocess.run(
        [*command, "--require-signature", "--public-key", str(key)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 10 and "the signature does not hold" in done.stderr, done.stderr
    assert not (recipe.parent / "site").exists()


@pytest.mark.parametrize("attestation", ["unsigned", "missing"])
def test_a_recipe_requiring_signatures_refuses_an_unsigned_wheel(tmp_path: Path, attestation: str) -> None:
    """The build's own bytes, but built without BUILDKIT_SIGNING_KEY (an unsigned envelope) or with the
    attestation left behind: no signed attestation names them, so nothing is published."""
    recipe = _recipe(tmp_path, signed=True)
    dist, idx = tmp_path / "dist", tmp_path / "idx"
    wheel = job_wheel(dist / JOB, recipe, JOB, key=None)
    if attestation == "missing":
        wheel.with_name(wheel.name + ".intoto.json").unlink()
    key = public_key_file(tmp_path / "k")
    with pytest.raises(PublishRefused) as info:
        publish(dist, parse_target(str(idx)), recipe=load_recipe(recipe), public_key=key)
    said = "the attestation is unsigned" if attestation == "unsigned" else "unsigned: no attestation"
    assert f"{wheel}: " in str(info.value) and said in str(info.value), info.value
    assert not idx.exists()
