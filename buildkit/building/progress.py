"""What a running build is doing, read from cibuildwheel's output: :class:`Phases`, shown by
:class:`LiveBoard` on a terminal.

Off a terminal (a pipe, a file, CI=true, ``--json``), the job prints one line when its phase changes
(with a stderr terminal but no board, the compile count too, at most every ``interval`` seconds).
``buildkit build -v`` streams the whole log instead of either."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TextIO

if TYPE_CHECKING:
    from rich.console import RenderableType

#: cibuildwheel's step names -> the phase a person reads
_STEPS: tuple[tuple[str, str], ...] = (
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
#: CMake configuring a build tree (scikit-build-core, a setup.py running cmake), before the compiles
_CONFIGURE = re.compile(
    r"^-- (The \w+ compiler identification|Detecting \w+ compiler|Configuring|Generating)"
)


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class Board(Protocol):
    """Where a job's phase goes on a terminal (:class:`LiveBoard`); ``count`` is the compile count
    (``"12 of 240"``, ``"45%"``)."""

    def phase(self, job_id: str, phase: str, count: str | None = None) -> None: ...


def _compile_count(line: str) -> str | None:
    """The build tool's count in a line of its output: ninja's ``[12/240]`` as ``12 of 240``, CMake's
    ``[ 45%]`` as ``45%``."""
    m = _NINJA.match(line)
    if m:
        return f"{m.group(1)} of {m.group(2)}"
    p = _PERCENT.match(line)
    return f"{p.group(1)}%" if p else None


class Phases:
    """Feed it each line of cibuildwheel's output; it calls ``echo`` with ``[job] phase (elapsed)``,
    or, given a ``board``, tells the board every phase and compile count and echoes nothing."""

    def __init__(
        self,
        job_id: str,
        echo: Callable[[str], None],
        *,
        interactive: bool = False,
        interval: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
        board: Board | None = None,
    ) -> None:
        self.job_id = job_id
        self.echo = echo
        self.interactive = interactive
        self.interval = interval
        self.clock = clock
        self.board = board
        self.start = clock()
        self.phase: str | None = None
        self.last_count = -interval
        self.counted = False

    def feed(self, line: str) -> None:
        text = _FOLD.sub("", _ANSI.sub("", line)).strip()
        for marker, phase in _STEPS:
            # cibuildwheel's own step line ("Building wheel..."), not pip's "Building wheel for x"
            if text.startswith(marker) and text.endswith("..."):
                if phase != self.phase:
                    self.phase = phase
                    self.counted = False
                    if self.board is not None:
                        self.board.phase(self.job_id, phase)
                    else:
                        self.echo(f"[{self.job_id}] {phase} ({_elapsed(self.clock() - self.start)})")
                return
        if self.phase != "compile":
            return
        if self.board is not None:
            self._tell_board(line, text)
            return
        if not self.interactive:
            return
        count = _compile_count(line)
        now = self.clock()
        if count is not None and now - self.last_count >= self.interval:
            self.last_count = now
            self.echo(f"[{self.job_id}] compile {count} ({_elapsed(now - self.start)})")

    def _tell_board(self, line: str, text: str) -> None:
        assert self.board is not None
        count = _compile_count(line)
        if count is not None:
            self.counted = True
            self.board.phase(self.job_id, "compile", count)
        elif not self.counted and _CONFIGURE.match(text):
            self.board.phase(self.job_id, "configure")


@dataclass
class _Row:
    phase: str
    count: str | None
    started: float


class LiveBoard:
    """The build on a terminal (rich.live): one row per running job in plan order, and how many jobs are
    done and waiting; lines given to :meth:`echo` print above it. A context manager; thread-safe."""

    def __init__(
        self,
        jobs: Sequence[str] = (),
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        refresh_per_second: float = 4.0,
    ) -> None:
        # rich is imported here: only `buildkit build` on a terminal draws a board (start-up time)
        from rich.console import Console
        from rich.live import Live

        self.jobs = list(jobs)
        self.clock = clock
        self._lock = threading.Lock()
        self._rows: dict[str, _Row] = {}
        self._done: set[str] = set()
        plain = bool(os.environ.get("NO_COLOR"))  # no colour, nor bold (https://no-color.org)
        self.console = Console(
            file=stream,
            stderr=stream is None,
            color_system=None if plain else "auto",
            highlight=False,
            markup=False,
            emoji=False,
        )
        self._live = Live(
            console=self.console,
            get_renderable=self.render,
            refresh_per_second=refresh_per_second,
            transient=True,
        )

    def __enter__(self) -> LiveBoard:
        self._live.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._live.stop()

    def echo(self, line: str) -> None:
        """A line above the board (a note, a warning, a job's result)."""
        from rich.text import Text  # rich only for the board on a terminal (start-up time)

        self.console.print(Text(line))

    def expect(self, jobs: Sequence[str]) -> None:
        """The jobs the build runs, in plan order (the rows' order)."""
        with self._lock:
            self.jobs = list(jobs)

    def phase(self, job_id: str, phase: str, count: str | None = None) -> None:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None:
                self._rows[job_id] = _Row(phase, count, self.clock())
            else:
                row.phase, row.count = phase, count

    def wait(self, job_id: str) -> None:
        """The job's image is ready; it waits for a slot (``--parallel``): no longer a running row."""
        with self._lock:
            self._rows.pop(job_id, None)

    def done(self, job_id: str) -> None:
        with self._lock:
            self._rows.pop(job_id, None)
            self._done.add(job_id)

    def render(self) -> RenderableType:
        # rich only for the board on a terminal (start-up time)
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        now = self.clock()
        with self._lock:
            running = [(job, self._rows[job]) for job in self.jobs if job in self._rows]
            done = len(self._done)
            total = len(self.jobs)
        table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), header_style="bold")
        for name in ("job", "phase", "progress", "", "elapsed"):
            table.add_column(name, no_wrap=True, justify="right" if name == "elapsed" else "left")
        for job, row in running:
            bar: Any = ""
            if row.count is not None and " of " in row.count:
                compiled, compiles = (int(n) for n in row.count.split(" of "))
                bar = ProgressBar(total=compiles, completed=compiled, width=24)
            elif row.count is not None and row.count.endswith("%"):
                bar = ProgressBar(total=100, completed=int(row.count[:-1]), width=24)
            table.add_row(
                job, Text(row.phase, style="cyan"), row.count or "", bar, _elapsed(now - row.started)
            )
        waiting = total - done - len(running)
        table.caption = f"{done} of {total} jobs done, {len(running)} running, {waiting} waiting"
        table.caption_justify = "left"
        return table
