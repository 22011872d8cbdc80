"""``build.job.build_one`` around a stand-in for cibuildwheel, the gate and the Docker engine.

What is real: the recipe and plan, source staging, the inputs key, the up-to-date check, the move
into ``--out``, the removal of stale outputs, the staging folder, the error mapping. What is a
stand-in (no engine, no compiler here): ``runner.run_cibuildwheel`` writes a small wheel made from the
staged source; ``gate_wheel`` applies the recipe's size limit only (the real gate is tested in
test_gate.py and, on real wheels, in tests/docker/test_build_e2e.py); the Docker client is a fake
that can raise what docker-py raises when the engine dies (``requests.ConnectionError``) at a
chosen step: a mock, standing in for the socket proxy of the docker test.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker.errors
import pytest
import requests

from buildkit import docker_engine, manifest
from buildkit.building import (
    ccache,
    cibw,
    gating,
    provenance,
    requirements,
    runner,
    staging,
    summary,
    toolchain,
)
from buildkit.building import job as build_job
from buildkit.building.key import inputs_key, tool_versions
from buildkit.building.steps import gate as gate_step
from buildkit.errors import BuildFailed, DockerUnavailable, Interrupted
from buildkit.gate.config import GateConfig, gate_key
from buildkit.plan.expansion import expand
from buildkit.plan.models import Job
from buildkit.publish.refusal import collect
from buildkit.recipe import Recipe, load_recipe
from tests.helpers.wheel_zip import write_wheel

ROOT = Path(__file__).resolve().parents[2]
JOB = "cp313-rocm5.7"
REMOVED = f"removed the previous wheel of {JOB}: it no longer matches the recipe/source"
RECIPE = """\
name: demo-kernels
source: {{path: src}}
version: {{base: "1.0", local: "rocm{{rocm}}"}}
python: ["3.13"]
rocm: ["5.7"]
archs: {{list: [gfx90a], toolchain: debian-trixie}}
manylinux: {{policy: manylinux_2_41}}
image: debian-rocm
size_budget: {{limit: "{limit}"}}
"""


# --------------------------------------------------------------------------- stand-ins
class FakeContainer:
    def __init__(self, engine: FakeEngine, command: list[str], labels: dict[str, str]) -> None:
        self.engine, self.command, self.labels = engine, command, labels
        self.short_id = f"c{len(engine.containers)}"
        self.volumes: dict[str, Any] = {}

    def start(self) -> None:
        self.engine.fail_at("start")

    def wait(self, timeout: int | None = None) -> dict[str, int]:
        return {"StatusCode": 0}

    def logs(self, stdout: bool = True, stderr: bool = False) -> bytes:
        if not stdout:
            return b""
        if self.labels.get(docker_engine.CONTAINER_LABEL) == "ccache-stats":  # ccache --print-stats
            return b"cache_miss\t3\ncalled_for_link\t1\ndirect_cache_hit\t5\npreprocessed_cache_hit\t1\n"
        return b"hipcc=HIP version: 5.7\npython=Python 3.13.5\n"

    def remove(self, force: bool = False) -> None:
        self.engine.fail_at("remove")
        self.engine.containers.remove(self)


class FakeContainers:
    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine

    def create(self, image: str, command: list[str], **kwargs: Any) -> FakeContainer:
        self.engine.fail_at("create")
        container = FakeContainer(self.engine, command, dict(kwargs.get("labels", {})))
        container.volumes = dict(kwargs.get("volumes") or {})
        self.engine.containers.append(container)
        self.engine.created.append(container)
        return container

    def get(self, name: str) -> FakeContainer:
        self.engine.fail_at("get")
        raise docker.errors.NotFound(f"no such container: {name}")

    def list(self, all: bool = False, filters: dict[str, str] | None = None) -> list[FakeContainer]:
        self.engine.fail_at("list")
        key, _, value = (filters or {}).get("label", "").partition("=")
        return [c for c in self.engine.containers if c.labels.get(key) == value]


class FakeEngine:
    """A Docker client whose engine "dies" (raises ``error``) from the first call named in ``dead``."""

    def __init__(self) -> None:
        self.containers: list[FakeContainer] = []
        self.created: list[FakeContainer] = []
        self.dead: set[str] = set()
        self.error: Exception = requests.exceptions.ConnectionError(
            "('Connection aborted.', ConnectionRefusedError(111, 'Connection refused'))"
        )

    def fail_at(self, call: str) -> None:
        if call in self.dead:
            raise self.error

    def ping(self) -> bool:
        self.fail_at("ping")
        return True


class Client:
    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine
        self.containers = FakeContainers(engine)

    def ping(self) -> bool:
        return self.engine.ping()


@dataclasses.dataclass(frozen=True)
class Image:
    tag: str = "rocm-buildkit/debian-rocm:0123456789ab"
    id: str = "sha256:" + "ab" * 32


@dataclasses.dataclass
class Harness:
    tmp: Path
    out: Path
    source: Path
    engine: FakeEngine
    builds: list[Path]
    recorded: list[dict[str, Any]]
    echoed: list[str]
    monkeypatch: pytest.MonkeyPatch
    cibuildwheel: Callable[[Path, Path], None] | None = None
    #: the build requirements the stand-in resolver "downloads" (name, version) per call
    wheelhouse: tuple[tuple[str, str], ...] = (("setuptools", "80.0.0"),)
    resolved: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    environments: list[dict[str, str]] = dataclasses.field(default_factory=list)  # cibuildwheel's, per run

    def recipe(self, limit: str = "20MiB", name: str = "recipe.yaml", extra: str = "") -> tuple[Recipe, Job]:
        path = self.tmp / name
        path.write_text(RECIPE.format(limit=limit) + extra, encoding="utf-8")
        recipe = load_recipe(path)
        return recipe, expand(recipe, env={}).jobs[0]

    def build(
        self,
        recipe: Recipe,
        job: Job,
        *,
        force: bool = False,
        interrupted: str | None = None,
        use_cache: bool = True,
    ) -> build_job.JobResult:
        options = build_job.BuildOptions(
            out_dir=self.out,
            log_dir=self.tmp / "logs",
            ca_bundle=None,
            force=force,
            source_date_epoch=1,
            use_cache=use_cache,
        )
        return build_job.build_one(
            recipe,
            job,
            options,
            client=Client(self.engine),
            image=Image(),
            source=self.source,
            echo=self.echoed.append,
            interrupted=interrupted,
        )

    def wheel_of(self, job: str = JOB) -> Path | None:
        wheels = sorted((self.out / job).glob("*.whl")) if (self.out / job).is_dir() else []
        return wheels[0] if wheels else None


def _fake_wheel(staged: Path, out: Path, job_version: str) -> None:
    """A wheel holding the staged source's files (so another source gives other bytes)."""
    members = {
        f"demo_kernels/{p.relative_to(staged).as_posix()}": p.read_bytes()
        for p in sorted(staged.rglob("*"))
        if p.is_file() and not p.relative_to(staged).as_posix().startswith(".buildkit")
    }
    out.mkdir(parents=True, exist_ok=True)
    write_wheel(
        out / f"demo_kernels-{job_version}-cp313-cp313-manylinux_2_41_x86_64.whl", members, fixed_time=True
    )


def _size_gate(wheel: Path, config: Any) -> gating.Gated:
    """The recipe's size budget only (stand-in for the real gate)."""
    size = wheel.stat().st_size
    errors = int(config.size_limit is not None and size > config.size_limit)
    return gating.Gated(
        passed=not errors,
        errors=errors,
        warnings=0,
        sha256=manifest.sha256_file(wheel),
        size=size,
        tag="manylinux_2_41_x86_64",
        summary="ERROR [size] too large" if errors else "PASS",
        details="",
        verdict={"passed": not errors, "findings": []},
    )


@pytest.fixture
def h(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Harness:
    return make_harness(tmp_path, monkeypatch)


def make_harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Harness:
    """The stand-ins in place (tests/unit/test_quarantine.py uses them too)."""
    source = tmp_path / "src"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "kernel.hip").write_text("__global__ void k() {}\n")
    harness = Harness(tmp_path, tmp_path / "dist", source, FakeEngine(), [], [], [], monkeypatch)

    def fake_cibuildwheel(staged: Path, out: Path, env: dict[str, str], *_args: Any, **_kwargs: Any) -> None:
        harness.builds.append(staged)
        harness.environments.append(dict(env))
        if harness.cibuildwheel is not None:
            harness.cibuildwheel(staged, out)
        _fake_wheel(staged, out, "1.0+rocm5.7")

    def fake_record(wheel: Path, **kwargs: Any) -> Path:
        harness.recorded.append(kwargs)
        harness.engine.fail_at("provenance")
        return manifest.manifest_path(wheel)

    def fake_resolve(
        recipe: Recipe, job: Job, source: Path, dest: Path, log: Any, **kwargs: Any
    ) -> requirements.Lock:
        """pip download's stand-in: the harness's wheelhouse as tiny wheels (no index here)."""
        harness.resolved.append(kwargs)
        dest.mkdir(parents=True, exist_ok=True)
        for name, version in harness.wheelhouse:
            write_wheel(
                dest / f"{name}-{version}-py3-none-any.whl", {f"{name}/__init__.py": b""}, fixed_time=True
            )
        wanted = [requirements.Requested(name, "the stand-in") for name, _ in harness.wheelhouse]
        return requirements.lock_folder(job, wanted, dest)

    monkeypatch.setattr(requirements, "resolve", fake_resolve)
    monkeypatch.setattr(runner, "run_cibuildwheel", fake_cibuildwheel)
    monkeypatch.setattr(gate_step, "gate_wheel", _size_gate)
    monkeypatch.setattr(provenance, "record", fake_record)
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/test-engine.sock")
    return harness


def _fail_build(staged: Path, out: Path) -> None:
    raise BuildFailed("cibuildwheel failed (exit 1); last lines:\n      error: kernel.hip:1: syntax error")


# --------------------------------------------------------------------------- 1: stale outputs
def test_failed_build_removes_the_previous_wheel_of_the_job(h: Harness) -> None:
    recipe, job = h.recipe()
    assert h.build(recipe, job).status == "passed"
    assert h.wheel_of() is not None
    (h.source / "pkg" / "kernel.hip").write_text("__global__ void k( {}\n")  # the new source breaks
    h.cibuildwheel = _fail_build
    result = h.build(recipe, job)
    assert result.status == "build-failed"
    assert not (h.out / JOB).exists(), "the previous wheel of an older source stayed in --out"
    assert collect(h.out) == []
    assert any(REMOVED in line for line in h.echoed), h.echoed
    assert result.removed == h.out / JOB


def test_gate_refused_job_removes_the_previous_wheel(h: Harness) -> None:
    """recipe.yaml passes; tight.yaml (same recipe, size limit 10B) into the same --out: the gate
    must run (not "up-to-date") and its refusal removes the wheel publish would otherwise take."""
    recipe, job = h.recipe()
    assert h.build(recipe, job).status == "passed"
    tight, tight_job = h.recipe(limit="10B", name="tight.yaml")
    result = h.build(tight, tight_job)
    assert result.status == "gate-failed", result.message
    assert (result.gate, result.errors) == ("FAIL", 1)
    assert not (h.out / JOB).exists()
    assert any(REMOVED in line for line in h.echoed), h.echoed


def test_interrupted_job_keeps_the_previous_output(h: Harness) -> None:
    recipe, job = h.recipe()
    h.build(recipe, job)
    before = {p.name: p.read_bytes() for p in (h.out / JOB).iterdir()}
    (h.source / "pkg" / "kernel.hip").write_text("__global__ void k2() {}\n")

    def ctrl_c(staged: Path, out: Path) -> None:
        raise KeyboardInterrupt

    h.cibuildwheel = ctrl_c
    with pytest.raises(Interrupted):
        h.build(recipe, job)
    assert {p.name: p.read_bytes() for p in (h.out / JOB).iterdir()} == before
    assert sorted(p.name for p in h.out.iterdir()) == [JOB]  # no staging folder left
    assert not any(REMOVED in line for line in h.echoed)


def test_failed_forced_rebuild_keeps_a_wheel_built_from_the_same_inputs(h: Harness) -> None:
    """``--force`` with unchanged inputs and a transient failure: the wheel in --out is still exactly
    what these inputs make (same inputs key) and passed the gate; it stays."""
    recipe, job = h.recipe()
    h.build(recipe, job)
    h.cibuildwheel = _fail_build
    assert h.build(recipe, job, force=True).status == "build-failed"
    assert h.wheel_of() is not None


# --------------------------------------------------------------------------- 2: up-to-date
def test_up_to_date_only_for_the_same_recipe(h: Harness) -> None:
    recipe, job = h.recipe()
    assert h.build(recipe, job).status == "passed"
    again = h.build(recipe, job)
    assert again.status == "up-to-date"
    assert (again.gate, again.errors) == ("PASS", 0)
    assert len(h.builds) == 1
    # another revision that cannot change the wheel or its gate (a comment, a smoke test): up to date, its
    # manifest records the build digest `publish --recipe` compares with (issue 36)
    changed = h.tmp / "recipe.yaml"
    changed.write_text(changed.read_text() + "# reviewed\nsmoke:\n  - name: i\n    image: x/y\n")
    recipe2 = load_recipe(changed)
    assert recipe2.sha256 != recipe.sha256 and recipe2.build_sha256 == recipe.build_sha256
    assert h.build(recipe2, expand(recipe2, env={}).jobs[0]).status == "up-to-date"
    assert manifest.read(h.wheel_of())["recipe"]["build_sha256"] == recipe2.build_sha256  # type: ignore[arg-type]
    # a revision that can (the environment of the build): rebuilt
    changed.write_text(changed.read_text() + "env:\n  DEMO_FLAG: '1'\n")
    recipe3 = load_recipe(changed)
    assert h.build(recipe3, expand(recipe3, env={}).jobs[0]).status == "passed"
    assert len(h.builds) == 2
    assert manifest.read(h.wheel_of())["recipe"]["sha256"] == recipe3.sha256  # type: ignore[arg-type]


def test_up_to_date_wheel_is_gated_again(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same inputs key, but the gate refuses the wheel now (a rule the key cannot see): not
    up-to-date; the rebuild is refused too and the stale wheel removed."""
    recipe, job = h.recipe()
    h.build(recipe, job)

    def refuse(wheel: Path, config: Any) -> gating.Gated:
        return dataclasses.replace(_size_gate(wheel, config), passed=False, errors=2)

    monkeypatch.setattr(gate_step, "gate_wheel", refuse)
    result = h.build(recipe, job)
    assert result.status == "gate-failed"
    assert len(h.builds) == 2
    assert not (h.out / JOB).exists()


def test_inputs_key_covers_recipe_gate_and_tools(h: Harness) -> None:
    recipe, job = h.recipe()
    tight, _ = h.recipe(limit="10KiB", name="tight.yaml")
    gate = gate_key(GateConfig.from_job(job, recipe))
    tools = {"cibuildwheel": "3.1.4", "auditwheel": "6.4.2"}

    def key(**changes: Any) -> str:
        values: dict[str, Any] = {
            "recipe_sha256": recipe.build_sha256,
            "gate": gate,
            "tools": tools,
            **changes,
        }
        return inputs_key(job, "sha256:1", "digest", 1, True, **values)

    assert key() == key()
    assert key(recipe_sha256=tight.sha256) != key()
    assert key(gate=gate_key(GateConfig.from_job(job, tight))) != key()
    assert key(tools={**tools, "cibuildwheel": "3.2.0"}) != key()
    assert key(tools={**tools, "auditwheel": "6.5.0"}) != key()
    assert set(tool_versions()) == {"cibuildwheel", "auditwheel"}


def test_gate_key_is_deterministic_and_ignores_the_path_as_typed(h: Harness) -> None:
    recipe, job = h.recipe()
    other = load_recipe(Path(os.path.relpath(h.tmp / "recipe.yaml")))  # the same file, another spelling
    a = gate_key(GateConfig.from_job(job, recipe))
    b = gate_key(GateConfig.from_job(expand(other, env={}).jobs[0], other))
    assert recipe.display_path != other.display_path
    assert a == b
    assert a["size_limit"] == 20 * 1024 * 1024
    assert a["recipe_sha256"] == recipe.build_sha256


# --------------------------------------------------------------------------- 3: the engine dies
@pytest.mark.parametrize("step", ["create", "provenance"])
def test_engine_dying_mid_build_is_docker_unavailable(h: Harness, step: str) -> None:
    """Mock: the fake client raises requests.ConnectionError at the toolchain probe's
    ``containers.create`` or in provenance.record, and from then on for every call (cleanup too)."""
    recipe, job = h.recipe()
    h.build(recipe, job)
    previous = h.wheel_of()
    (h.source / "pkg" / "kernel.hip").write_text("__global__ void k3() {}\n")
    h.engine.dead = {step}

    def engine_dies_after_build(staged: Path, out: Path) -> None:
        h.engine.dead = {step, "list", "remove", "ping"}

    h.cibuildwheel = engine_dies_after_build
    with pytest.raises(DockerUnavailable) as err:
        h.build(recipe, job)
    text = str(err.value)
    assert err.value.exit_code == 8
    assert "unix:///run/test-engine.sock (from DOCKER_HOST)" in text
    assert "Connection refused" in text
    assert re.search(r"--filter label=io\.rocm-buildkit\.run=staging-cp313-rocm5\.7-\d+-\w+", text), text
    assert "buildkit image prune --containers" in text
    assert h.wheel_of() == previous  # infrastructure, not the recipe: the previous output stays
    assert sorted(p.name for p in h.out.iterdir()) == [JOB]


def test_engine_error_with_cleanup_possible_removes_containers_and_gives_no_hint(h: Harness) -> None:
    recipe, job = h.recipe()
    h.engine.error = docker.errors.APIError("500 Server Error: Internal Server Error")
    h.engine.dead = {"start"}  # the first container after cibuildwheel cannot start; the engine still
    with pytest.raises(DockerUnavailable) as err:  # lists and removes
        h.build(recipe, job)
    assert "reading the compiler-cache statistics of cp313-rocm5.7" in str(err.value)
    assert "hint" not in str(err.value)
    assert h.engine.containers == []
    assert h.engine.created and all(
        c.labels[docker_engine.RUN_LABEL].startswith(f"staging-{JOB}-") for c in h.engine.created
    )


def test_cibuildwheel_failing_because_the_engine_went_away(h: Harness) -> None:
    recipe, job = h.recipe()
    h.build(recipe, job)

    def engine_gone(staged: Path, out: Path) -> None:
        h.engine.dead = {"ping", "list"}
        _fail_build(staged, out)

    h.cibuildwheel = engine_gone
    (h.source / "pkg" / "kernel.hip").write_text("__global__ void k4() {}\n")
    with pytest.raises(DockerUnavailable, match=r"during cibuildwheel of cp313-rocm5\.7"):
        h.build(recipe, job)
    assert h.wheel_of() is not None


# --------------------------------------------------------------------------- 4: staging
def test_staging_is_inside_out_and_nothing_lands_beside_it(h: Harness) -> None:
    recipe, job = h.recipe()
    before = sorted(p.name for p in h.tmp.iterdir())
    h.build(recipe, job)
    staged = h.builds[0]
    assert staged.parent.parent == h.out
    assert re.fullmatch(rf"\.staging-{re.escape(JOB)}-{os.getpid()}-\w+", staged.parent.name)
    assert sorted(p.name for p in h.tmp.iterdir()) == sorted({*before, "dist", "logs"})
    assert sorted(p.name for p in h.out.iterdir()) == [JOB]


def test_out_folder_inside_the_source_is_not_staged(h: Harness) -> None:
    """--out and --log-dir inside the source folder (with names the litter filter does not know)
    are not copied into the staged source: no recursion, and the key does not see them."""
    recipe, job = h.recipe()
    h.out = h.source / "wheels"
    staged: list[list[str]] = []
    h.cibuildwheel = lambda src, _out: staged.append(sorted(p.name for p in src.iterdir()))
    assert h.build(recipe, job).status == "passed"
    assert staged == [[".buildkit", "pkg"]]  # .buildkit: the wheelhouse of the hermetic build
    assert h.build(recipe, job).status == "up-to-date"


def _dead_pid() -> int:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(proc.stdout)


def test_sweep_removes_debris_of_dead_builds_only(tmp_path: Path) -> None:
    dead, alive = _dead_pid(), os.getpid()
    out = tmp_path / "dist"
    for name in (
        f".staging-{JOB}-{dead}-ab12_c",
        f".{JOB}.incoming-{dead}-x9",
        f".{JOB}.stale-{dead}-0f0f",
        f".staging-{JOB}-{alive}-zz",  # a build running now
        ".hidden-by-user",
    ):
        (out / name / "src").mkdir(parents=True)
    (out / f".cp312-x.previous-{dead}-q1").mkdir()  # killed mid-swap: cp312-x is missing
    (out / f".cp312-x.previous-{dead}-q1" / "w.whl").write_text("w")
    echoed: list[str] = []
    removed = staging.sweep_debris(out, echoed.append)
    assert sorted(p.name for p in removed) == sorted(
        [f".staging-{JOB}-{dead}-ab12_c", f".{JOB}.incoming-{dead}-x9", f".{JOB}.stale-{dead}-0f0f"]
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f".staging-{JOB}-{alive}-zz", ".hidden-by-user", "cp312-x"]
    )
    assert (out / "cp312-x" / "w.whl").read_text() == "w"
    assert echoed


def test_gitignore_covers_staging_debris() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.fail("needs the git checkout")
    for path in (".staging-cp313-rocm5.7-123-abc/src/x", ".buildkit-cp313-rocm5.7-abc/src/x"):
        proc = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "--no-index", path])
        assert proc.returncode == 0, f"{path} is not ignored"


# --------------------------------------------------------------------------- compiler cache
def test_compiler_cache_statistics_reach_the_result_and_the_manifest(h: Harness) -> None:
    recipe, job = h.recipe()
    result = h.build(recipe, job)
    assert result.compiler_cache == ccache.CacheStats(hits=6, misses=3)  # direct + preprocessed hits
    assert result.manifest is not None
    data = json.loads(result.manifest.read_text(encoding="utf-8"))
    assert data["compiler_cache"] == {"hits": 6, "misses": 3, "hit_rate": 0.6667}
    (box,) = [c for c in h.engine.created if c.labels[docker_engine.CONTAINER_LABEL] == "ccache-stats"]
    volume = cibw.ccache_volume(job, Image().tag)
    assert box.volumes == {volume: {"bind": ccache.CONTAINER_DIR, "mode": "rw"}}
    assert box.labels[docker_engine.RUN_LABEL].startswith(f"staging-{JOB}-")
    assert result.log is not None
    assert f"compiler cache ({volume}): 6 hits, 3 misses (66.7% hit rate)" in result.log.read_text()


def test_no_cache_reads_no_statistics(h: Harness) -> None:
    recipe, job = h.recipe()
    result = h.build(recipe, job, use_cache=False)
    assert result.status == "passed" and result.compiler_cache is None
    assert result.manifest is not None
    assert json.loads(result.manifest.read_text(encoding="utf-8"))["compiler_cache"] is None
    assert not [c for c in h.engine.created if c.labels[docker_engine.CONTAINER_LABEL] == "ccache-stats"]


# --------------------------------------------------------------------------- 5: the job's interpreter
def test_job_interpreter_follows_the_job_python(h: Harness) -> None:
    _, job = h.recipe()
    assert toolchain.job_interpreter(job) == "/opt/python/cp313-cp313/bin/python"
    for cp in ("cp310", "cp311", "cp312"):
        assert (
            toolchain.job_interpreter(dataclasses.replace(job, cp_tag=cp))
            == f"/opt/python/{cp}-{cp}/bin/python"
        )


def test_cp312_job_probes_its_own_interpreter(h: Harness) -> None:
    recipe, job = h.recipe()
    job312 = dataclasses.replace(job, cp_tag="cp312")
    h.build(recipe, job312)
    (probe,) = [c for c in h.engine.created if c.labels[docker_engine.CONTAINER_LABEL] == "build-probe"]
    script = probe.command[-1]
    assert "/opt/python/cp312-cp312/bin/python" in script and "cp313" not in script
    assert h.recorded[0]["interpreter"] == "/opt/python/cp312-cp312/bin/python"


def test_build_environment_is_cached_per_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    scripts: list[str] = []

    def probe(
        client: Any,
        tag: str,
        image_id: str,
        interpreter: str = provenance.BUILDER_PYTHON,
        run_id: str | None = None,
    ) -> bytes:
        scripts.append(provenance.environment_script(interpreter))
        return f'--- pip\n[{{"name": "pip", "version": "{len(scripts)}"}}]\n--- system\n'.encode()

    monkeypatch.setattr(provenance, "_probe", probe)
    a = provenance.build_environment(None, "sha256:1", "img", "/opt/python/cp312-cp312/bin/python")
    b = provenance.build_environment(None, "sha256:1", "img", "/opt/python/cp313-cp313/bin/python")
    again = provenance.build_environment(None, "sha256:1", "img", "/opt/python/cp312-cp312/bin/python")
    assert a["interpreter"].startswith("/opt/python/cp312-cp312") and b["interpreter"].startswith(
        "/opt/python/cp313"
    )
    assert a["python_packages"] != b["python_packages"]
    assert again == a and len(scripts) == 2
    assert "/opt/python/cp312-cp312/bin/python -m pip list" in scripts[0]


# --------------------------------------------------------------------------- 6: the summary
def test_summary_names_verdict_paths_and_next_steps(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    wheel = out / JOB / "demo-1.0-cp313-cp313-manylinux_2_41_x86_64.whl"
    results = [
        build_job.JobResult(
            JOB, "passed", wheel, 4.6, log=tmp_path / "build/logs" / f"{JOB}.log", gate="PASS", warnings=1
        ),
        build_job.JobResult(
            "cp312-rocm5.7",
            "gate-failed",
            None,
            5.0,
            log=tmp_path / "build/logs/cp312-rocm5.7.log",
            gate="FAIL",
            errors=2,
            removed=out / "cp312-rocm5.7",
        ),
        build_job.JobResult("cp311-rocm5.7", "build-failed", None, 1.0, log=Path("/var/log/x.log")),
    ]
    text = summary.render_summary(results, recipe="recipes/r.yaml", out_dir=out, cwd=tmp_path)
    lines = text.splitlines()
    assert re.match(rf"{JOB}\s+passed\s+4\.6s\s+PASS \(0 errors, 1 warning\)$", lines[1]), text
    assert f"  wheel     dist/{JOB}/{wheel.name}" in lines
    assert f"  manifest  dist/{JOB}/{wheel.name}.manifest.json" in lines
    assert f"  log       build/logs/{JOB}.log" in lines
    assert any(re.match(r"cp312-rocm5\.7\s+gate-failed\s+5\.0s\s+FAIL \(2 errors\)$", line) for line in lines)
    assert "  removed   dist/cp312-rocm5.7 (the previous wheel, now stale)" in lines
    assert any(re.match(r"cp311-rocm5\.7\s+build-failed\s+1\.0s\s+not run$", line) for line in lines)
    assert "  log       /var/log/x.log" in lines
    assert lines[-3:] == [
        "next steps:",
        f"  buildkit smoke dist/{JOB}/{wheel.name} --recipe recipes/r.yaml",
        "  buildkit publish dist --recipe recipes/r.yaml --dry-run",
    ]
    assert len(lines) <= 14
    # nothing passed: no next steps
    assert "next steps" not in summary.render_summary(results[1:], recipe="r.yaml", out_dir=out, cwd=tmp_path)


# --------------------------------------------------------------------------- wheel.split: per-target
def test_a_split_recipe_puts_the_host_and_device_wheels_in_the_job_folder(h: Harness) -> None:
    """``wheel.split: per-target``: the job's gated wheel (code objects under pkg/hsa/) is split by the
    real split stage, each output gated by the real gate with the configuration recorded in its own
    manifest; a second build finds all of them up to date; publish's trust with the recipe takes all
    three (device wheels under their derived names, each held to its target)."""
    from buildkit.publish.refusal import Candidate, examine, refuse_for_recipe
    from buildkit.publish.trust import Trust, verify
    from tests.helpers.offload_bundle import amdgpu_header

    for folder, flags in (("gfx90a", 0x23F), ("gfx942", 0x54C)):
        (h.source / "pkg" / "hsa" / folder).mkdir(parents=True)
        (h.source / "pkg" / "hsa" / folder / "k.co").write_bytes(amdgpu_header(flags, 3) + b"\0" * 64)
    recipe, job = h.recipe(extra="wheel: {abi: cpython, split: per-target}\n")
    assert recipe.wheel.split == "per-target"
    result = h.build(recipe, job)
    assert result.status == "passed", result.message
    names = sorted(p.name for p in (h.out / JOB).glob("*.whl"))
    assert names == [
        "demo_kernels-1.0+rocm5.7-cp313-cp313-manylinux_2_41_x86_64.whl",
        "demo_kernels_device_gfx90a-1.0+rocm5.7-cp313-cp313-manylinux_2_41_x86_64.whl",
        "demo_kernels_device_gfx942-1.0+rocm5.7-cp313-cp313-manylinux_2_41_x86_64.whl",
    ]
    assert result.wheel is not None and result.wheel.name == names[0]
    records = {name: manifest.read(h.out / JOB / name) for name in names}
    host, gfx90a, _gfx942 = (records[n] for n in names)
    assert host["split"]["role"] == "host" and host["gate"].get("device_target") is None
    assert gfx90a["split"]["target"] == "gfx90a" and gfx90a["gate"]["device_target"] == "gfx90a"
    assert gfx90a["gate"]["identity"]["name"] == "demo-kernels-device-gfx90a"
    assert all(r["verdict"]["passed"] and r["inputs_key"] == host["inputs_key"] for r in records.values())
    assert len(h.recorded) == 3  # provenance (and the attestation) for each wheel
    again = h.build(recipe, job)
    assert again.status == "up-to-date", again.message
    candidates = [examine(h.out / JOB / name) for name in names]
    assert all(isinstance(c, Candidate) and refuse_for_recipe(c, recipe) is None for c in candidates)
    trust = Trust(recipe, expand(recipe, env={}))
    assert verify([c for c in candidates if isinstance(c, Candidate)], trust) == []
    # a manifest claiming the gfx90a wheel is gfx942's: the gate, run again, refuses it
    forged = candidates[1]
    assert isinstance(forged, Candidate)
    lie = {**forged.manifest, "split": {**forged.manifest["split"], "target": "gfx942"}}
    refused = verify([dataclasses.replace(forged, manifest=lie)], trust)
    assert len(refused) == 1 and "stale or forged manifest" in refused[0].reason
    # ... and with the gfx942 wheel's gate configuration forged in too, the device-wheel rule does
    lie["gate"] = records[names[2]]["gate"]
    refused = verify([dataclasses.replace(forged, manifest=lie)], trust)
    assert len(refused) == 1 and "the gate, run again, fails it" in refused[0].reason
    assert "code for gfx90a" in refused[0].reason and "not gfx942" in refused[0].reason


def test_a_split_output_the_gate_refuses_fails_the_job_and_is_kept_apart(h: Harness) -> None:
    """An output the gate refuses (here: the gfx942 wheel given a 10-byte size limit) fails the job;
    no wheel of it reaches --out, the refused one is kept in the job's quarantine folder."""
    from buildkit.split import run as split_run
    from tests.helpers.offload_bundle import amdgpu_header

    real = split_run.output_config

    def strict(base: GateConfig, **kw: Any) -> GateConfig:
        config = real(base, **kw)
        return config._replace(size_limit=10) if kw["target"] == "gfx942" else config

    h.monkeypatch.setattr(split_run, "output_config", strict)
    for folder, flags in (("gfx90a", 0x23F), ("gfx942", 0x54C)):  # the job's archs: gfx90a
        (h.source / "pkg" / "hsa" / folder).mkdir(parents=True)
        (h.source / "pkg" / "hsa" / folder / "k.co").write_bytes(amdgpu_header(flags, 3) + b"\0" * 64)
    recipe, job = h.recipe(extra="wheel: {abi: cpython, split: per-target}\n")
    result = h.build(recipe, job)
    assert result.status == "gate-failed", result.message
    assert "the gate refused demo_kernels_device_gfx942-" in result.message
    assert not (h.out / JOB).exists()
    assert result.refused is not None and result.refused.name.startswith("demo_kernels_device_gfx942-")
    assert result.examine is not None and result.examine.endswith("--device-target gfx942")


def test_job_logs_go_beside_the_outputs_whatever_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: the logs landed in ./build/logs of whatever folder the command ran in."""
    from buildkit.cli.build import build as build_command
    from buildkit.service.build import logs_of

    monkeypatch.chdir(tmp_path)
    assert logs_of(tmp_path / "out", None) == tmp_path / "out" / "logs"
    assert logs_of("dist", None) == tmp_path / "dist" / "logs"
    assert logs_of("dist", "elsewhere") == tmp_path / "elsewhere"
    (option,) = [p for p in build_command.params if p.name == "log_dir"]
    assert option.default is None and "OUT/logs" in (option.help or "")  # type: ignore[attr-defined]


def test_the_runner_lists_every_phase_module_once_and_nothing_else() -> None:
    """A new phase is a module of buildkit/building/steps/ and a line in ``job.STEPS``: the list is the
    one source of the order, every module there (``state`` aside: what they share) is in it once, and
    each has the two functions the runner calls."""
    folder = ROOT / "buildkit" / "building" / "steps"
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "state"}
    listed = [step.__name__.rsplit(".", 1)[-1] for step in build_job.STEPS]  # type: ignore[attr-defined]
    assert sorted(listed) == sorted(modules)
    assert len(set(listed)) == len(listed)
    assert all(callable(s.applies) and callable(s.perform) for s in build_job.STEPS)
    assert listed[0] == "stage" and listed[-1] == "record"
    assert listed.index("reuse") < listed.index("requirements") < listed.index("compile")
    assert (
        listed.index("gate") < listed.index("regression") < listed.index("split") < listed.index("quarantine")
    )


def test_a_refused_wheel_skips_the_later_checks_and_is_kept(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate's refusal goes straight to the quarantine phase: the regression check never runs and
    nothing is recorded."""
    from buildkit.building.steps import regression as regression_step

    def refuse(wheel: Path, config: Any) -> gating.Gated:
        return dataclasses.replace(_size_gate(wheel, config), passed=False, errors=1)

    monkeypatch.setattr(gate_step, "gate_wheel", refuse)
    monkeypatch.setattr(regression_step, "compare_with_last_release", lambda *_a, **_k: pytest.fail("ran"))
    recipe, job = h.recipe()
    result = h.build(recipe, job)
    assert result.status == "gate-failed" and result.gate == "FAIL"
    assert result.refused is not None and result.refused.is_file()
    assert not (h.out / JOB).exists()
