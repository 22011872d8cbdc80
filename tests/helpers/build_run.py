"""``buildkit build`` of a recipe in a subprocess, as the end-to-end tests run it: the job's manifest
and build log back, the whole output in the failure message."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class JobBuilt:
    stdout: str
    manifest: dict[str, Any]  # the job's <wheel>.manifest.json
    log: str  # the job's build log (--log-dir)


def build_job(cwd: Path, recipe: Path, job: str, *flags: str, timeout: float = 1800) -> JobBuilt:
    """``buildkit build RECIPE --out dist --log-dir logs FLAGS`` in ``cwd``; asserts it passed and made
    one wheel for ``job``; the failure message ends with the job's log."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "buildkit",
            "build",
            str(recipe),
            "--out",
            "dist",
            "--log-dir",
            "logs",
            *flags,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    log_path = cwd / "logs" / f"{job}.log"
    log = log_path.read_text(errors="replace") if log_path.exists() else ""
    assert proc.returncode == 0, proc.stdout + proc.stderr + log[-6000:]
    (manifest,) = (cwd / "dist" / job).glob("*.manifest.json")
    return JobBuilt(proc.stdout, json.loads(manifest.read_text()), log)


def run_buildkit(*args: str, cwd: Path, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """``python -m buildkit ARGS`` in ``cwd`` (this interpreter's buildkit), its output captured; the
    caller judges the exit status."""
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
