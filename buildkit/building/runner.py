"""Running cibuildwheel for one job: ``python -m cibuildwheel`` in its own session, its output into the
job's log (and the terminal with ``--verbose``), Ctrl-C passed on to it so that it removes its
container itself; a failure is a :class:`~buildkit.errors.BuildFailed` with the last lines."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from buildkit.building import Echo
from buildkit.errors import BuildFailed

#: the cibuildwheel processes running now (``build --parallel``: one per worker thread), and whether
#: the build was interrupted: a signal reaches the main thread only, which passes it on (:func:`cancel`)
_LIVE: set[subprocess.Popen[bytes]] = set()
_LOCK = threading.Lock()
_CANCELLED = threading.Event()


def cancel() -> None:
    """Ctrl-C for every running cibuildwheel (each removes its container itself); a job that has not
    started it yet is interrupted when it would."""
    _CANCELLED.set()
    with _LOCK:
        live = list(_LIVE)
    for proc in live:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)


def reset() -> None:
    """A new build: nothing cancelled."""
    _CANCELLED.clear()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run_cibuildwheel(
    staged: Path,
    out: Path,
    env: Mapping[str, str],
    log: TextIO,
    echo: Echo,
    *,
    verbose: bool,
    phases: Callable[[str], None] | None = None,
) -> None:
    """Run cibuildwheel on ``staged``: every line to ``log``; with ``verbose`` to ``echo`` too, else
    to ``phases`` (:class:`buildkit.building.progress.Phases`: a line per phase change)."""
    cmd = [sys.executable, "-m", "cibuildwheel", "--platform", "linux", "--output-dir", str(out), "."]
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    if _CANCELLED.is_set():
        raise KeyboardInterrupt
    proc = subprocess.Popen(
        cmd,
        cwd=staged,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # our Ctrl-C handling decides when it stops
    )
    assert proc.stdout is not None
    with _LOCK:
        _LIVE.add(proc)
    tail: list[str] = []
    try:
        for raw in proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            log.write(line + "\n")
            tail = [*tail[-30:], line]
            if verbose:
                echo("    " + line)
            elif phases is not None:
                phases(line)
        rc = proc.wait()
    except KeyboardInterrupt:
        _stop(proc)  # let cibuildwheel remove its container itself, then make sure
        raise
    finally:
        with _LOCK:
            _LIVE.discard(proc)
    if _CANCELLED.is_set():  # stopped by cancel(): an interrupt, not a failure
        _stop(proc)
        raise KeyboardInterrupt
    if rc != 0:
        raise BuildFailed(
            f"cibuildwheel failed (exit {rc}); last lines:\n      " + "\n      ".join(tail[-15:])
        )
