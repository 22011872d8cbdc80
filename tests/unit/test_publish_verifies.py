"""``publish`` runs the gate again before anything is written, with a configuration it trusts
(:mod:`buildkit.publish.trust`): the recipe's job's (``--recipe``), or the one a signed attestation
records (``--public-key``). The issue's forged manifest, a forged configuration, a manifest of another
wheel, stale and unsigned manifests are refused, naming the wheel and why, with nothing written.

The wheels are real: a gcc/g++ library with a ``.hip_fatbin`` for the job's archs; the failing one
needs ``GLIBCXX_3.4.25``, above manylinux_2_28's ceiling (3.4.24). The index server case is in
tests/integration/test_pypiserver.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit import manifest
from buildkit.errors import PublishRefused
from buildkit.publish.run import publish
from buildkit.publish.target import parse_target
from buildkit.recipe import load_recipe
from tests.helpers.shared_library import have_gcc
from tests.helpers.wheels_for_publish import (
    DEMO_RECIPE,
    GLIBCXX_3_4_25_SOURCE,
    OTHER_KEY,
    forge_three_key_manifest,
    job_wheel,
    make_wheel,
    public_key_file,
    sign,
)

ROOT = Path(__file__).resolve().parents[2]
JOB = "cp312-rocm6.4"

pytestmark = pytest.mark.skipif(not have_gcc(), reason="gcc/g++ build the wheels' libraries")

# the ceiling finding names the member's symbol that needs the version (issue 39)
ABOVE_CEILING = (
    "requires GLIBCXX_3.4.25 from libstdc++.so.6 for std::random_device::_M_getentropy() const, "
    "above the GLIBCXX ceiling 3.4.24"
)


@pytest.fixture(autouse=True)
def no_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test names the key itself (or none)."""
    monkeypatch.delenv("BUILDKIT_PUBLISH_KEY", raising=False)


@pytest.fixture
def recipe(tmp_path: Path) -> Path:
    path = tmp_path / "recipes" / "demo.yaml"
    path.parent.mkdir()
    path.write_text(DEMO_RECIPE)
    return path


@pytest.fixture
def key(tmp_path: Path) -> Path:
    return public_key_file(tmp_path / "publisher")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("BUILDKIT_PUBLISH_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args], capture_output=True, text=True, check=False, env=env
    )


def edit_manifest(path: Path, **changes: object) -> None:
    data = manifest.read(path)
    data.update(changes)
    manifest.manifest_path(path).write_text(json.dumps(data))


def test_the_gate_fails_the_wheel_the_forgeries_are_made_of(tmp_path: Path, recipe: Path) -> None:
    """The premise: ``check --recipe --job`` fails the GLIBCXX_3.4.25 wheel (exit 7)."""
    wheel = job_wheel(tmp_path / "dist", recipe, JOB, source=GLIBCXX_3_4_25_SOURCE)
    result = run_cli("check", str(wheel), "--recipe", str(recipe), "--job", JOB)
    assert result.returncode == 7, result.stdout + result.stderr
    assert ABOVE_CEILING in result.stdout


@pytest.mark.parametrize("trust", ["none", "key", "recipe"])
@pytest.mark.parametrize("dry_run", [True, False])
def test_the_issues_forged_manifest_is_refused(
    tmp_path: Path, recipe: Path, key: Path, trust: str, dry_run: bool
) -> None:
    """``buildkit publish dist --to DIR --dry-run`` answered "would publish", exit 0; now exit 10 naming
    the wheel and why, whatever the publisher trusts, and nothing is written."""
    dist, idx = tmp_path / "dist", tmp_path / "idx"
    wheel = job_wheel(dist / JOB, recipe, JOB, source=GLIBCXX_3_4_25_SOURCE)
    forge_three_key_manifest(wheel)
    args = ["publish", str(dist)]
    args += ["--recipe", str(recipe)] if trust == "recipe" else ["--to", str(idx)]
    args += ["--public-key", str(key)] if trust == "key" else []
    args += ["--dry-run"] if dry_run else []
    result = run_cli(*args)
    assert result.returncode == 10, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "would publish" not in result.stdout + result.stderr
    [line] = [line for line in result.stderr.splitlines() if str(wheel) in line]
    expected = {
        "none": "no trusted gate configuration: the manifest's claims are not taken on trust",
        "key": f"unsigned: no attestation ({wheel.name}.intoto.json) beside the wheel, and "
        f"--public-key {key}",
        "recipe": "the manifest records no recipe (recipe.sha256)",
    }[trust]
    assert expected in line
    assert not idx.exists() and not (recipe.parent / "site").exists()


def test_json_reports_the_refusals(tmp_path: Path, recipe: Path, key: Path) -> None:
    dist, idx = tmp_path / "dist", tmp_path / "idx"
    good = make_wheel(dist / "a", "fine-1.0-py3-none-any.whl")
    bad = job_wheel(dist / JOB, recipe, JOB, source=GLIBCXX_3_4_25_SOURCE)
    forge_three_key_manifest(bad)
    result = run_cli("publish", str(dist), "--to", str(idx), "--public-key", str(key), "--json", "--dry-run")
    assert result.returncode == 10
    data = json.loads(result.stdout)
    assert data["ok"] is False and data["dry_run"] is True and data["error"]["kind"] == "PublishRefused"
    assert [r["wheel"] for r in data["refused"]] == [str(bad)]
    assert "unsigned: no attestation" in data["refused"][0]["reason"]
    assert str(good) not in result.stdout
    assert not idx.exists()


def test_a_signed_manifest_claiming_a_pass_is_checked_by_the_gate_again(
    tmp_path: Path, recipe: Path, key: Path
) -> None:
    """A manifest signed with the right key that claims a pass the gate does not give (the gate's
    rules got stricter, or the builder lied): the gate, run again, refuses it with its findings."""
    dist, idx = tmp_path / "dist", tmp_path / "idx"
    wheel = job_wheel(dist / JOB, recipe, JOB, source=GLIBCXX_3_4_25_SOURCE)
    for trust in ({"public_key": key}, {"recipe": load_recipe(recipe)}):
        with pytest.raises(PublishRefused) as info:
            publish(dist, parse_target(str(idx)), dry_run=True, **trust)
        text = str(info.value)
        assert f"{wheel}: the gate, run again, fails it: " in text
        assert ABOVE_CEILING in text
        assert info.value.refusals[0][0] == str(wheel)
    assert not idx.exists()


def test_a_passing_job_wheel_is_published_with_either_trust(tmp_path: Path, recipe: Path, key: Path) -> None:
    """The same job's wheel without the GLIBCXX_3.4.25 symbol passes the gate run again, either way."""
    dist = tmp_path / "dist"
    wheel = job_wheel(dist / JOB, recipe, JOB)
    by_key = publish(dist, parse_target(str(tmp_path / "a")), public_key=key)
    assert [o.status for o in by_key] == ["published"]
    by_recipe = publish(dist, parse_target(str(tmp_path / "b")), recipe=load_recipe(recipe))
    assert [o.status for o in by_recipe] == ["published"]
    both = publish(dist, parse_target(str(tmp_path / "c")), recipe=load_recipe(recipe), public_key=key)
    assert [o.status for o in both] == ["published"]
    assert (tmp_path / "c" / "simple" / "demo" / wheel.name).read_bytes() == wheel.read_bytes()


def test_a_forged_configuration_is_refused(tmp_path: Path, recipe: Path, key: Path) -> None:
    """The manifest's gate configuration loosened (no policy, GLIBCXX ceiling 3.4.30) after the build
    signed the real one; or loosened and signed again with another key: refused, nothing written."""
    dist, idx = tmp_path / "dist", tmp_path / "idx"
    wheel = job_wheel(dist / JOB, recipe, JOB, source=GLIBCXX_3_4_25_SOURCE)
    gate = manifest.read(wheel)["gate"]
    loose = {**gate, "policy": None, "ceilings": {**gate["ceilings"], "GLIBCXX": "3.4.30"}}
    edit_manifest(wheel, gate=loose)

    with pytest.raises(PublishRefused) as info:
        publish(dist, parse_target(str(idx)), public_key=key)
    assert f"{wheel}: forged manifest: its gate configuration is not the one the attestation signs" in str(
        info.value
    )
    assert '"GLIBCXX": "3.4.30"' in str(info.value)
    with pytest.raises(PublishRefused) as info:
        publish(dist, parse_target(str(idx)), recipe=load_recipe(recipe))
    assert f"{wheel}: stale or forged manifest: the gate configuration it records is not the one" in str(
        info.value
    )
    assert f"gives job {JOB}" in str(info.value)

    sign(wheel, OTHER_KEY)  # the forger signs the loosened manifest with a key of their own
    with pytest.raises(PublishRefused) as info:
        publish(dist, parse_target(str(idx)), public_key=key, dry_run=True)
    assert f"{wheel}: the signature does not hold: " in str(info.value)
    assert "no signature verifies with the given public key" in str(info.value)
    assert not idx.exists()


def test_a_manifest_of_another_wheel_is_refused(tmp_path: Path, recipe: Path, key: Path) -> None:
    """A good wheel's manifest and attestation put beside the failing wheel: named for it, or carrying
    the failing wheel's sha256 in place of the good one's. Refused either way."""
    good = job_wheel(tmp_path / "good", recipe, JOB)
    dist, idx = tmp_path / "dist", tmp_path / "idx"
    bad = job_wheel(dist / JOB, recipe, JOB, source=GLIBCXX_3_4_25_SOURCE)
    assert bad.name == good.name
    for companion in (manifest.manifest_path(good), good.with_name(good.name + ".intoto.json")):
        shutil.copy(companion, bad.parent / companion.name)
    for trust in ({"public_key": key}, {"recipe": load_recipe(recipe)}):
        with pytest.raises(PublishRefused) as info:
            publish(dist, parse_target(str(idx)), **trust)
        assert f"{bad}: sha256 mismatch: the wheel is {manifest.sha256_file(bad)}" in str(info.value)

    edit_manifest(bad, wheel={**manifest.read(bad)["wheel"], "sha256": manifest.sha256_file(bad)})
    with pytest.raises(PublishRefused) as info:
        publish(dist, parse_target(str(idx)), public_key=key)
    assert f"{bad}: the signature does not hold: " in str(info.value)
    assert "is not the attested subject" in str(info.value)
    with pytest.raises(PublishRefused) as info:  # the recipe's configuration: the gate fails it
        publish(dist, parse_target(str(idx)), recipe=load_recipe(recipe))
    assert f"{bad}: the gate, run again, fails it:" in str(info.value)
    assert not idx.exists()


def test_a_manifest_of_another_recipe_revision_is_stale(tmp_path: Path, recipe: Path, key: Path) -> None:
    """Signed by the right key, but the recipe sha256 it records is not the one the attestation signs."""
    dist = tmp_path / "dist"
    wheel = job_wheel(dist / JOB, recipe, JOB)
    edit_manifest(wheel, recipe={**manifest.read(wheel)["recipe"], "sha256": "a" * 64})
    with pytest.raises(PublishRefused) as info:
        publish(dist, parse_target(str(tmp_path / "idx")), public_key=key)
    assert f"{wheel}: forged or stale manifest: it records recipe sha256 {'a' * 64}, the signed" in str(
        info.value
    )


def test_unsigned_when_a_signature_is_required(tmp_path: Path, key: Path) -> None:
    dist = tmp_path / "dist"
    wheel = make_wheel(dist, "demo-1.0-py3-none-any.whl", key=None)  # attestation without signature
    with pytest.raises(PublishRefused) as info:
        publish(dist, parse_target(str(tmp_path / "idx")), public_key=key)
    assert f"{wheel}: the signature does not hold: " in str(info.value)
    assert "the attestation is unsigned" in str(info.value)
    # no key, no recipe: nothing is trusted
    with pytest.raises(PublishRefused, match="no trusted gate configuration"):
        publish(dist, parse_target(str(tmp_path / "idx")))
    assert not (tmp_path / "idx").exists()


def test_a_job_the_recipe_does_not_plan_is_refused(tmp_path: Path, recipe: Path) -> None:
    dist = tmp_path / "dist"
    wheel = job_wheel(dist / JOB, recipe, JOB)
    edit_manifest(wheel, job={**manifest.read(wheel)["job"], "id": "cp399-rocm9.9"})
    with pytest.raises(PublishRefused) as info:
        publish(dist, parse_target(str(tmp_path / "idx")), recipe=load_recipe(recipe))
    assert f"{wheel}: job cp399-rocm9.9 (the manifest's) is not in the plan of" in str(info.value)
