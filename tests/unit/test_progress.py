"""A running build says what it is doing (issue 27): one line per phase change read from cibuildwheel's
own step lines (plain, GitHub-folded or coloured), the compile count from ninja or CMake on a terminal
at most every interval, nothing from pip's look-alike lines; ``build -v`` streams the log instead."""

from __future__ import annotations

from buildkit.building.progress import Phases

LOG = """\
Starting container image rocm-buildkit/debian-rocm:0123456789ab...
Copying project into container...
Running before_all...
+ true
Building cp313-manylinux_x86_64 wheel
::group::Setting up build environment...
Collecting setuptools
Building wheel for somedep (pyproject.toml): started
\x1b[1mRunning before_build...\x1b[0m
Building wheel...
[1/40] hipcc -c a.hip
[2/40] hipcc -c b.hip
[20/40] hipcc -c c.hip
[ 50%] Building CXX object x.o
[40/40] Linking CXX shared module _ext.so
Repairing wheel...
Testing wheel...
Copying wheels back to host...
"""


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _run(interactive: bool) -> list[str]:
    """Line i of LOG arrives 7 * (i + 1) seconds after the build began."""
    lines: list[str] = []
    clock = _Clock()
    phases = Phases("cp313-rocm5.7", lines.append, interactive=interactive, interval=15.0, clock=clock)
    for i, line in enumerate(LOG.splitlines()):
        clock.now = 7.0 * (i + 1)
        phases.feed(line)
    return lines


def test_off_a_terminal_one_line_per_phase_change() -> None:
    assert _run(interactive=False) == [
        "[cp313-rocm5.7] container (7s)",
        "[cp313-rocm5.7] copy in (14s)",
        "[cp313-rocm5.7] before_all (21s)",
        "[cp313-rocm5.7] requirements (42s)",  # GitHub's ::group:: fold
        "[cp313-rocm5.7] before_build (1m03s)",  # coloured
        "[cp313-rocm5.7] compile (1m10s)",  # pip's "Building wheel for somedep" before it is not a step
        "[cp313-rocm5.7] repair (1m52s)",
        "[cp313-rocm5.7] test (1m59s)",
        "[cp313-rocm5.7] copy out (2m06s)",
    ]


def test_on_a_terminal_the_compile_count_too_at_most_every_interval() -> None:
    counts = [
        line for line in _run(interactive=True) if line.startswith("[cp313-rocm5.7] compile ") and "(" in line
    ]
    # [1/40] at 77 s is shown; [2/40] (7 s later) and [20/40] (14 s) are not; [ 50%] (21 s) is; [40/40] not
    assert counts == [
        "[cp313-rocm5.7] compile (1m10s)",
        "[cp313-rocm5.7] compile 1 of 40 (1m17s)",
        "[cp313-rocm5.7] compile 50% (1m38s)",
    ]


def test_a_phase_is_announced_once() -> None:
    lines: list[str] = []
    phases = Phases("j", lines.append)
    for line in ("Building wheel...", "Building wheel...", "::group::Building wheel..."):
        phases.feed(line)
    assert len(lines) == 1 and lines[0].startswith("[j] compile (")
