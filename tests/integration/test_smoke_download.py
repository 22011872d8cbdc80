"""``buildkit smoke``'s host-side download of a wheel's dependencies, run for real: ``pip download`` with
the host's pip configuration (PyPI here), at the build lock's versions. Moved from
tests/unit/test_smoke_pythons.py, which tests the command it builds without the network."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from buildkit import manifest, smoke
from tests.helpers.wheel_zip import write_wheel


def _wheel_with_manifest(tmp_path: Path, job: dict[str, object]) -> Path:
    wheel = write_wheel(
        tmp_path / "demo-1.0+rocm5.7-py3-none-manylinux_2_41_x86_64.whl", {"demo/__init__.py": b""}
    )
    data = {"job": job, "build_requirements": {"files": []}}
    manifest.manifest_path(wheel).write_text(json.dumps(data), encoding="utf-8")
    return wheel


def test_the_download_runs_with_the_hosts_pip_configuration_and_honours_the_lock(tmp_path: Path) -> None:
    """The real ``pip download`` the deps step runs (PyPI, or whatever pip is configured with here)."""
    wheel = _wheel_with_manifest(tmp_path, {"id": "py3-rocm5.7"})
    constraints = tmp_path / "c.txt"
    constraints.write_text("typing-extensions==4.12.2\n")
    dest = tmp_path / "d"
    cmd = smoke.download_command(["typing-extensions>=4.5.0"], "3.13", wheel, dest, constraints)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0 and "No matching distribution" not in proc.stdout + proc.stderr:
        pytest.skip(f"no package index reachable here: {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in dest.iterdir()] == ["typing_extensions-4.12.2-py3-none-any.whl"]
