"""The parts of ``buildkit build`` that need no Docker: the up-to-date check and the atomic move
of a wheel and its manifest into ``dist/<job-id>/``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from buildkit import manifest
from buildkit.building import output, staging
from buildkit.building.key import up_to_date
from buildkit.errors import BuildFailed, UsageError

WHEEL = "pkg-1.0-cp313-cp313-manylinux_2_34_x86_64.whl"


def _staged(tmp: Path, content: bytes, key: str = "k1", passed: bool = True) -> Path:
    stage = tmp / "stage"
    stage.mkdir(exist_ok=True)
    wheel = stage / WHEEL
    wheel.write_bytes(content)
    sha = manifest.sha256_file(wheel)
    manifest.write(wheel, {"wheel": {"sha256": sha}, "inputs_key": key, "verdict": {"passed": passed}})
    return wheel


def test_publish_to_out_moves_wheel_and_manifest_together(tmp_path: Path) -> None:
    dest = tmp_path / "dist" / "cp313-job"
    output.publish_to_out(_staged(tmp_path, b"one"), dest)
    assert sorted(p.name for p in dest.iterdir()) == [WHEEL, WHEEL + ".manifest.json"]
    assert (dest / WHEEL).read_bytes() == b"one"
    # a rebuild replaces the folder as a whole and leaves no hidden folders behind
    output.publish_to_out(_staged(tmp_path, b"two"), dest)
    assert (dest / WHEEL).read_bytes() == b"two"
    assert sorted(p.name for p in (tmp_path / "dist").iterdir()) == ["cp313-job"]


def test_publish_to_out_failure_keeps_the_previous_wheel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = tmp_path / "dist" / "cp313-job"
    output.publish_to_out(_staged(tmp_path, b"good"), dest)
    real_replace = os.replace

    def failing_replace(src: os.PathLike[str] | str, dst: os.PathLike[str] | str) -> None:
        if ".incoming-" in str(src):
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(output.os, "replace", failing_replace)
    with pytest.raises(BuildFailed, match="No space left"):
        output.publish_to_out(_staged(tmp_path, b"new"), dest)
    assert (dest / WHEEL).read_bytes() == b"good"
    assert sorted(p.name for p in (tmp_path / "dist").iterdir()) == ["cp313-job"]


def test_up_to_date_needs_same_key_a_pass_and_intact_bytes(tmp_path: Path) -> None:
    dest = tmp_path / "dist" / "job"
    output.publish_to_out(_staged(tmp_path, b"wheel-bytes", key="abc"), dest)
    assert up_to_date(dest, "abc") == dest / WHEEL
    assert up_to_date(dest, "other") is None
    (dest / WHEEL).write_bytes(b"tampered")  # the manifest's sha256 no longer matches
    assert up_to_date(dest, "abc") is None
    output.publish_to_out(_staged(tmp_path, b"x", key="abc", passed=False), dest)
    assert up_to_date(dest, "abc") is None


def test_tree_digest_follows_content_not_timestamps(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "a.hip").write_text("kernel")
    first = staging.tree_digest(src)
    os.utime(src / "pkg" / "a.hip", (0, 0))
    assert staging.tree_digest(src) == first
    (src / ".buildkit").mkdir()
    (src / ".buildkit" / "ca-bundle.crt").write_text("ca")  # host CA does not change the build
    assert staging.tree_digest(src) == first
    (src / "pkg" / "a.hip").write_text("kernel2")
    assert staging.tree_digest(src) != first


def test_output_folder_must_be_writable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UsageError, match="--out"):
        output.check_writable(blocker / "dist", "--out")
    output.check_writable(tmp_path / "dist" / "sub", "--out")
    assert not (tmp_path / "dist").exists()  # checking creates nothing


def test_bad_source_date_epoch_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(UsageError, match="SOURCE_DATE_EPOCH"):
        staging.source_date_epoch(tmp_path)
    assert staging.source_date_epoch(tmp_path, 1234) == 1234


def _swap_many(wheel: str, dest: str, rounds: int) -> int:
    failures = 0
    for _ in range(rounds):
        try:
            output.publish_to_out(Path(wheel), Path(dest))
        except BuildFailed:
            failures += 1
    return failures


def test_concurrent_swaps_into_the_same_job_folder_never_fail(tmp_path: Path) -> None:
    # two builds of one job into one --out: without the lock about 1 swap in 300 failed (dest gone
    # between the other process's two renames) and a passing wheel was reported as build-failed
    import multiprocessing

    dest = tmp_path / "dist" / "cp313-job"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = _staged(tmp_path / "a", b"from-a")
    b = _staged(tmp_path / "b", b"from-b")
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        results = pool.starmap(_swap_many, [(str(a), str(dest), 300), (str(b), str(dest), 300)])
    assert results == [0, 0]
    assert (dest / WHEEL).read_bytes() in (b"from-a", b"from-b")
    assert sorted(p.name for p in (tmp_path / "dist").iterdir()) == ["cp313-job"]
