"""``buildkit build`` end to end on the real engine: the reference recipe on the Debian builder.

Real parts only: dockerd, the debian-rocm builder image (Debian trixie's hipcc 5.7.1 / clang 17),
cibuildwheel, auditwheel repair, and our gate. No AMD GPU exists here: code objects are built and
inspected, never run; the import test checks the extension loads and reports its build targets.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from buildkit.docker_engine import RUN_LABEL
from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.inspect import inspect_wheel
from buildkit.manifest import read as read_manifest
from buildkit.manifest import sha256_file
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe
from tests.helpers.wheels_for_publish import signing_environment

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module", autouse=True)
def signing_keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The builds sign their attestations and publish trusts that key: ``publish --to`` runs the gate
    again with the configuration they sign (a publish trusts no unsigned manifest)."""
    with pytest.MonkeyPatch.context() as patch:
        signing_environment(patch, tmp_path_factory.mktemp("keys"))
        yield


ROOT = Path(__file__).resolve().parents[2]
ARCHS = ["gfx908", "gfx90a", "gfx942"]
JOB = "cp313-rocm5.7"
REMOVED = f"removed the previous wheel of {JOB}: it no longer matches the recipe/source"
RUNTIME_DOCKERFILE = """\
FROM debian:trixie-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
      python3 python3-venv libamdhip64-5 && rm -rf /var/lib/apt/lists/*
"""


def _buildkit(*args: str, cwd: Path, timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def _build(recipe: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``buildkit build RECIPE`` with its output and logs under ``tmp``."""
    return _buildkit(
        "build", str(recipe), "--out", str(tmp / "dist"), "--log-dir", str(tmp / "logs"), *args, cwd=tmp
    )


def _recipe(tmp: Path, source: Path, name: str = "recipe.yaml", **changes: Any) -> Path:
    data = yaml.safe_load((ROOT / "recipes" / "reference-trixie.yaml").read_text())
    data["source"] = {"path": str(source)}
    for key, value in changes.items():
        data[key] = value
    path = tmp / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` (dot-folders included) with its bytes."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _no_debris(tmp: Path) -> None:
    """No staging folder in --out nor beside it; nothing hidden in --out but the quarantine of
    refused wheels (.refused), with no swap folder in it either."""
    assert not any(p.name.startswith((".buildkit-", ".staging-")) for p in tmp.iterdir())
    if (tmp / "dist").is_dir():
        assert not [
            p.name for p in (tmp / "dist").iterdir() if p.name.startswith(".") and p.name != ".refused"
        ]
    if (tmp / "dist" / ".refused").is_dir():
        assert not [p.name for p in (tmp / "dist" / ".refused").iterdir() if p.name.startswith(".")]


def _refused(tmp: Path) -> list[Path]:
    """The wheels kept in --out's quarantine (dist/.refused/<job-id>/)."""
    return sorted((tmp / "dist" / ".refused").glob("*/*.whl"))


def _published(tmp: Path) -> list[Path]:
    """The wheels of --out that publish would consider (outside its dot-folders)."""
    dist = tmp / "dist"
    return [p for p in dist.rglob("*.whl") if not any(x.startswith(".") for x in p.relative_to(dist).parts)]


def _run_containers(client: Any, pid: int) -> set[str]:
    """The containers of the ``buildkit`` process ``pid``: its build label's value is its staging
    folder's name, ``staging-<job>-<pid>-...`` (others' builds on a shared engine are not counted)."""
    prefix = f"{RUN_LABEL}=staging-{JOB}-{pid}-"
    listed = client.containers.list(all=True, filters={"label": RUN_LABEL}, ignore_removed=True)
    return {c.name for c in listed if f"{RUN_LABEL}={c.labels.get(RUN_LABEL, '')}".startswith(prefix)}


def _containers(client: Any) -> set[str]:
    """Containers a build makes: cibuildwheel's, and any carrying buildkit's container label."""
    # ignore_removed: a container removed between the engine's listing and the SDK's inspect of it
    # (polled while builds start and stop containers) is not there any more, not an error
    by_name = {
        c.name
        for c in client.containers.list(all=True, filters={"name": "cibuildwheel-"}, ignore_removed=True)
    }
    labelled = client.containers.list(
        all=True, filters={"label": "io.rocm-buildkit.container"}, ignore_removed=True
    )
    by_label = {c.name for c in labelled}
    return by_name | by_label


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, debian_rocm_image: Any) -> dict[str, Any]:
    """One real build of the reference recipe (reused by the tests of this module)."""
    tmp = tmp_path_factory.mktemp("e2e")
    out = tmp / "dist"
    proc = _buildkit(
        "build",
        str(ROOT / "recipes" / "reference-trixie.yaml"),
        "--out",
        str(out),
        "--log-dir",
        str(tmp / "logs"),
        cwd=tmp,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = sorted(out.glob("*/*.whl"))
    assert len(wheels) == 1, wheels
    return {"wheel": wheels[0], "out": out, "tmp": tmp, "stdout": proc.stdout, "stderr": proc.stderr}


@pytest.fixture(scope="module")
def runtime_image(docker_client: Any) -> str:
    tag = "rocm-buildkit-test/runtime-trixie-hip:1"
    try:
        docker_client.images.get(tag)
    except Exception:
        docker_client.images.build(fileobj=io.BytesIO(RUNTIME_DOCKERFILE.encode()), tag=tag, rm=True)
    return tag


def test_wheel_lands_with_manifest(built: dict[str, Any]) -> None:
    wheel: Path = built["wheel"]
    assert wheel.parent.name == "cp313-rocm5.7"
    assert "+rocm5.7.manylinux.2.41" in wheel.name
    manifest = read_manifest(wheel)
    assert manifest["wheel"]["sha256"] == sha256_file(wheel)
    assert manifest["verdict"]["passed"] is True
    assert manifest["archs"] == ARCHS
    assert manifest["image"]["tag"].startswith("rocm-buildkit/debian-rocm:")
    assert "5.7" in manifest["toolchain"]["hipcc"]
    # nothing but the job folder in the output: no staging litter
    assert sorted(p.name for p in built["out"].iterdir()) == ["cp313-rocm5.7"]
    assert not any(p.name.startswith((".buildkit-", ".staging-")) for p in built["tmp"].iterdir())


def test_summary_names_verdict_paths_and_next_steps(built: dict[str, Any]) -> None:
    wheel: Path = built["wheel"]
    recipe = str(ROOT / "recipes" / "reference-trixie.yaml")
    lines = built["stdout"].splitlines()
    assert re.match(rf"{JOB}\s+passed\s+[\d.]+s\s+PASS \(0 errors", lines[1]), built["stdout"]
    assert f"  wheel     dist/{JOB}/{wheel.name}" in lines  # relative to the cwd of the build
    assert f"  manifest  dist/{JOB}/{wheel.name}.manifest.json" in lines
    assert f"  log       logs/{JOB}.log" in lines
    assert f"  buildkit smoke dist/{JOB}/{wheel.name} --recipe {recipe}" in lines
    assert f"  buildkit publish dist --recipe {recipe} --dry-run" in lines
    assert (built["tmp"] / "logs" / f"{JOB}.log").is_file()


def test_gate_sees_every_arch_and_agrees_with_auditwheel(built: dict[str, Any]) -> None:
    wheel: Path = built["wheel"]
    job = expand(load_recipe(ROOT / "recipes" / "reference-trixie.yaml"), env={}).jobs[0]
    verdict = evaluate(inspect_wheel(wheel), GateConfig.from_job(job))
    assert verdict.config.archs == tuple(ARCHS)
    assert verdict.passed, verdict.findings
    assert verdict.gfx, "no HIP object found"
    for obj in verdict.gfx:
        assert sorted({t.split(":")[0] for t in obj.targets}) == ARCHS
    shown = subprocess.run(
        ["auditwheel", "show", "--json", str(wheel)], capture_output=True, text=True, check=True, timeout=300
    )
    aw = json.loads(shown.stdout)
    assert verdict.sym_tag == aw["sym_policy"] if "sym_policy" in aw else aw["sym_tag"]


def test_wheel_imports_in_a_clean_container(
    built: dict[str, Any], docker_client: Any, runtime_image: str
) -> None:
    wheel: Path = built["wheel"]
    container = docker_client.containers.create(
        runtime_image,
        ["sh", "-c", "sleep 600"],
        network_disabled=True,
    )
    try:
        container.start()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(wheel, arcname=wheel.name)
        container.put_archive("/tmp", buf.getvalue())
        script = (
            "python3 -m venv /venv && /venv/bin/pip install --no-index -q /tmp/*.whl && "
            "cd / && /venv/bin/python -c 'import json, refkernels; "
            'print(json.dumps({"targets": refkernels.get_build_targets(), '
            '"gpu": refkernels.get_gfx_runtime().available}))\''
        )
        code, output = container.exec_run(["sh", "-c", script])
        text = output.decode(errors="replace")
        assert code == 0, text
        result = json.loads(text.strip().splitlines()[-1])
        assert sorted(result["targets"]) == ARCHS
        assert result["gpu"] is False  # no AMD GPU here: a clear "no GPU" answer, not a crash
    finally:
        container.remove(force=True)


def test_manylinux_2_28_ceilings_fail_and_leave_dist_empty(
    tmp_path: Path, debian_rocm_image: Any, docker_client: Any
) -> None:
    recipe = _recipe(tmp_path, ROOT / "csrc", manylinux={"policy": "manylinux_2_28"})
    before = _containers(docker_client)
    proc = _build(recipe, tmp_path)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 7, text
    # the offending library and symbol are named
    assert "libc.so.6" in text and "GLIBC_2.34" in text, text
    # nothing in dist/ but the refused wheel, kept apart in its quarantine
    assert sorted(p.relative_to(tmp_path / "dist").parts[:2] for p in (tmp_path / "dist").rglob("*.whl")) == [
        (".refused", JOB)
    ]
    assert _published(tmp_path) == []
    _no_debris(tmp_path)
    assert _containers(docker_client) == before


def test_colliding_tuned_keys_stop_before_compiling(tmp_path: Path, debian_rocm_image: Any) -> None:
    source = tmp_path / "src"
    shutil.copytree(
        ROOT / "csrc", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    csv = source / "refkernels" / "tuned" / "gemm.csv"
    lines = csv.read_text().splitlines()
    csv.write_text("\n".join([*lines, lines[1]]) + "\n")  # the first data row again: a colliding key
    recipe = _recipe(tmp_path, source)
    started = time.monotonic()
    proc = _build(recipe, tmp_path)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 3, text
    assert "duplicate tuned key" in text and "gemm.csv" in text, text
    assert "building in" not in text  # no compiler was started
    assert time.monotonic() - started < 60
    assert not (tmp_path / "dist").exists()


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_mid_build_leaves_nothing(
    tmp_path: Path, debian_rocm_image: Any, docker_client: Any, signum: int, built: dict[str, Any]
) -> None:
    """Ctrl-C, or SIGTERM as a cancelled CI job sends: exit 130, no new wheel, no staging, no
    container; the previous output of the job stays as it was (an interrupt says nothing about it)."""
    recipe = _recipe(tmp_path, ROOT / "csrc")
    shutil.copytree(built["out"] / JOB, tmp_path / "dist" / JOB)
    previous = _tree(tmp_path / "dist")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "buildkit",
            "build",
            str(recipe),
            "--out",
            str(tmp_path / "dist"),
            "--no-cache",
            "--log-dir",
            str(tmp_path / "logs"),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # as from a terminal: a runner that started these tests in the background (``cmd &`` in a
        # script) passes SIGINT down ignored, and Python then keeps it ignored (no KeyboardInterrupt)
        preexec_fn=_default_sigint,
    )
    # wait until cibuildwheel's container of this build exists, then press Ctrl-C
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not _run_containers(docker_client, proc.pid):
        time.sleep(0.2)
    assert _run_containers(docker_client, proc.pid), "the build container never started"
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 130, out
    assert "interrupted" in out
    assert _tree(tmp_path / "dist") == previous
    assert REMOVED not in out
    _no_debris(tmp_path)
    assert _run_containers(docker_client, proc.pid) == set()  # every container of this build removed
    os.sync()


def test_failed_or_refused_job_removes_its_previous_wheel(tmp_path: Path, debian_rocm_image: Any) -> None:
    """recipe.yaml passes; the same recipe with a 10KiB size limit into the same --out is gated (not
    "up-to-date") and refused, and the wheel of the first build is removed so that `publish` cannot
    take it; a passing build again, then a source that does not compile (exit 9): removed too."""
    source = tmp_path / "src"
    shutil.copytree(
        ROOT / "csrc", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    recipe = _recipe(tmp_path, source)
    tight = _recipe(tmp_path, source, name="tight.yaml", size_budget={"limit": "10KiB"})
    first = _build(recipe, tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    again = _build(recipe, tmp_path)
    assert again.returncode == 0 and f"{JOB}  up-to-date" in again.stdout, again.stdout + again.stderr

    refused = _build(tight, tmp_path)
    text = refused.stdout + refused.stderr
    assert refused.returncode == 7, text
    assert "above the limit of" in text and REMOVED in refused.stderr, text
    assert not (tmp_path / "dist" / JOB).exists()
    assert len(_refused(tmp_path)) == 1
    dry = _buildkit("publish", "dist", "--recipe", str(recipe), "--dry-run", cwd=tmp_path)
    assert ".whl" not in dry.stdout, dry.stdout + dry.stderr

    assert _build(recipe, tmp_path).returncode == 0
    assert _refused(tmp_path) == []  # the passing build removed the superseded refusal
    # a kernel of refkernels (csrc/src), not of csrc/refops, which the copy of csrc/ carries too
    kernel = sorted((source / "src").glob("*.hip"))[0]
    kernel.write_text(kernel.read_text() + "\nthis is not C++;\n")
    broken = _build(recipe, tmp_path)
    text = broken.stdout + broken.stderr
    assert broken.returncode == 9, text
    assert REMOVED in broken.stderr, text
    assert not (tmp_path / "dist" / JOB).exists()
    _no_debris(tmp_path)


class _SocketProxy:
    """A unix-socket proxy to the engine's socket, killed to make the engine "die" mid-build."""

    def __init__(self, path: Path, upstream: str) -> None:
        self.path, self.upstream = path, upstream
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(64)
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self.upstream)
            with self.lock:
                self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def kill(self) -> None:
        self.server.close()
        with self.lock:
            for s in self.sockets:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
        self.path.unlink(missing_ok=True)


def test_engine_dying_mid_build_is_exit_8_naming_the_endpoint(
    tmp_path: Path, debian_rocm_image: Any, docker_client: Any
) -> None:
    """The build talks to the engine through a proxy that is killed as soon as cibuildwheel's wheel
    exists: exit 8 (no traceback) naming the endpoint, the step and the label of any leftovers."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        pytest.fail(f"this test proxies a unix socket; DOCKER_HOST is {host}")
    proxy_path = tmp_path / "engine.sock"
    proxy = _SocketProxy(proxy_path, host.removeprefix("unix://"))
    recipe = _recipe(tmp_path, ROOT / "csrc")
    before = _containers(docker_client)
    env = {**os.environ, "DOCKER_HOST": f"unix://{proxy_path}"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "buildkit",
            "build",
            str(recipe),
            "--force",
            "--out",
            "dist",
            "--log-dir",
            "logs",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline:
        if list((tmp_path / "dist").glob(".staging-*/wheelhouse/*.whl")):
            proxy.kill()
            break
        time.sleep(0.02)
    out, err = proc.communicate(timeout=600)
    proxy.kill()
    match: re.Match[str] | None = None
    try:
        assert proc.returncode == 8, out + err
        assert "Traceback" not in err, err
        assert f"the Docker engine at unix://{proxy_path} (from DOCKER_HOST) failed during" in err, err
        assert f"of {JOB}" in err
        match = re.search(r"--filter label=(io\.rocm-buildkit\.run=staging-[\w.-]+)\)", err)
        assert match, err
        assert not list((tmp_path / "dist").rglob("*.whl"))
        _no_debris(tmp_path)
    finally:
        # this build's leftovers: new containers with this process's build label, or with none
        # (another process's build on a shared engine is neither counted nor removed)
        prefix = f"staging-{JOB}-{proc.pid}-"
        left = set()
        for name in _containers(docker_client) - before:
            with contextlib.suppress(Exception):  # removed meanwhile by its owner
                run_id = docker_client.containers.get(name).labels.get(RUN_LABEL)
                if run_id is None or run_id.startswith(prefix):
                    left.add(name)
        labelled = (
            {c.name for c in docker_client.containers.list(all=True, filters={"label": match.group(1)})}
            if match
            else set()
        )
        for name in left:
            docker_client.containers.get(name).remove(force=True)
    assert left <= labelled, f"containers left without the label the hint names: {left - labelled}"


def test_regression_against_the_last_release_fails_the_job(
    built: dict[str, Any], tmp_path: Path, debian_rocm_image: Any
) -> None:
    """Publish the reference wheel to a static index, then build a newer version that drops gfx942:
    the recipe's no-regression rule fails the job, naming the removed arch, and dist/ stays empty."""
    index = tmp_path / "index"
    published = _buildkit("publish", str(built["out"]), "--to", str(index), cwd=tmp_path)
    assert published.returncode == 0, published.stdout + published.stderr
    recipe = _recipe(
        tmp_path,
        ROOT / "csrc",
        version={"base": "0.1.1", "local": "rocm{rocm}.manylinux.{policy}"},
        archs={"list": ["gfx908", "gfx90a"], "toolchain": "debian-trixie"},
        gate={"no_regression_against": (index / "simple").as_uri() + "/"},
    )
    proc = _build(recipe, tmp_path)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 7, text
    assert "regresses against the last release" in text and "gfx942" in text, text
    assert _published(tmp_path) == []
    [kept] = _refused(tmp_path)
    record = json.loads(kept.with_name(kept.name + ".refused.json").read_text())
    assert record["refused_by"] == "regression" and any("gfx942" in e for e in record["errors"]), record
    assert "buildkit diff --against-index" in text, text


def test_a_refused_wheel_is_kept_apart_and_never_published(tmp_path: Path, debian_rocm_image: Any) -> None:
    """The reference recipe with a 1 KiB size limit: exit 7; the wheel and its gate reports are in
    dist/.refused/<job>/, nothing in dist/<job>/; the summary names the path and the check command,
    which exits 7 with the same finding; publish publishes nothing. Built again with
    --keep-refused dist/refused (inside the publish tree): publish refuses that wheel by name."""
    recipe = _recipe(tmp_path, ROOT / "csrc", name="tiny.yaml", size_budget={"limit": "1KiB"})
    started = time.monotonic()
    proc = _build(recipe, tmp_path)
    print(f"refused reference build: {time.monotonic() - started:.1f}s")
    text = proc.stdout + proc.stderr
    assert proc.returncode == 7, text
    folder = tmp_path / "dist" / ".refused" / JOB
    [wheel] = _refused(tmp_path)
    assert wheel.parent == folder
    suffixes = ["", ".check.json", ".check.txt", ".refused.json"]
    assert sorted(p.name for p in folder.iterdir()) == [wheel.name + s for s in suffixes]
    assert not (tmp_path / "dist" / JOB).exists()
    assert not list((tmp_path / "dist").rglob("*.manifest.json"))
    shown = f"dist/.refused/{JOB}/{wheel.name}"
    examine = f"buildkit check {shown} --recipe {recipe} --job {JOB}"
    assert f"  refused   {shown} (kept apart, never published)" in proc.stdout.splitlines(), proc.stdout
    assert f"  examine   {examine}" in proc.stdout.splitlines(), proc.stdout
    assert f"refused wheel kept in {shown} (never published)" in proc.stderr, proc.stderr
    record = json.loads((folder / f"{wheel.name}.refused.json").read_text())
    assert record["wheel"]["sha256"] == sha256_file(wheel)
    [error] = record["errors"]
    assert error.startswith("[size] wheel is ") and error.endswith("above the limit of 1.0 KiB"), error

    # the command the summary gives: exit 7, the same finding and the same JSON report as kept
    check = _buildkit(*examine.split()[1:], cwd=tmp_path)
    assert check.returncode == 7, check.stdout + check.stderr
    assert f"  ERROR {error}" in check.stdout.splitlines(), check.stdout
    report = (folder / f"{wheel.name}.check.txt").read_text()
    assert f"  ERROR {error}" in report.splitlines()
    as_json = _buildkit(*examine.split()[1:], "--json", cwd=tmp_path)
    assert json.loads(as_json.stdout) == json.loads((folder / f"{wheel.name}.check.json").read_text())

    index = tmp_path / "index"
    published = _buildkit("publish", "dist", "--to", str(index), cwd=tmp_path)
    assert published.returncode == 10, published.stdout + published.stderr
    assert "no wheels to publish" in published.stderr and "the gate refused are kept in" in published.stderr
    assert not (index / "simple").exists()

    # --keep-refused inside the publish tree: a note at build time, a refusal by name at publish time
    started = time.monotonic()
    again = _build(recipe, tmp_path, "--keep-refused", "dist/refused")
    print(f"refused rebuild with --keep-refused: {time.monotonic() - started:.1f}s")
    assert again.returncode == 7, again.stdout + again.stderr
    assert "--keep-refused dist/refused lies inside --out" in again.stderr, again.stderr
    [kept] = sorted((tmp_path / "dist" / "refused" / JOB).glob("*.whl"))
    assert f"  refused   dist/refused/{JOB}/{kept.name} (kept apart, never published)" in again.stdout
    published = _buildkit("publish", "dist", "--to", str(index), cwd=tmp_path)
    text = published.stdout + published.stderr
    assert published.returncode == 10, text
    assert f"  dist/refused/{JOB}/{kept.name}: the gate refused this wheel in `buildkit build`" in text, text
    assert f"never published: move dist/refused/{JOB} out of the publish tree" in text, text
    assert not (index / "simple").exists()
    _no_debris(tmp_path)
