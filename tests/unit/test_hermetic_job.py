"""A hermetic job in ``build_one`` (the stand-ins of test_build_job.py: no engine, no compiler, no
index): the wheelhouse resolved before cibuildwheel, its lock in the inputs key, the manifest and
beside the wheel; ``network: true`` as before; the errors of a build that needed the network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from buildkit import manifest
from buildkit.building import ccache, cibw, requirements, runner
from buildkit.errors import BuildFailed, RecipeError
from buildkit.plan.models import Job
from buildkit.recipe import Recipe
from tests.unit.test_build_job import JOB, Harness, make_harness


@pytest.fixture
def h(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Harness:
    return make_harness(tmp_path, monkeypatch)


def test_the_lock_is_staged_recorded_and_moved_with_the_wheel(h: Harness) -> None:
    recipe, job = h.recipe()
    seen: list[list[str]] = []
    h.cibuildwheel = lambda src, _out: seen.append(
        sorted(p.name for p in (src / ".buildkit" / cibw.WHEELHOUSE_NAME).iterdir())
    )
    result = h.build(recipe, job)
    assert result.status == "passed", result.message
    assert seen == [["setuptools-80.0.0-py3-none-any.whl"]]  # staged before cibuildwheel ran
    assert h.resolved == [{"isolation": True, "wheelhouse": None}]
    wheel = h.wheel_of()
    assert wheel is not None
    data = manifest.read(wheel)
    assert data["network"] is False
    recorded = data["build_requirements"]
    assert [f["file"] for f in recorded["files"]] == ["setuptools-80.0.0-py3-none-any.whl"]
    assert recorded["lock"] == wheel.name + manifest.LOCK_SUFFIX
    lock_file = manifest.lock_path(wheel)
    assert lock_file.is_file()
    assert f"setuptools==80.0.0 --hash=sha256:{recorded['files'][0]['sha256']}" in lock_file.read_text()
    engine = h.environments[0]["CIBW_CONTAINER_ENGINE"]
    assert "--network=none" in engine
    assert 'PIP_NO_INDEX="1"' in h.environments[0]["CIBW_ENVIRONMENT_LINUX"]


def test_the_up_to_date_check_asks_no_index_and_sees_what_is_requested(h: Harness) -> None:
    recipe, job = h.recipe()
    assert h.build(recipe, job).status == "passed"
    h.wheelhouse = (("setuptools", "80.1.0"),)  # the index got a newer setuptools
    assert h.build(recipe, job).status == "up-to-date"  # what is requested did not change
    assert len(h.resolved) == 1  # the up-to-date check resolved nothing
    (h.source / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools>=80.1"]\n')
    again = h.build(recipe, job)
    assert again.status == "passed" and len(h.builds) == 2 and len(h.resolved) == 2
    wheel = h.wheel_of()
    assert wheel is not None
    assert manifest.read(wheel)["build_requirements"]["files"][0]["version"] == "80.1.0"
    forced = h.build(recipe, job, force=True)  # --force resolves again
    assert forced.status == "passed" and len(h.resolved) == 3


def test_network_true_resolves_nothing_on_the_host(h: Harness) -> None:
    recipe, job = h.recipe(extra="network: true\n")
    assert recipe.network is True
    staged: list[list[str]] = []
    h.cibuildwheel = lambda src, _out: staged.append(sorted(str(p.relative_to(src)) for p in src.rglob("*")))
    assert h.build(recipe, job).status == "passed"
    # no wheelhouse: .buildkit holds the HIP launcher only (ccache.STAGED_LAUNCHER, every build's)
    assert h.resolved == [] and [[p for p in s if not p.startswith("pkg")] for s in staged] == [
        [".buildkit", ccache.STAGED_LAUNCHER]
    ]
    wheel = h.wheel_of()
    assert wheel is not None
    data = manifest.read(wheel)
    assert (data["network"], data["build_requirements"]) == (True, None)
    assert not manifest.lock_path(wheel).exists()
    env = h.environments[0]
    assert "--network" not in env["CIBW_CONTAINER_ENGINE"]
    assert "PIP_NO_INDEX" not in env["CIBW_ENVIRONMENT_LINUX"]


def test_a_recipe_requirement_without_a_wheel_is_the_recipes_error(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipe, job = h.recipe()
    assert h.build(recipe, job).status == "passed"
    before = {p.name: p.read_bytes() for p in (h.out / JOB).iterdir()}

    def refuse(recipe: Recipe, job: Job, *_args: Any, **_kwargs: Any) -> requirements.Lock:
        raise recipe.error("no wheel of demo-other==1.0", ("name",), hint="set `network: true`")

    monkeypatch.setattr(requirements, "resolve", refuse)
    (h.source / "pkg" / "kernel.hip").write_text("__global__ void k9() {}\n")
    with pytest.raises(RecipeError) as info:
        h.build(recipe, job)
    assert info.value.exit_code == 3
    assert len(h.builds) == 1  # refused before any container
    assert {p.name: p.read_bytes() for p in (h.out / JOB).iterdir()} == before
    assert sorted(p.name for p in h.out.iterdir()) == [JOB]  # no staging folder left


def test_a_missing_build_requirement_fails_the_job_before_cibuildwheel(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipe, job = h.recipe()

    def refuse(*_args: Any, **_kwargs: Any) -> requirements.Lock:
        raise BuildFailed("cp313-rocm5.7: no wheel of rocm-buildkit-nonexistent-pkg==1.0 ...")

    monkeypatch.setattr(requirements, "resolve", refuse)
    result = h.build(recipe, job)
    assert result.status == "build-failed" and "rocm-buildkit-nonexistent-pkg==1.0" in result.message
    assert h.builds == [] and h.wheel_of() is None


def _fails_with(output: str) -> Any:
    def run(staged: Path, out: Path, env: dict[str, str], log: Any, *_args: Any, **_kwargs: Any) -> None:
        log.write(output)
        raise BuildFailed("cibuildwheel failed (exit 1); last lines:\n      ...")

    return run


def test_a_hook_needing_the_index_gets_the_fix(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    pip = "ERROR: No matching distribution found for six\n"
    monkeypatch.setattr(runner, "run_cibuildwheel", _fails_with(pip))
    recipe, job = h.recipe()
    result = h.build(recipe, job)
    assert result.status == "build-failed"
    assert "hint: pip in the build container found no six in the wheelhouse" in result.message
    assert "network: true" in result.message
    # with the network the same failure is pip's own, and gets no hermetic hint
    recipe, job = h.recipe(extra="network: true\n", name="networked.yaml")
    assert "hint" not in h.build(recipe, job).message


def test_the_host_resolution_output_is_not_read_as_the_containers(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only what cibuildwheel printed is searched: the host's pip output before it (here with a
    network error) says nothing about the container."""
    original = requirements.resolve

    def noisy(
        recipe: Recipe, job: Job, source: Path, dest: Path, log: Any, **kwargs: Any
    ) -> requirements.Lock:
        log.write(
            "WARNING: Retrying after connection broken by 'NewConnectionError: "
            "Failed to establish a new connection'\n"
        )
        return original(recipe, job, source, dest, log, **kwargs)

    monkeypatch.setattr(requirements, "resolve", noisy)
    monkeypatch.setattr(runner, "run_cibuildwheel", _fails_with("kernel.hip:1: error: syntax\n"))
    recipe, job = h.recipe()
    result = h.build(recipe, job)
    assert result.status == "build-failed" and "hint" not in result.message, result.message


def test_the_manifest_lock_is_valid_json_for_verify(h: Harness) -> None:
    recipe, job = h.recipe()
    h.build(recipe, job)
    wheel = h.wheel_of()
    assert wheel is not None
    data = json.loads(manifest.manifest_path(wheel).read_text())
    lock = requirements.Lock.from_json(JOB, data["build_requirements"])
    assert lock.sha256 == data["build_requirements"]["sha256"]
    assert lock.render() == manifest.lock_path(wheel).read_text()
