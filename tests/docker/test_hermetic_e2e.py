"""Hermetic builds and the container's view, on the real engine with the reference recipe.

The build container of a hermetic build (the default) has no network, no host mount, no Docker
socket and none of the host's environment; it runs as root (cibuildwheel needs it: see
``test_cibuildwheel_cannot_build_as_a_non_root_user``). Each promise is checked twice where it can
be: from inside (a ``before_build`` probe, ``PROBE`` below, prints what the build sees) and from
the engine (the build container's ``docker inspect``, read while it runs). The pip packages it
installs come from the wheelhouse resolved on the host and locked in the manifest; a requirement
that needs an index fails with its name and the fix; ``network: true`` builds as before; an
air-gapped host builds and verifies from a pre-filled wheelhouse without any index.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from buildkit.building import cibw, requirements
from buildkit.manifest import lock_path, sha256_file
from buildkit.manifest import read as read_manifest
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe
from tests.helpers.wheel_zip import write_wheel

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
JOB = "cp313-rocm5.7"
HOST_MARKER = "BUILDKIT_E2E_HOST_ONLY"
PROBE = r'''
"""What the build sees, printed as one CONTAINER-VIEW line (run by the recipe's before_build)."""
import json, os, socket

def connect():
    try:
        socket.create_connection(("pypi.org", 443), 3).close()
        return "connected"
    except OSError as exc:
        return f"failed: {exc!r}"

with open("/proc/self/mountinfo") as fh:
    mounts = sorted({line.split()[4] for line in fh})
view = {
    "interfaces": sorted(os.listdir("/sys/class/net")),
    "connect": connect(),
    "docker_socket": [p for p in ("/var/run/docker.sock", "/run/docker.sock") if os.path.exists(p)],
    "host_mount": os.path.exists("/host"),
    "mounts": mounts,
    "uid": os.getuid(),
    "env": dict(os.environ),
}
print("CONTAINER-VIEW:" + json.dumps(view, sort_keys=True))
'''
#: mount points of any container (the engine's own: procfs, devices, cgroups, its resolv.conf/hosts/
#: hostname files) and the compiler-cache volume; anything else would be a mount from the host
CONTAINER_MOUNTS = re.compile(
    r"/|/proc(/.*)?|/dev(/.*)?|/sys(/.*)?|/etc/(resolv\.conf|hostname|hosts)|/ccache"
)
#: what cibuildwheel itself adds to the environment of a build step (platforms/linux.py), and the shell's
CIBUILDWHEEL_ENV = {
    "CIBUILDWHEEL",
    "CIBUILDWHEEL_BUILD_IDENTIFIER",
    "PIP_DISABLE_PIP_VERSION_CHECK",
    "PIP_ROOT_USER_ACTION",
    "PIP_CERT",
    "SOURCE_DATE_EPOCH",
    "HOME",
    "HOSTNAME",
    "PATH",
    "PWD",
    "OLDPWD",
    "SHLVL",
    "_",
    "LC_CTYPE",  # PEP 538: the probe's own Python coerces the C locale to C.UTF-8
}


def _source(tmp: Path, build_requires: tuple[str, ...] = ()) -> Path:
    """A copy of csrc/ with the probe (and extra build requirements) in it."""
    source = tmp / "csrc"
    shutil.copytree(
        ROOT / "csrc", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    (source / "buildkit_probe.py").write_text(PROBE)
    if build_requires:
        text = (source / "pyproject.toml").read_text()
        extra = "".join(f', "{r}"' for r in build_requires)
        (source / "pyproject.toml").write_text(
            text.replace('requires = ["setuptools>=77"', f'requires = ["setuptools>=77"{extra}', 1)
        )
    return source


def _recipe(tmp: Path, source: Path, **changes: Any) -> Path:
    data = yaml.safe_load((ROOT / "recipes" / "reference-trixie.yaml").read_text())
    data["source"] = {"path": str(source)}
    data.update(changes)
    path = tmp / "recipe.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@dataclass
class EngineView:
    """The build containers of one buildkit process, as the engine inspected them while they ran."""

    run_prefix: str
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)


def _watch(client: Any, view: EngineView, stop: threading.Event) -> None:
    while not stop.is_set():
        for c in client.containers.list(
            filters={"label": "io.rocm-buildkit.container=cibuildwheel"}, ignore_removed=True
        ):
            if (
                c.labels.get("io.rocm-buildkit.run", "").startswith(view.run_prefix)
                and c.name not in view.seen
            ):
                view.seen[c.name] = c.attrs
        stop.wait(0.5)


@dataclass
class Built:
    proc: subprocess.CompletedProcess[str]
    log: str
    seconds: float
    engine: EngineView
    tmp: Path

    @property
    def view(self) -> dict[str, Any]:
        lines = [line for line in self.log.splitlines() if line.startswith("CONTAINER-VIEW:")]
        assert len(lines) == 1, self.log[-3000:]
        data: dict[str, Any] = json.loads(lines[0].removeprefix("CONTAINER-VIEW:"))
        return data

    @property
    def wheel(self) -> Path:
        wheels = sorted((self.tmp / "dist").glob(f"{JOB}/*.whl"))
        assert len(wheels) == 1, self.proc.stdout + self.proc.stderr + self.log[-3000:]
        return wheels[0]


def _build(
    client: Any,
    tmp: Path,
    recipe: Path,
    *args: str,
    env: dict[str, str] | None = None,
    command: str = "build",
) -> Built:
    """``buildkit build RECIPE`` (or verify) with the engine's view of its build containers."""
    cmd = [sys.executable, "-m", "buildkit", command, *([str(recipe)] if command == "build" else [])]
    if command == "build":
        cmd += ["--out", str(tmp / "dist"), "--log-dir", str(tmp / "logs")]
    started = time.monotonic()
    popen = subprocess.Popen(
        [*cmd, *args],
        cwd=tmp,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    engine = EngineView(run_prefix=f"staging-{JOB}-{popen.pid}-")
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(client, engine, stop), daemon=True)
    watcher.start()
    try:
        out, err = popen.communicate(timeout=1800)
    finally:
        stop.set()
        watcher.join(10)
    seconds = time.monotonic() - started
    proc = subprocess.CompletedProcess(popen.args, popen.returncode, out, err)
    log_file = tmp / "logs" / f"{JOB}.log"
    log = log_file.read_text(errors="replace") if log_file.is_file() else ""
    return Built(proc, log, seconds, engine, tmp)


PROBE_HOOK = "python /project/buildkit_probe.py"


@pytest.fixture(scope="module")
def hermetic(tmp_path_factory: pytest.TempPathFactory, debian_rocm_image: Any, docker_client: Any) -> Built:
    """The reference recipe, hermetic (the default), with the probe, a test_command and a
    test_requires (installed in cibuildwheel's test virtualenv from the wheelhouse), from a host
    whose environment carries a marker variable and another HOME."""
    tmp = tmp_path_factory.mktemp("hermetic")
    recipe = _recipe(
        tmp,
        _source(tmp),
        before_build=PROBE_HOOK,
        test_command="python -c \"import refkernels, six; print('TEST-PROBE: six', six.__version__)\"",
        test_requires=["six==1.17.0"],
    )
    home = tmp / "host-home"
    home.mkdir()
    env = {HOST_MARKER: "host-only-value", "HOME": str(home), "XDG_CACHE_HOME": str(Path.home() / ".cache")}
    return _build(docker_client, tmp, recipe, env=env)


def test_a_hermetic_build_passes_without_network(hermetic: Built) -> None:
    assert hermetic.proc.returncode == 0, hermetic.proc.stdout + hermetic.proc.stderr + hermetic.log[-4000:]
    view = hermetic.view
    assert view["interfaces"] == ["lo"], view["interfaces"]
    assert view["connect"].startswith("failed: "), view["connect"]
    assert "TEST-PROBE: six 1.17.0" in hermetic.log  # test_requires came from the wheelhouse
    print(f"hermetic reference build: {hermetic.seconds:.1f}s")


def test_the_engine_ran_the_build_container_without_network_mounts_or_privileges(hermetic: Built) -> None:
    assert len(hermetic.engine.seen) == 1, hermetic.engine.seen.keys()
    (attrs,) = hermetic.engine.seen.values()
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["Privileged"] is False
    # the one volume is the compiler cache (a named volume): no host path is bound in
    assert [b.split(":")[1] for b in host.get("Binds") or []] == ["/ccache"]
    assert not [b for b in host.get("Binds") or [] if b.startswith("/")]
    assert [m["Type"] for m in attrs["Mounts"]] == ["volume"]  # the compiler cache, nothing of the host
    assert attrs["Mounts"][0]["Destination"] == "/ccache"
    assert attrs["Config"]["User"] in ("", "root", "0")  # root: see the non-root test below


def test_the_container_sees_no_host_mount_no_socket_and_no_host_environment(
    hermetic: Built, docker_client: Any
) -> None:
    view = hermetic.view
    assert view["docker_socket"] == [] and view["host_mount"] is False
    assert [m for m in view["mounts"] if not CONTAINER_MOUNTS.fullmatch(m)] == [], view["mounts"]
    env: dict[str, str] = view["env"]
    assert HOST_MARKER not in env and "host-only-value" not in json.dumps(env)
    assert env["HOME"] == "/root" and str(hermetic.tmp) not in json.dumps(env)
    # every variable is the image's, buildkit's (the job's environment) or cibuildwheel's own
    (attrs,) = hermetic.engine.seen.values()
    image_env = {
        item.split("=", 1)[0] for item in docker_client.images.get(attrs["Image"]).attrs["Config"]["Env"]
    }
    job = expand(load_recipe(hermetic.tmp / "recipe.yaml"), env={}).job(JOB)
    settings = cibw.CibwSettings(  # with a statistics log: each build counts its own compiles
        image="x", source_date_epoch=0, ccache_volume="v", with_ca_bundle=False, network=False, stats_log="s"
    )
    ours = set(cibw.container_environment(job, settings))
    assert set(env) - image_env - ours - CIBUILDWHEEL_ENV == set()
    assert env["PIP_NO_INDEX"] == "1" and env["PIP_FIND_LINKS"] == "/project/.buildkit/wheelhouse"


def test_the_build_runs_as_root_in_the_container(hermetic: Built) -> None:
    """What is true today (docs/REFERENCE.md "What a build guarantees"): uid 0 in a throwaway container
    with no network, no mount of the host and no socket; cibuildwheel cannot run the build as another user."""
    assert hermetic.view["uid"] == 0


def test_the_manifest_records_the_lock_and_network(hermetic: Built) -> None:
    wheel = hermetic.wheel
    data = read_manifest(wheel)
    assert data["network"] is False
    recorded = data["build_requirements"]
    names = {f["name"] for f in recorded["files"]}
    assert {"setuptools", "six"} <= names, names
    assert recorded["requested"][:1] == ["setuptools>=77"] and "six==1.17.0" in recorded["requested"]
    lock = lock_path(wheel)
    assert recorded["lock"] == lock.name
    text = lock.read_text()
    for f in recorded["files"]:
        assert f"{f['name']}=={f['version']} --hash=sha256:{f['sha256']}" in text
    assert requirements.Lock.from_json(JOB, recorded).sha256 == recorded["sha256"]
    # the files pip installed in the container are the locked ones (pip says so in the log)
    assert "Looking in links: /project/.buildkit/wheelhouse" in hermetic.log
    assert "Looking in indexes" not in hermetic.log.split("-m cibuildwheel", 1)[1]


def test_network_true_builds_as_before(tmp_path: Path, debian_rocm_image: Any, docker_client: Any) -> None:
    recipe = _recipe(tmp_path, _source(tmp_path), before_build=PROBE_HOOK, network=True)
    built = _build(docker_client, tmp_path, recipe)
    assert built.proc.returncode == 0, built.proc.stdout + built.proc.stderr + built.log[-4000:]
    assert [i for i in built.view["interfaces"] if i != "lo"], built.view["interfaces"]
    (attrs,) = built.engine.seen.values()
    assert attrs["HostConfig"]["NetworkMode"] != "none"
    data = read_manifest(built.wheel)
    assert data["network"] is True and data["build_requirements"] is None
    assert not lock_path(built.wheel).exists()
    assert "pip download" not in built.log
    print(f"networked reference build: {built.seconds:.1f}s ({built.view['connect']})")


def test_an_unresolvable_build_requirement_fails_before_any_container(
    tmp_path: Path, debian_rocm_image: Any, docker_client: Any
) -> None:
    recipe = _recipe(tmp_path, _source(tmp_path, ("rocm-buildkit-nonexistent-pkg==1.0",)))
    built = _build(docker_client, tmp_path, recipe)
    assert built.proc.returncode == 9, built.proc.stdout + built.proc.stderr
    err = built.proc.stderr
    assert "no wheel of rocm-buildkit-nonexistent-pkg==1.0 for CPython 3.13" in err, err
    assert "pyproject.toml [build-system] requires" in err and "`network: true`" in err, err
    assert "-m cibuildwheel" not in built.log and built.engine.seen == {}
    assert not (tmp_path / "dist" / JOB).exists()
    assert not [p for p in (tmp_path / "dist").iterdir() if p.name.startswith(".staging-")]


def test_a_hook_that_needs_the_index_fails_naming_it_and_the_fix(
    tmp_path: Path, debian_rocm_image: Any, docker_client: Any
) -> None:
    recipe = _recipe(tmp_path, _source(tmp_path), before_build="pip install six")
    built = _build(docker_client, tmp_path, recipe)
    assert built.proc.returncode == 9, built.proc.stdout + built.proc.stderr
    err = built.proc.stderr
    assert "No matching distribution found for six" in built.log
    assert "pip in the build container found no six in the wheelhouse" in err, err
    assert "`network: true`" in err
    assert not (tmp_path / "dist" / JOB).exists()


@pytest.fixture(scope="module")
def air_gapped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A wheelhouse filled beforehand (here with pip, while the network is there), and the
    environment of a host without any index: PIP_NO_INDEX=1, no pip configuration, and an index URL
    that answers nothing (a build that asked it anything would fail)."""
    tmp = tmp_path_factory.mktemp("air-gapped")
    house = tmp / "wheelhouse"
    job = expand(load_recipe(ROOT / "recipes" / "reference-trixie.yaml"), env={}).job(JOB)
    subprocess.run(
        requirements.resolve_command(job, ["setuptools>=77"], house), check=True, capture_output=True
    )
    env = {
        "PIP_NO_INDEX": "1",
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_EXTRA_INDEX_URL": "",
        "PIP_FIND_LINKS": "",
    }
    return {"tmp": tmp, "house": house, "env": env}


def test_an_air_gapped_host_builds_and_verifies_from_a_prefilled_wheelhouse(
    air_gapped: dict[str, Any], debian_rocm_image: Any, docker_client: Any
) -> None:
    tmp, house, env = air_gapped["tmp"], air_gapped["house"], air_gapped["env"]
    recipe = _recipe(tmp, _source(tmp))
    built = _build(docker_client, tmp, recipe, "--wheelhouse", str(house), env=env)
    assert built.proc.returncode == 0, built.proc.stdout + built.proc.stderr + built.log[-4000:]
    assert f"--no-index --find-links {house}" in built.log
    wheel = built.wheel
    locked = {f["file"] for f in read_manifest(wheel)["build_requirements"]["files"]}
    assert locked == {p.name for p in house.iterdir()}
    # verify downloads exactly the locked files by hash, no resolution: a newer setuptools in the
    # folder now (an empty decoy, which no build could use) is not even looked at
    write_wheel(house / "setuptools-999.0-py3-none-any.whl", {"setuptools/__init__.py": b""})
    args = (str(wheel), "--recipe", str(recipe), "--wheelhouse", str(house), "--json")
    verified = _build(docker_client, tmp, recipe, *args, env=env, command="verify")
    assert verified.proc.returncode == 0, verified.proc.stdout + verified.proc.stderr
    result = json.loads(verified.proc.stdout)
    assert result["identical"] is True, result
    assert not [n for n in result["notes"] if "build requirements" in n], result["notes"]
    assert result["original_sha256"] == sha256_file(wheel)


def test_cibuildwheel_cannot_build_as_a_non_root_user(
    tmp_path: Path, debian_rocm_image: Any, docker_client: Any
) -> None:
    """Why the build stays root: cibuildwheel creates /project and writes its CA bundle at / of the
    container before anything runs, and the image's Pythons under /opt/python are root's. Run as
    another user (``create_args: --user``), it fails at its first step. When this test fails,
    cibuildwheel has learnt to: the list of promises in docs/REFERENCE.md should then say non-root."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "nonroot"\nversion = "1"\n'
    )
    run = f"nonroot-{os.getpid()}"
    engine = (
        "docker; disable_host_mount: true; create_args: --user=65534:65534 --network=none "
        f"--label=io.rocm-buildkit.container=cibuildwheel --label=io.rocm-buildkit.run={run}"
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        **{k: v for k, v in os.environ.items() if k.startswith("DOCKER_")},
        "CIBW_PLATFORM": "linux",
        "CIBW_BUILD": "cp313-manylinux_x86_64",
        "CIBW_MANYLINUX_X86_64_IMAGE": debian_rocm_image.tag,
        "CIBW_CONTAINER_ENGINE": engine,
    }
    proc = subprocess.run(
        [sys.executable, "-m", "cibuildwheel", "--output-dir", str(tmp_path / "out"), "."],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    left = docker_client.containers.list(all=True, filters={"label": f"io.rocm-buildkit.run={run}"})
    for container in left:
        container.remove(force=True)
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "mkdir: cannot create directory '/project': Permission denied" in proc.stdout + proc.stderr
    assert not list((tmp_path / "out").glob("*.whl")) and left == []
