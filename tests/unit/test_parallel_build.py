"""``build --parallel N`` without an engine: results in plan order whatever finishes first, every
line naming its job, at most N jobs at once, and a job raising stops the others (runner.cancel)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from buildkit.building import run, runner
from buildkit.building.job import JobResult
from buildkit.plan.expansion import expand
from buildkit.plan.models import Job
from buildkit.recipe import parse_recipe

RECIPE = """\
name: demo
source: {path: ../csrc}
version: {base: "1.0", local: "rocm{rocm}"}
python: ["3.13", "3.14", "3.15"]
rocm: ["7.2"]
archs: {list: [gfx90a]}
manylinux: {policy: manylinux_2_31, sysroot: glibc2.31}
repair: {exclude: {sets: [rocm]}}
image: debian-sid-rocm
"""


def _jobs(tmp_path: Path) -> list[Job]:
    return list(expand(parse_recipe(RECIPE, path=tmp_path / "r.yaml"), env={}, enumerator=lambda: []).jobs)


def test_results_come_in_plan_order_and_lines_name_their_job(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path)
    lines: list[str] = []
    running: list[int] = [0]
    most: list[int] = [0]
    lock = threading.Lock()

    def build(job: Job, image: Any, say: Any) -> JobResult:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        say("compiling\nlinking")
        time.sleep(0.3 if job is jobs[0] else 0.05)  # the first job finishes last
        with lock:
            running[0] -= 1
        return JobResult(job=job.id, status="passed")

    results = run._side_by_side([(j, None) for j in jobs], build, 2, lines.append)
    assert [r.job for r in results] == [j.id for j in jobs]
    assert most[0] == 2
    assert sorted(lines) == sorted(f"[{j.id}] compiling\n[{j.id}] linking" for j in jobs)


def test_a_job_raising_cancels_the_running_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = _jobs(tmp_path)
    cancelled: list[bool] = []
    monkeypatch.setattr(runner, "cancel", lambda: cancelled.append(True))

    def build(job: Job, image: Any, say: Any) -> JobResult:
        if job is jobs[0]:
            raise RuntimeError("engine gone")
        time.sleep(0.1)
        return JobResult(job=job.id, status="passed")

    with pytest.raises(RuntimeError, match="engine gone"):
        run._side_by_side([(j, None) for j in jobs], build, 2, lambda line: None)
    assert cancelled == [True]


def test_cancel_interrupts_a_job_before_its_cibuildwheel_starts(tmp_path: Path) -> None:
    runner.reset()
    runner.cancel()
    try:
        with pytest.raises(KeyboardInterrupt), (tmp_path / "log").open("w") as log:
            runner.run_cibuildwheel(tmp_path, tmp_path / "out", {}, log, lambda line: None, verbose=False)
    finally:
        runner.reset()
