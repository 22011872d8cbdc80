"""Progress people can read (issue 27 item 6). On a terminal ``buildkit build`` draws a live board
(rich.live): one row per running job with its phase, compile count and time, then the summary table in
plan order. Off a terminal (a pipe, CI=true, --json) it prints today's one line per phase change.
NO_COLOR=1 gives no colour escape anywhere.

The terminal is real: ``buildkit build`` runs in a child process whose stdout and stderr are a
pseudo-terminal (os.openpty), with the real CLI, LiveBoard, Phases and summary. What stands in is the
Docker part of the build (the unit tier has no engine): ``build_plan`` is replaced by one that feeds a
recorded cibuildwheel log through the real :class:`Phases` of each job, as ``build_one`` does, and
reports the phases buildkit runs itself (image, gate) to the board as ``build_plan``/``build_one`` do.
"""

from __future__ import annotations

import fcntl
import io
import os
import re
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from buildkit.building.progress import LiveBoard, Phases
from buildkit.cli import options
from buildkit.cli.build import live_board_wanted

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "reference.yaml"  # 4 jobs: cp313/cp314 x ROCm 6.4/7.2
SGR = re.compile(r"\x1b\[[0-9;]*m")  # colour and bold
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

#: the child: buildkit build with the Docker part stood in for (see the module's docstring)
CHILD = r"""
import functools, os, sys, time
from buildkit.building.job import JobResult
from buildkit.building.progress import Phases
from buildkit.cli import main
from buildkit.service import build as build_service  # the stage call buildkit build makes

LOG = '''Starting container image rocm-buildkit/debian-sid-rocm:951d71d67dd6...
Copying project into container...
Setting up build environment...
Building wheel...
-- The CXX compiler identification is Clang 21.1.8
-- Configuring done (0.4s)
[12/40] hipcc -c kernels.hip
[31/40] hipcc -c more.hip
Repairing wheel...
Copying wheels back to host...'''

# the board redrawn 20 times a second rather than rich's 4 (the command's default), so that a phase
# lasting a frame takes a tenth of the time: the frames are the same, the test 15 s shorter
REFRESH = 20.0
build_service.LiveBoard = functools.partial(build_service.LiveBoard, refresh_per_second=REFRESH)
DELAY = float(os.environ["STANDIN_DELAY"])  # > 1/REFRESH s: every phase lasts a frame of the board

def standin(recipe, plan, job_ids, options, *, echo, verbose, parallel, board):
    jobs = list(plan.jobs)
    if board is not None:
        board.expect([j.id for j in jobs])
    results = []
    for job in jobs:
        if board is not None:
            board.phase(job.id, "image")
        time.sleep(DELAY)
        echo(f"[{job.id}] building in rocm-buildkit/debian-sid-rocm:951d71d67dd6 for gfx90a;gfx942")
        phases = Phases(job.id, echo, interactive=sys.stderr.isatty(), interval=0.0, board=board)
        for line in LOG.splitlines():
            phases.feed(line)
            time.sleep(DELAY)
        if board is not None:
            board.phase(job.id, "gate")
            time.sleep(DELAY)
            board.done(job.id)
        echo(f"[{job.id}] passed in 3.0s")
        results.append(JobResult(job=job.id, status="passed", seconds=3.0, gate="PASS"))
    return results

build_service.build_plan = standin
main(sys.argv[1:])
"""


def _run(tmp_path: Path, *args: str, tty: bool = True, delay: float = 0.0, **env: str) -> str:
    """``buildkit build RECIPE ...`` in a child on a 120x40 pseudo-terminal (or a pipe): everything it
    wrote to stdout and stderr."""
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", "NO_COLOR", "PYTORCH_ROCM_ARCH")}
    environ |= {"PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40", **env}
    environ["STANDIN_DELAY"] = str(delay)
    command = [sys.executable, "-c", CHILD, "build", str(RECIPE), "--out", str(tmp_path / "dist")]
    command += ["--log-dir", str(tmp_path / "logs"), *args]
    if not tty:
        proc = subprocess.run(command, env=environ, capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout + proc.stderr
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    child = subprocess.Popen(command, env=environ, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert child.wait(timeout=30) == 0, out.decode(errors="replace")
    return out.decode(errors="replace")


def _frames(text: str) -> str:
    """What a person saw, escapes removed (every frame of the live board, one after the other)."""
    return ESCAPE.sub("", text.replace("\r\n", "\n"))


def test_on_a_terminal_a_live_board_then_the_summary_in_plan_order(tmp_path: Path) -> None:
    raw = _run(tmp_path, delay=0.12)  # 2.4 frames a phase (it was 0.3 s, 1.2 frames at rich's 4 a second)
    seen = _frames(raw)
    assert "\x1b[?25l" in raw  # rich.live hid the cursor: a live display, redrawn in place
    board_rows = [
        line for line in seen.splitlines() if re.match(r"\s*cp31[34]-rocm(6\.4|7\.2)\s{2,}\w", line)
    ]
    phases = {line.split()[1] for line in board_rows}
    assert {"image", "container", "requirements", "configure", "compile", "repair", "gate"} <= phases
    assert any(re.search(r"compile\s+12 of 40\s+━+", line) for line in board_rows)  # count and bar
    assert any(re.search(r"\d+s$", line.rstrip()) for line in board_rows)  # elapsed
    assert re.search(r"[0-4] of 4 jobs done, 1 running, [0-3] waiting", seen)
    # the board replaces the phase lines; the jobs' other lines print above it
    assert "] compile (" not in seen and "[cp313-rocm6.4] building in " in seen
    summary = seen[seen.index("job            status") :].splitlines()
    assert [line.split()[0] for line in summary[1:5]] == [
        "cp313-rocm6.4",
        "cp313-rocm7.2",
        "cp314-rocm6.4",
        "cp314-rocm7.2",
    ]
    assert all(line.split()[1:4:2] == ["passed", "PASS"] for line in summary[1:5])
    assert "\x1b[32mpassed" in raw  # coloured on a terminal


def test_no_color_on_a_terminal_gives_no_colour_escape(tmp_path: Path) -> None:
    raw = _run(tmp_path, delay=0.05, NO_COLOR="1")
    assert SGR.findall(raw) == []
    assert "0 of 4 jobs done" in _frames(raw) and "passed" in raw


@pytest.mark.parametrize(
    ("how", "kwargs"),
    [("a pipe", {"tty": False}), ("CI=true", {"CI": "true"}), ("--json", {})],
)
def test_off_a_terminal_one_line_per_phase_change(
    tmp_path: Path, how: str, kwargs: dict[str, object]
) -> None:
    args = ("--json",) if how == "--json" else ()
    text = _frames(_run(tmp_path, *args, **kwargs))  # type: ignore[arg-type]
    assert "jobs done" not in text  # no board
    lines = [line for line in text.splitlines() if line.startswith("[cp313-rocm6.4] ")]
    phases = [re.sub(r" \(\d+s\)$", "", line) for line in lines if line.endswith("s)")]
    expected = ["container", "copy in", "requirements", "compile", "repair", "copy out"]
    if how == "a pipe":  # not a terminal: no compile count
        assert phases == [f"[cp313-rocm6.4] {phase}" for phase in expected]
    else:  # a terminal without a board (today's lines): the compile count too
        assert phases[:4] == [f"[cp313-rocm6.4] {phase}" for phase in expected[:4]]
        assert "[cp313-rocm6.4] compile 12 of 40" in phases
    if how != "--json":
        assert SGR.findall(text) == []


def test_the_board_is_wanted_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert live_board_wanted(as_json=False, verbose=False, env={})
    assert not live_board_wanted(as_json=False, verbose=False, env={"CI": "true"})
    assert not live_board_wanted(as_json=False, verbose=False, env={"TERM": "dumb"})
    assert not live_board_wanted(as_json=True, verbose=False, env={})
    assert not live_board_wanted(as_json=False, verbose=True, env={})  # -v streams the log
    try:
        options.set_verbosity(quiet=True, verbose=False)
        assert not live_board_wanted(as_json=False, verbose=False, env={})
    finally:
        options.set_verbosity(quiet=False, verbose=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert not live_board_wanted(as_json=False, verbose=False, env={})


def test_phases_tell_the_board_every_phase_count_and_cmakes_configure() -> None:
    seen: list[tuple[str, str, str | None]] = []

    class Board:
        def phase(self, job_id: str, phase: str, count: str | None = None) -> None:
            seen.append((job_id, phase, count))

    echoed: list[str] = []
    phases = Phases("j", echoed.append, interactive=True, board=Board())
    for line in (
        "Building wheel...",
        "-- The CXX compiler identification is GNU 14.2.0",
        "-- Configuring done (0.4s)",
        "[1/3] c++ -c a.cpp",
        "-- Configuring something else, after the count",
        "[ 66%] Building CXX object b.o",
        "Repairing wheel...",
        "[4/4] not a compile any more",
    ):
        phases.feed(line)
    assert echoed == []  # the board shows it all
    assert seen == [
        ("j", "compile", None),
        ("j", "configure", None),
        ("j", "configure", None),
        ("j", "compile", "1 of 3"),
        ("j", "compile", "66%"),
        ("j", "repair", None),
    ]


def test_the_board_renders_running_jobs_in_plan_order_with_a_bar() -> None:
    now = [100.0]
    board = LiveBoard(stream=io.StringIO(), clock=lambda: now[0])
    board.expect(["a", "b", "c", "d"])
    board.phase("c", "image")
    board.phase("a", "image")
    now[0] = 165.0
    board.phase("a", "compile", "30 of 40")
    board.done("b")
    out = io.StringIO()
    from rich.console import Console

    Console(file=out, width=100, color_system=None).print(board.render())
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    assert lines[0].split() == ["job", "phase", "progress", "elapsed"]
    assert lines[1].startswith("a  ") and "compile" in lines[1] and "30 of 40" in lines[1]
    assert lines[1].endswith("1m05s") and "━" in lines[1]
    assert lines[2].split() == ["c", "image", "1m05s"]
    assert lines[3] == "1 of 4 jobs done, 2 running, 1 waiting"
