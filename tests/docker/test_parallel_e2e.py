"""``build --parallel 2`` on the real engine, the reference HIP extension on the ROCm 7.2 builder with
its three CPythons: two jobs build at once (two build containers seen together), the lines of each
name their job, the summary lists the jobs in plan order, and the wheels are the bytes a serial
build makes; Ctrl-C and SIGTERM during two running jobs stop both: exit 130, no container of the
build, no staging folder, no wheel."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from buildkit.docker_engine import RUN_LABEL
from tests.helpers.recipes import reference_three_pythons

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
JOBS = ("cp313-rocm7.2", "cp314-rocm7.2", "cp315-rocm7.2")


def _recipe(tmp: Path) -> Path:
    return reference_three_pythons(tmp)


def _command(recipe: Path, tmp: Path, out: str, *flags: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "buildkit",
        "build",
        str(recipe),
        "--out",
        str(tmp / out),
        "--log-dir",
        str(tmp / f"logs-{out}"),
        *flags,
    ]


def _sums(out: Path) -> dict[str, str]:
    found = {}
    for job in JOBS:
        (manifest,) = (out / job).glob("*.manifest.json")
        found[job] = json.loads(manifest.read_text())["wheel"]["sha256"]
    return found


def _build_containers(client: Any, pid: int) -> set[str]:
    """The containers of the ``buildkit`` process ``pid`` (its staging folders name it)."""
    listed = client.containers.list(all=True, filters={"label": RUN_LABEL}, ignore_removed=True)
    return {
        c.name for c in listed if re.match(rf"staging-cp3\d+-rocm7\.2-{pid}-", c.labels.get(RUN_LABEL, ""))
    }


def test_two_jobs_at_once_give_the_serial_wheels_with_the_summary_in_plan_order(
    tmp_path: Path, docker_client: Any
) -> None:
    recipe = _recipe(tmp_path)
    serial = subprocess.run(
        _command(recipe, tmp_path, "serial", "--no-cache"), capture_output=True, text=True, timeout=3600
    )
    assert serial.returncode == 0, serial.stdout + serial.stderr
    proc = subprocess.Popen(
        _command(recipe, tmp_path, "parallel", "--no-cache", "--parallel", "2"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    most = 0
    while proc.poll() is None:
        most = max(
            most, len({n for n in _build_containers(docker_client, proc.pid) if n.startswith("cibuildwheel")})
        )
        time.sleep(0.5)
    out, err = proc.communicate()
    assert proc.returncode == 0, out + err
    assert most == 2, most  # two build containers at once, never three
    for line in err.splitlines():  # every job line names its job
        if "building in" in line or " passed in " in line:
            assert re.match(r"^\[cp31[345]-rocm7\.2\] ", line), line
    listed = [job for job in re.findall(r"cp31[345]-rocm7\.2", out) if job in JOBS]
    assert list(dict.fromkeys(listed)) == list(JOBS), out  # the summary in plan order
    assert _sums(tmp_path / "parallel") == _sums(tmp_path / "serial")


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_stops_both_running_jobs_and_leaves_nothing(
    tmp_path: Path, docker_client: Any, signum: int
) -> None:
    recipe = _recipe(tmp_path)
    proc = subprocess.Popen(
        _command(recipe, tmp_path, "dist", "--no-cache", "--parallel", "2"),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(_build_containers(docker_client, proc.pid)) < 2:
        time.sleep(0.2)
    assert len(_build_containers(docker_client, proc.pid)) >= 2, "two jobs never ran at once"
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode == 130, out
    assert "interrupted" in out
    assert _build_containers(docker_client, proc.pid) == set(), out
    dist = tmp_path / "dist"
    assert not dist.exists() or not [p for p in dist.rglob("*") if p.is_file()], list(dist.rglob("*"))
    assert not any(p.name.startswith((".buildkit-", ".staging-")) for p in tmp_path.iterdir())
    os.sync()
