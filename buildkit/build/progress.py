"""What a running build is doing, read from cibuildwheel's output: :class:`Phases`.

cibuildwheel names each step it starts ("Running before_all...", "Building wheel...", "Repairing
wheel...", "Testing wheel..."); a build tool reports its own count ("[12/240]" from ninja, "[ 45%]"
from CMake's makefiles). Off a terminal, the job prints one line when its phase changes; on a terminal,
the compile count too, at most every ``interval`` seconds. Each line gives the time since the build
began. ``buildkit build -v`` streams the whole log instead.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

#: cibuildwheel's step names -> the phase a person reads
STEPS: tuple[tuple[str, str], ...] = (
    ("Starting container image", "container"),
    ("Copying project into container", "copy in"),
    ("Running before_all", "before_all"),
    ("Setting up build environment", "requirements"),
    ("Running before_build", "before_build"),
    ("Building wheel", "compile"),
    ("Repairing wheel", "repair"),
    ("Testing wheel", "test"),
    ("Copying wheels back to host", "copy out"),
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FOLD = re.compile(r"^(?:::group::|##\[group\])")
_NINJA = re.compile(r"^\s*\[(\d+)/(\d+)\]\s")
_PERCENT = re.compile(r"^\s*\[\s*(\d{1,3})%\]\s")


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class Phases:
    """Feed it each line of cibuildwheel's output; it calls ``echo`` with ``[job] phase (elapsed)``."""

    def __init__(
        self,
        job_id: str,
        echo: Callable[[str], None],
        *,
        interactive: bool = False,
        interval: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.job_id = job_id
        self.echo = echo
        self.interactive = interactive
        self.interval = interval
        self.clock = clock
        self.start = clock()
        self.phase: str | None = None
        self.last_count = -interval

    def feed(self, line: str) -> None:
        text = _FOLD.sub("", _ANSI.sub("", line)).strip()
        for marker, phase in STEPS:
            # cibuildwheel's own step line ("Building wheel..."), not pip's "Building wheel for x"
            if text.startswith(marker) and text.endswith("..."):
                if phase != self.phase:
                    self.phase = phase
                    self.echo(f"[{self.job_id}] {phase} ({_elapsed(self.clock() - self.start)})")
                return
        if self.phase != "compile" or not self.interactive:
            return
        m = _NINJA.match(line)
        count = f"{m.group(1)} of {m.group(2)}" if m else None
        if count is None:
            p = _PERCENT.match(line)
            count = f"{p.group(1)}%" if p else None
        now = self.clock()
        if count is not None and now - self.last_count >= self.interval:
            self.last_count = now
            self.echo(f"[{self.job_id}] compile {count} ({_elapsed(now - self.start)})")
