"""One -q/-v for every command, after its name as before it (issue 36: `plan -v`, `smoke -v` and
`build -q` were `No such option`, `-q` did not quiet `publish`, and `smoke` printed a 377-line
`docker build` log without `-v`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

from buildkit.cli import COMMANDS, cli
from buildkit.image.engine import EngineLine
from buildkit.smoke import SmokeResult, Step, render_human
from tests.helpers.wheels_for_publish import DEMO_RECIPE, job_wheel

ROOT = Path(__file__).resolve().parents[2]


def _commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    found = []
    for name in sorted(COMMANDS):
        command = cli.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            found += [(f"{name} {sub}", c) for sub, c in sorted(command.commands.items())]
        else:
            found.append((name, command))
    return found


def test_every_command_takes_q_and_v() -> None:
    missing = []
    for name, command in _commands():
        opts = {opt for param in command.params for opt in param.opts}
        missing += [f"{name} {flag}" for flag in ("-q", "-v") if flag not in opts]
    assert not missing, missing
    assert len(_commands()) > len(COMMANDS)  # the groups' commands too (image build, rocm ls, ...)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )


def test_q_after_the_command_drops_plans_notes_and_publishs_progress(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("")
    recipe = tmp_path / "demo.yaml"
    recipe.write_text(DEMO_RECIPE)
    noisy = _cli("plan", "demo.yaml", "--json", cwd=tmp_path)
    assert noisy.returncode == 0 and "note:" in noisy.stderr  # the case -q quiets
    quiet = _cli("plan", "demo.yaml", "--json", "-q", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == noisy.stdout
    assert _cli("plan", "demo.yaml", "-v", cwd=tmp_path).returncode == 0
    job_wheel(tmp_path / "dist", recipe, "cp312-rocm6.4")
    told = _cli("publish", "dist", "--recipe", "demo.yaml", "--dry-run", cwd=tmp_path)
    assert told.returncode == 0 and "would publish" in told.stderr + told.stdout
    said = _cli("publish", "dist", "--recipe", "demo.yaml", "--dry-run", "-q", cwd=tmp_path)
    assert said.returncode == 0 and said.stderr == "", said.stderr
    assert _cli("-q", "plan", "demo.yaml", "-v", cwd=tmp_path).returncode == 2  # one or the other


def test_smoke_shows_a_commands_output_on_v_and_always_on_failure() -> None:
    steps = (
        Step("install", "pip install demo.whl", 0, "Successfully installed demo-1.0\n"),
        Step("command", "python -c 'print(42)'", 0, "42\n"),
    )
    passed = [SmokeResult("import", "rocm-buildkit/debian-runtime", "passed", steps=steps)]
    assert "| 42" not in render_human(passed)
    assert "| 42" in render_human(passed, verbose=True)
    failing = (Step("command", "python -c 'boom'", 1, "Traceback\nNameError: name 'boom' is not defined\n"),)
    failed = [SmokeResult("import", "x", "failed", reason="boom", steps=failing)]
    assert "| NameError: name 'boom' is not defined" in render_human(failed)


def test_an_image_builds_own_lines_are_marked_as_the_engines() -> None:
    """smoke prints the engine's lines only on -v: they are told apart by their type."""
    from buildkit.image.engine import stream_build

    class _Api:
        def build(self, **_: object) -> object:
            return iter([{"stream": "Step 1/2 : FROM debian:sid-slim\n"}, {"aux": {"ID": "sha256:1"}}])

    class _Client:
        api = _Api()

    seen: list[str] = []

    class _Log:
        name = "log"

        def write(self, _: str) -> None: ...

        def flush(self) -> None: ...

    stream_build(_Client(), Path("."), "x", "t:1", {}, {}, _Log(), seen.append)  # type: ignore[arg-type]
    assert seen == ["Step 1/2 : FROM debian:sid-slim"] and isinstance(seen[0], EngineLine)
