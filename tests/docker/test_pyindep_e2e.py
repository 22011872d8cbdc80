"""Python-independent wheels end to end (issue 30), on the real engine: a small ctypes-style project
(a C library with HIP device code, built with CMake through scikit-build-core, loaded with ctypes)
built as ONE ``py3-none`` job, and a limited-API extension module as ONE ``cp312-abi3`` job, each
gated (job-identity checks the tag's claim) and smoke-tested under every CPython the recipe plans,
with the very smoke command the build summary prints. The ctypes project depends on
typing-extensions from PyPI: the printed command installs it hermetically (downloaded on the host,
the container without network).

The recipes (tests/data/pyindep/*.yaml) plan the three CPythons of the ROCm 7.2 builder
(debian-sid-rocm: 3.13, 3.14, 3.15): the tests read the Pythons from the plan, build one job and smoke
it under each of them in the 7.2 runtime image.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from buildkit.inspect import inspect_wheel
from buildkit.manifest import read as read_manifest
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe
from tests.helpers.wheels_for_publish import signing_environment

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "pyindep"
RECIPES = {"ctypes": DATA / "ctypes.yaml", "abi3": DATA / "abi3.yaml"}
TAGS = {"ctypes": "py3-none", "abi3": "cp312-abi3"}


def _plan_pythons(name: str) -> tuple[str, ...]:
    (job,) = expand(load_recipe(RECIPES[name]), env={}, enumerator=list).jobs
    return job.pythons


CASES = [(name, python) for name in RECIPES for python in _plan_pythons(name)]


class Built:
    def __init__(self, tmp: Path, proc: subprocess.CompletedProcess[str], seconds: float) -> None:
        self.tmp, self.proc, self.seconds = tmp, proc, seconds
        self.smoke: subprocess.CompletedProcess[str] | None = None

    @property
    def printed_smoke(self) -> str:
        (line,) = [
            x.strip() for x in self.proc.stdout.splitlines() if x.strip().startswith("buildkit smoke ")
        ]
        return line


@pytest.fixture(scope="module", autouse=True)
def signing_keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The builds sign their attestations and publish trusts that key: ``publish --to`` runs the gate
    again with the configuration they sign (a publish trusts no unsigned manifest)."""
    with pytest.MonkeyPatch.context() as patch:
        signing_environment(patch, tmp_path_factory.mktemp("keys"))
        yield


@pytest.fixture(scope="module")
def built(
    docker_client: Any, debian_rocm_image: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Built]:
    """Each recipe built once (``buildkit build`` as a user runs it), then smoked with the command
    its summary prints, run as printed from the same folder."""
    out: dict[str, Built] = {}
    for name, recipe in RECIPES.items():
        tmp = tmp_path_factory.mktemp(name)
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "buildkit", "build", str(recipe), "--out", "dist", "--log-dir", "logs"],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        out[name] = Built(tmp, proc, time.monotonic() - started)
        print(f"{name}: built in {out[name].seconds:.1f} s", file=sys.stderr)
    return out


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_one_job_builds_the_wheel_of_every_planned_python_and_the_gate_passes_it(
    name: str, built: dict[str, Built]
) -> None:
    b = built[name]
    assert b.proc.returncode == 0, b.proc.stdout[-4000:] + b.proc.stderr[-4000:]
    plan = expand(load_recipe(RECIPES[name]), env={}, enumerator=list)
    (job,) = plan.jobs  # one job for every planned Python
    assert job.pythons == load_recipe(RECIPES[name]).python
    (wheel,) = (b.tmp / "dist" / job.id).glob("*.whl")
    interpreters = {t.split("-")[0] + "-" + t.split("-")[1] for t in inspect_wheel(wheel).tags}
    assert interpreters == {TAGS[name]}
    data = read_manifest(wheel)
    assert data["verdict"]["passed"] is True
    assert data["job"]["id"] == job.id and data["job"]["serves"] == list(job.pythons)
    assert data["job"]["wheel_tag"] == TAGS[name]
    assert not any(f["rule"] == "job-identity" for f in data["verdict"]["findings"])


@pytest.mark.parametrize(("name", "python"), CASES, ids=[f"{n}-cp{p.replace('.', '')}" for n, p in CASES])
def test_the_printed_smoke_command_passes_under_each_python_the_wheel_serves(
    name: str, python: str, built: dict[str, Built]
) -> None:
    b = built[name]
    assert b.proc.returncode == 0, b.proc.stdout[-4000:]
    if b.smoke is None:
        argv = shlex.split(b.printed_smoke)
        assert argv[:2] == ["buildkit", "smoke"]
        b.smoke = subprocess.run(
            [sys.executable, "-m", "buildkit", *argv[1:]],
            cwd=b.tmp,
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
    smoke = b.smoke
    assert smoke.returncode == 0, smoke.stdout[-4000:] + smoke.stderr[-4000:]
    passed = [x for x in smoke.stdout.splitlines() if x.startswith("PASSED ")]
    assert any(f"(CPython {python}) in " in x for x in passed), smoke.stdout
    assert f"setup    python{python} -m venv: ok" in smoke.stdout
    assert len(passed) == len(_plan_pythons(name))


def test_the_ctypes_wheels_pypi_dependency_is_installed_hermetically(built: dict[str, Built]) -> None:
    """typing-extensions comes from the host (the user's pip configuration), the container has no
    network: the deps step names the download, and the wheel imports it (its __init__ does)."""
    b = built["ctypes"]
    assert b.proc.returncode == 0, b.proc.stdout[-4000:]
    argv = shlex.split(b.printed_smoke)
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", *argv[1:], "--json"],
        cwd=b.tmp,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    for result in json.loads(proc.stdout)["results"]:
        deps = [s for s in result["steps"] if s["kind"] == "deps"]
        assert len(deps) == 1 and deps[0]["passed"], result
        assert "typing-extensions>=4.5.0" in deps[0]["what"]
        assert "typing_extensions-" in deps[0]["output"]  # what pip downloaded on the host


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_publish_takes_the_one_wheel_of_the_cell(name: str, built: dict[str, Built]) -> None:
    """The manifest of a Python-independent job's wheel is what publish checks: one wheel, published."""
    b = built[name]
    assert b.proc.returncode == 0, b.proc.stdout[-4000:]
    site = b.tmp / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", "publish", "dist", "--to", str(site)],
        cwd=b.tmp,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = (site / "simple").glob("*/*.whl")
    assert f"-{TAGS[name]}-" in wheel.name
