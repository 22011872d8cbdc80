"""One mistake, one error: every command that takes a job id or a recipe answers the same mistake with
the same exit code and the same message, without a traceback.

The commands are found through the click group (:data:`buildkit.cli.COMMANDS`): every one with a
``--job`` option, and every one with a recipe parameter, must be walked here (a new command taking
either fails :func:`test_every_command_taking_a_job_or_a_recipe_is_walked` until it is added).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import click
import pytest

from buildkit import manifest
from buildkit.cli import COMMANDS, cli, main
from buildkit.errors import RecipeError, UnknownJob
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe
from tests.helpers.wheels_for_publish import make_wheel

DATA = Path(__file__).resolve().parents[1] / "data"
RECIPE = DATA / "recipes" / "matrix.yaml"  # no Docker (no from_image), no checkout (a git ref)
ARCHS = "gfx90a;gfx942"  # the recipe takes its archs from the environment

Argv = Callable[[Path, str, Path], list[str]]  # (recipe, job id, a scratch folder) -> arguments


def _wheel(tmp: Path) -> Path:
    return make_wheel(tmp / "dist", "demo_pkg-1.0-py3-none-any.whl")


def _built_wheel(tmp: Path, job: str = "cp312-rocm6.4") -> Path:
    """A wheel whose manifest has the shape verify reads (a recipe and a job), so verify gets as
    far as the recipe."""
    wheel = _wheel(tmp)
    data = manifest.read(wheel)
    data["recipe"] = {"file": "matrix.yaml", "sha256": "0" * 64, "name": "matrix-demo"}
    data["job"] = {"id": job, "pytorch_rocm_arch": ARCHS}
    manifest.manifest_path(wheel).write_text(json.dumps(data), encoding="utf-8")
    return wheel


#: command -> its arguments with --job JOB and the recipe R
JOB_COMMANDS: dict[str, Argv] = {
    "build": lambda r, job, tmp: ["build", str(r), "--job", job, "--out", str(tmp / "out")],
    "check": lambda r, job, tmp: ["check", str(tmp / "w.whl"), "--recipe", str(r), "--job", job],
    "diff": lambda r, job, tmp: [
        "diff",
        str(tmp / "a.whl"),
        str(tmp / "b.whl"),
        "--recipe",
        str(r),
        "--job",
        job,
    ],
}

#: command -> its arguments naming the recipe R (and whatever else it needs to reach it)
RECIPE_COMMANDS: dict[str, Argv] = {
    **JOB_COMMANDS,
    "plan": lambda r, job, tmp: ["plan", str(r)],
    "archs": lambda r, job, tmp: ["archs", "--recipe", str(r), "--rocm", "6.4"],
    "publish": lambda r, job, tmp: ["publish", str(tmp), "--recipe", str(r), "--dry-run"],
    "smoke": lambda r, job, tmp: ["smoke", str(_wheel(tmp)), "--recipe", str(r)],
    "verify": lambda r, job, tmp: ["verify", str(_built_wheel(tmp)), "--recipe", str(r)],
}


def _params(name: str) -> set[str]:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None, name
    names: set[str] = set()
    for param in command.params:
        names.update(param.opts if isinstance(param, click.Option) else [param.name or ""])
    return names


def test_every_command_taking_a_job_or_a_recipe_is_walked() -> None:
    takes_job = {name for name in COMMANDS if "--job" in _params(name)}
    takes_recipe = {name for name in COMMANDS if {"--recipe", "recipe"} & _params(name)}
    assert takes_job == set(JOB_COMMANDS)
    assert takes_recipe == set(RECIPE_COMMANDS)
    assert takes_job and takes_recipe


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``buildkit ARGV`` in this process: (exit code, stderr). An exception that is not an expected
    failure escapes main() and fails the test (it would be a traceback)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    code = info.value.code
    assert isinstance(code, int), code
    return code, err


def _same_everywhere(
    commands: dict[str, Argv],
    recipe: Path,
    job: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    expected_code: int,
    expected_message: str,
) -> None:
    seen: dict[str, tuple[int, str]] = {}
    for name, argv in sorted(commands.items()):
        scratch = tmp_path / name
        scratch.mkdir(parents=True)
        code, err = _run(argv(recipe, job, scratch), capsys)
        lines = [line for line in err.splitlines() if line.startswith(expected_message.splitlines()[0])]
        seen[name] = (code, "\n".join(lines))
        assert lines, f"{name}: {err}"
        assert expected_message in err, f"{name}: {err}"
    assert set(seen.values()) == {(expected_code, expected_message.splitlines()[0])}, seen


@pytest.fixture
def recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PYTORCH_ROCM_ARCH", ARCHS)
    monkeypatch.delenv("GPU_ARCHS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    copy = tmp_path / "recipes" / "matrix.yaml"
    copy.parent.mkdir()
    shutil.copyfile(RECIPE, copy)
    return copy


def test_an_unknown_job_id_is_one_error(
    recipe: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = expand(load_recipe(recipe))
    assert plan.jobs
    with pytest.raises(UnknownJob) as info:
        plan.job("nope")
    message = str(info.value)
    assert message == (
        f"{recipe}: no job 'nope' in the plan of matrix-demo; known: " + ", ".join(j.id for j in plan.jobs)
    )
    _same_everywhere(JOB_COMMANDS, recipe, "nope", tmp_path / "runs", capsys, UnknownJob.exit_code, message)
    assert UnknownJob.exit_code == 2


def test_a_manifest_naming_an_unknown_job_is_the_same_error(
    recipe: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verify takes its job id from the wheel's manifest: a recipe whose plan no longer has that job
    gives the very message ``--job`` does."""
    wheel = _built_wheel(tmp_path, job="nope")
    data = manifest.read(wheel)
    data["recipe"]["sha256"] = manifest.sha256_file(recipe)
    manifest.manifest_path(wheel).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(UnknownJob) as info:
        expand(load_recipe(recipe)).job("nope")
    code, err = _run(["verify", str(wheel), "--recipe", str(recipe)], capsys)
    assert (code, err.strip().splitlines()[-1]) == (2, str(info.value))


def test_a_recipe_that_does_not_exist_is_one_error(
    recipe: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "recipes" / "missing.yaml"
    with pytest.raises(RecipeError) as info:
        load_recipe(missing)
    message = str(info.value)
    assert message.startswith(f"{missing}: error: cannot read the recipe: ")
    _same_everywhere(RECIPE_COMMANDS, missing, "any", tmp_path / "runs", capsys, 3, message)


@pytest.mark.parametrize(
    "text",
    [
        "name: demo\npython: ['3.12'\nrocm: ['6.4']\n",  # YAML syntax
        "name: demo\nname: again\n",  # a duplicate key
        "- name: demo\n",  # not a mapping
    ],
)
def test_a_malformed_recipe_is_one_error(
    recipe: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    bad = tmp_path / "recipes" / "bad.yaml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(RecipeError) as info:
        load_recipe(bad)
    message = str(info.value)
    assert message.startswith(f"{bad}:") and ": error: " in message.splitlines()[0]
    _same_everywhere(RECIPE_COMMANDS, bad, "any", tmp_path / "runs", capsys, 3, message)
