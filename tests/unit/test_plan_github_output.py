"""``buildkit plan --format github`` in GitHub Actions writes its step outputs to ``$GITHUB_OUTPUT``
itself (issue 27): no Python snippet in the workflow. Off Actions, nothing is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "aiter.yaml"  # 8 jobs


def _plan(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", str(RECIPE), "--format", "github", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**base, "PYTORCH_ROCM_ARCH": "", "PYTHONPATH": str(ROOT), **env},
        timeout=120,
    )


@pytest.mark.parametrize(("shard_size", "shards"), [(256, 1), (3, 3)])
def test_outputs_are_appended_in_actions(tmp_path: Path, shard_size: int, shards: int) -> None:
    output = tmp_path / "github_output"
    output.write_text("earlier=kept\n")
    proc = _plan(
        tmp_path,
        "--shard-size",
        str(shard_size),
        env={"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(output)},
    )
    assert proc.returncode == 0, proc.stderr
    lines = output.read_text().splitlines()
    assert lines[0] == "earlier=kept"
    values = dict(line.split("=", 1) for line in lines)
    assert json.loads(values["matrix"]) == json.loads(proc.stdout)  # stdout is unchanged
    assert values["job_count"] == "8" and values["shard_count"] == str(shards)
    ids = [job["id"] for i in range(shards) for job in json.loads(values[f"shard{i}"])["include"]]
    assert ids == [j["id"] for s in json.loads(proc.stdout)["shards"] for j in s["include"]]
    assert len(ids) == 8 and f"shard{shards}" not in values
    assert f"wrote matrix, job_count, shard_count, shard0.. to {output}" in proc.stderr


def test_nothing_is_written_outside_actions(tmp_path: Path) -> None:
    output = tmp_path / "github_output"
    output.write_text("")
    proc = _plan(tmp_path, env={"GITHUB_OUTPUT": str(output)})
    assert proc.returncode == 0, proc.stderr
    assert output.read_text() == ""
    assert json.loads(proc.stdout)["job_count"] == 8


def test_other_formats_write_nothing(tmp_path: Path) -> None:
    output = tmp_path / "github_output"
    output.write_text("")
    base = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", str(RECIPE), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**base, "GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(output), "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert output.read_text() == ""


def test_shard_slots_pad_with_empty_shards_and_refuse_too_many(tmp_path: Path) -> None:
    output = tmp_path / "github_output"
    output.write_text("")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(output)}
    proc = _plan(tmp_path, "--shard-slots", "3", env=env)
    assert proc.returncode == 0, proc.stderr
    values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert values["shard_count"] == "1" and len(json.loads(values["shard0"])["include"]) == 8
    assert json.loads(values["shard1"]) == json.loads(values["shard2"]) == {"include": []}
    # off Actions too: a plan of more shards than slots is refused before anything is printed
    refused = _plan(tmp_path, "--shard-size", "2", "--shard-slots", "3", env={})
    assert refused.returncode == 2 and refused.stdout == ""
    assert "--shard-slots 3: 8 jobs make 4 shards; the workflow runs 3" in refused.stderr
