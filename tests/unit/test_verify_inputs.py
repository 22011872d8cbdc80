"""``buildkit verify``'s input checks, all made before anything is rebuilt (no Docker needed).

A malformed manifest, an unwritable ``--keep`` and attestation options without ``--attestation``
are usage errors (exit 2) with a message, never a traceback nor a silent full rebuild.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from buildkit import manifest as manifests
from buildkit.building import verify
from buildkit.errors import UsageError
from buildkit.records import to_data
from buildkit.service.verify import verify_rebuild  # the rebuild the command runs
from tests.helpers.wheels_for_publish import make_wheel

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", "verify", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # this tree's buildkit
    )


class NoEngine:
    """Stands for a Docker client that must not be reached: the checks come before the rebuild."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the engine was used ({name}) before the inputs were checked")


def _wheel_with_manifest(tmp_path: Path, data: Any) -> Path:
    wheel = make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    manifests.manifest_path(wheel).write_text(json.dumps(data))
    return wheel


def _good(wheel: Path) -> dict[str, Any]:
    return {
        "schema": manifests.SCHEMA,
        "wheel": {"filename": wheel.name, "sha256": manifests.sha256_file(wheel)},
        "recipe": {"file": "demo.yaml", "sha256": "ab" * 32},
        "job": {"id": "cp313-rocm6.4"},
    }


MALFORMED: list[tuple[Any, str]] = [
    ([], "not a rocm-buildkit/manifest document"),
    ({}, "not a rocm-buildkit/manifest document"),
    ({"schema": manifests.SCHEMA, "job": "x"}, "'wheel' is missing, not an object"),
]


@pytest.mark.parametrize(("data", "message"), MALFORMED)
def test_malformed_manifest_is_a_usage_error(tmp_path: Path, data: Any, message: str) -> None:
    wheel = _wheel_with_manifest(tmp_path, data)
    with pytest.raises(UsageError, match="malformed manifest") as info:
        verify_rebuild(wheel, recipe=tmp_path / "r.yaml", cwd=tmp_path, client=NoEngine())
    assert message in str(info.value)


def test_manifest_field_shapes(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    path = manifests.manifest_path(wheel)
    assert verify.check_manifest(_good(wheel), path)["job"]["id"] == "cp313-rocm6.4"
    cases = [
        ("job", "x", "'job' is str, not an object"),
        ("job", {"id": 5}, "job.id is missing or not a string"),
        ("recipe", {"file": "demo.yaml"}, "recipe.sha256 is missing or not a string"),
        ("wheel", [], "'wheel' is list, not an object"),
        ("image", "tag", "'image' is str, not an object"),
        ("provenance", [], "'provenance' is list, not an object"),
    ]
    for key, value, message in cases:
        with pytest.raises(UsageError, match=message):
            verify.check_manifest({**_good(wheel), key: value}, path)


def test_cli_malformed_manifest_exits_2_without_traceback(tmp_path: Path) -> None:
    for data, message in MALFORMED:
        wheel = _wheel_with_manifest(tmp_path, data)
        proc = _cli(str(wheel), "--recipe", str(wheel), cwd=tmp_path)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert message in proc.stderr and "Traceback" not in proc.stderr
        assert "sha256 None" not in proc.stderr


def test_keep_is_checked_before_the_rebuild(tmp_path: Path) -> None:
    wheel = _wheel_with_manifest(tmp_path, {})
    wheel = _wheel_with_manifest(tmp_path, _good(wheel))
    afile = tmp_path / "afile"
    afile.write_text("x")
    for keep, message in [
        (afile, "exists and is not a directory"),
        (afile / "sub", "cannot write there"),
        (Path("/proc/keep"), "cannot write there"),  # /proc refuses new entries, even to root
    ]:
        with pytest.raises(UsageError, match=f"--keep {keep}: {message}"):
            verify_rebuild(wheel, cwd=tmp_path, keep=keep, client=NoEngine())
    verify.prepare_keep(tmp_path / "new" / "keep")  # a creatable folder is made, and left empty
    assert list((tmp_path / "new" / "keep").iterdir()) == []


def test_cli_unwritable_keep_exits_2_at_once(tmp_path: Path) -> None:
    wheel = _wheel_with_manifest(tmp_path, {})
    wheel = _wheel_with_manifest(tmp_path, _good(wheel))
    proc = _cli(str(wheel), "--keep", "/proc/keep", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--keep /proc/keep: cannot write there" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_attestation_options_need_attestation(tmp_path: Path) -> None:
    wheel = _wheel_with_manifest(tmp_path, {})
    key = tmp_path / "key.pub"
    key.write_text("not read: the usage check comes first")
    for extra in (["--public-key", str(key)], ["--attestation-file", str(key)]):
        proc = _cli(str(wheel), *extra, cwd=tmp_path)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "add --attestation" in proc.stderr
    proc = _cli(
        str(wheel), "--attestation", "--public-key", str(key), "--keep", str(tmp_path / "k"), cwd=tmp_path
    )
    assert proc.returncode == 2 and "apply to a rebuild" in proc.stderr, proc.stderr
    assert "not silently ignored" in " ".join(_cli("--help", cwd=tmp_path).stdout.split())


def test_the_rebuild_takes_the_lock_the_manifest_records() -> None:
    from buildkit.building.requirements import Lock, Locked
    from buildkit.recipe import load_recipe

    hermetic = load_recipe(ROOT / "recipes" / "reference-trixie.yaml")
    lock = Lock(
        "cp313-rocm5.7",
        "3.13",
        ("manylinux_2_41_x86_64",),
        ("setuptools>=77",),
        (Locked("setuptools", "84.2.1", "setuptools-84.2.1-py3-none-any.whl", "c" * 64),),
    )
    data: dict[str, Any] = {"wheel": {"filename": "w.whl"}, "build_requirements": to_data(lock)}
    notes: list[str] = []
    assert verify._recorded_lock(data, hermetic, "cp313-rocm5.7", notes) == lock and notes == []
    # a manifest from before hermetic builds: resolved again, and the note says what that can explain
    assert verify._recorded_lock({"wheel": {"filename": "w.whl"}}, hermetic, "cp313-rocm5.7", notes) is None
    assert len(notes) == 1 and "resolves them again" in notes[0]
    data["build_requirements"] = {"files": "nope"}
    with pytest.raises(
        UsageError, match=r"w\.whl\.manifest\.json: the manifest's build_requirements are malformed"
    ):
        verify._recorded_lock(data, hermetic, "cp313-rocm5.7", [])
