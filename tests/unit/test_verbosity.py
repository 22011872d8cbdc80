"""The group's -q/-v and colour (issue 27): ``buildkit -q`` drops notes and progress lines (not
warnings), ``buildkit -v`` is each command's -v, both at once is a usage error; PASS/FAIL/ERROR are
coloured only on a terminal, never with NO_COLOR set or TERM=dumb."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from buildkit.cli import options
from buildkit.cli.build import _progress_echo
from buildkit.cli.options import colour_verdicts
from tests.helpers.wheel_zip import write_wheel

ROOT = Path(__file__).resolve().parents[2]
AITER = str(ROOT / "recipes" / "aiter.yaml")  # plans with notes (gfx950 dropped for ROCm 6.4)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTORCH_ROCM_ARCH": ""},
        timeout=120,
    )


def test_quiet_plan_keeps_the_notes_in_its_output_only() -> None:
    loud, quiet = _run("plan", AITER), _run("-q", "plan", AITER)
    assert loud.returncode == quiet.returncode == 0
    assert "buildkit plan: note: ROCm 6.4: gfx950: dropped" in loud.stderr
    assert quiet.stderr == ""
    assert quiet.stdout == loud.stdout and "note: ROCm 6.4: gfx950: dropped" in quiet.stdout


def test_quiet_and_verbose_contradict() -> None:
    proc = _run("-q", "-v", "plan", AITER)
    assert proc.returncode == 2 and "-q and -v contradict each other" in proc.stderr


def test_quiet_build_progress_keeps_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        options.set_verbosity(quiet=True, verbose=False)
        _progress_echo("[cp312-rocm7.2] compile (1m10s)")
        _progress_echo("[cp312-rocm7.2] warning: cannot remove the superseded refusal x")
    finally:
        options.set_verbosity(quiet=False, verbose=False)
    err = capsys.readouterr().err
    assert err == "[cp312-rocm7.2] warning: cannot remove the superseded refusal x\n"


def test_verdict_colours_only_on_a_terminal_without_no_color() -> None:
    text = "  verdict: PASS (0 error(s))\ncp313  gate-failed  FAIL (2 errors)\nPASSING stays"
    coloured = colour_verdicts(text, tty=True, env={})
    assert click.style("PASS", fg="green", bold=True) in coloured
    assert click.style("FAIL", fg="red", bold=True) in coloured
    assert "PASSING stays" in coloured  # whole words only
    assert click.unstyle(coloured) == text
    assert colour_verdicts(text, tty=False, env={}) == text
    assert colour_verdicts(text, tty=True, env={"NO_COLOR": "1"}) == text
    assert colour_verdicts(text, tty=True, env={"TERM": "dumb"}) == text
    assert colour_verdicts(text, tty=True, env={"NO_COLOR": ""}) == coloured  # empty: not set


def test_group_verbose_is_the_commands_own(tmp_path: Path) -> None:
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    write_wheel(wheel, {"demo/__init__.py": b""})
    own, group = _run("check", "-v", str(wheel)), _run("-v", "check", str(wheel))
    assert own.returncode == group.returncode == 0
    assert own.stdout == group.stdout and "\x1b[" not in group.stdout  # not a terminal: no colour
