"""``docker_engine.throwaway``, the one owner of buildkit's containers, on a fake Docker client.

The fake keeps the engine's side (containers by name, with labels) so that each test can see what
was left on the "engine" after the block: removal on an error, on Ctrl-C, after a Ctrl-C that came
while the engine was creating the container (recovered by name), and the keep switch. The real
engine is exercised in tests/docker/test_prune_containers.py.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from buildkit import docker_engine
from buildkit.docker_engine import CONTAINER_LABEL, KEEP_ENV, RUN_LABEL, throwaway

ROOT = Path(__file__).resolve().parents[2]


class FakeContainer:
    def __init__(self, engine: FakeEngine, name: str, command: list[str], kwargs: dict[str, Any]) -> None:
        self.engine, self.name, self.command, self.kwargs = engine, name, command, kwargs
        self.labels: dict[str, str] = dict(kwargs.get("labels", {}))
        self.short_id = name[-6:]
        self.status = "created"

    def start(self) -> None:
        self.status = "running"

    def wait(self, timeout: int | None = None) -> dict[str, int]:
        self.engine.waited.append(timeout)
        self.status = "exited"
        return {"StatusCode": self.engine.exit_code}

    def logs(self, stdout: bool = True, stderr: bool = False) -> bytes:
        return b"out\n" if stdout else b"err\n"

    def remove(self, force: bool = False) -> None:
        assert force
        if self.engine.refuse_remove:
            raise docker.errors.APIError("500 Server Error: removal refused")
        if self.name not in self.engine.boxes:
            raise docker.errors.NotFound("gone")
        del self.engine.boxes[self.name]


class FakeContainers:
    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine

    def create(self, image: str, command: list[str], **kwargs: Any) -> FakeContainer:
        name = kwargs["name"]
        assert name not in self.engine.boxes
        box = FakeContainer(self.engine, name, command, kwargs)
        self.engine.boxes[name] = box
        if self.engine.interrupt_create:  # Ctrl-C after the engine made it, before the answer came
            raise KeyboardInterrupt
        return box

    def get(self, name: str) -> FakeContainer:
        self.engine.looked_up.append(name)
        try:
            return self.engine.boxes[name]
        except KeyError:
            raise docker.errors.NotFound(f"no such container: {name}") from None

    def list(self, all: bool = False, filters: dict[str, str] | None = None) -> list[FakeContainer]:
        assert all
        key, _, value = (filters or {})["label"].partition("=")
        return [
            b for b in self.engine.boxes.values() if key in b.labels and (not value or b.labels[key] == value)
        ]


class FakeEngine:
    def __init__(self) -> None:
        self.boxes: dict[str, FakeContainer] = {}
        self.interrupt_create = False
        self.refuse_remove = False
        self.exit_code = 0
        self.waited: list[int | None] = []
        self.looked_up: list[str] = []
        self.containers = FakeContainers(self)


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    monkeypatch.delenv(KEEP_ENV, raising=False)
    return FakeEngine()


def test_runs_and_removes(engine: FakeEngine) -> None:
    with throwaway(engine, "img", ["sh", "-c", "true"], purpose="build-probe", run_id="r1") as box:
        assert list(engine.boxes) == [box.name]
        created = engine.boxes[box.name]
        done = box.run(timeout=120)
    assert (done.exit_code, done.stdout, done.stderr) == (0, b"out\n", b"err\n")
    assert engine.waited == [120]
    assert engine.boxes == {}
    owner = docker_engine.Owner.this_process().labels()
    assert created.labels == {CONTAINER_LABEL: "build-probe", RUN_LABEL: "r1", **owner}
    assert owner[docker_engine.OWNER_PREFIX + "pid"] == str(os.getpid())
    assert created.kwargs["network_mode"] == "none"
    assert box.name.startswith("buildkit-build-probe-")


def test_network_environment_and_devices_are_passed(engine: FakeEngine) -> None:
    with throwaway(
        engine,
        "img",
        ["infinity"],
        purpose="smoke",
        network=True,
        entrypoint=["sleep"],
        environment={"A": "1"},
        devices=["/dev/kfd:/dev/kfd:rwm"],
        group_add=["44"],
    ) as box:
        kwargs = engine.boxes[box.name].kwargs
    assert kwargs["network_mode"] == "bridge"
    assert kwargs["entrypoint"] == ["sleep"] and kwargs["environment"] == {"A": "1"}
    assert kwargs["devices"] == ["/dev/kfd:/dev/kfd:rwm"] and kwargs["group_add"] == ["44"]
    assert RUN_LABEL not in kwargs["labels"]  # no build: no run label
    assert kwargs["labels"][CONTAINER_LABEL] == "smoke"


def test_named_volumes_are_mounted_and_host_paths_refused(engine: FakeEngine) -> None:
    with throwaway(
        engine, "img", ["ccache", "-s"], purpose="ccache-stats", volumes={"cc-vol": "/ccache"}
    ) as box:
        kwargs = engine.boxes[box.name].kwargs
    assert kwargs["volumes"] == {"cc-vol": {"bind": "/ccache", "mode": "rw"}}
    for host in ("/etc", "./here", "~/x"):
        with (
            pytest.raises(ValueError, match="host paths"),
            throwaway(engine, "img", ["x"], purpose="ccache-stats", volumes={host: "/ccache"}),
        ):
            pass
    assert engine.boxes == {}  # refused before the engine made anything


def test_removed_on_error(engine: FakeEngine) -> None:
    with pytest.raises(RuntimeError, match="boom"), throwaway(engine, "img", ["x"], purpose="ceilings"):
        assert engine.boxes
        raise RuntimeError("boom")
    assert engine.boxes == {}


def test_removed_on_keyboard_interrupt(engine: FakeEngine) -> None:
    with pytest.raises(KeyboardInterrupt), throwaway(engine, "img", ["x"], purpose="smoke") as box:
        box.start()
        raise KeyboardInterrupt
    assert engine.boxes == {}


def test_interrupted_create_is_recovered_by_name(engine: FakeEngine) -> None:
    engine.interrupt_create = True
    with pytest.raises(KeyboardInterrupt), throwaway(engine, "img", ["x"], purpose="provenance"):
        pytest.fail("the block must not run")  # pragma: no cover
    assert len(engine.looked_up) == 1 and engine.looked_up[0].startswith("buildkit-provenance-")
    assert engine.boxes == {}


def test_failed_create_looks_up_and_finds_nothing(engine: FakeEngine) -> None:
    def refuse(image: str, command: list[str], **kwargs: Any) -> Any:
        raise docker.errors.APIError("400 Client Error: invalid reference format")

    engine.containers.create = refuse  # type: ignore[method-assign]
    warned: list[str] = []
    with (
        pytest.raises(docker.errors.APIError),
        throwaway(engine, "img", ["x"], purpose="ceilings", warn=warned.append),
    ):
        pass  # pragma: no cover
    assert len(engine.looked_up) == 1 and warned == []


def test_removal_failure_is_said_not_raised_and_the_first_error_wins(engine: FakeEngine) -> None:
    engine.refuse_remove = True
    warned: list[str] = []
    with (
        pytest.raises(RuntimeError, match="first"),
        throwaway(engine, "img", ["x"], purpose="smoke", warn=warned.append) as box,
    ):
        raise RuntimeError("first")
    assert len(warned) == 1 and box.name in warned[0] and "prune --containers" in warned[0]
    assert list(engine.boxes) == [box.name]


def test_keep_switch_leaves_the_container_and_names_it(
    engine: FakeEngine, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEEP_ENV, "1")
    with (
        pytest.raises(RuntimeError),
        throwaway(engine, "img", ["x"], purpose="build-probe", run_id="r", warn=lambda _l: None) as box,
    ):
        raise RuntimeError("look inside")
    assert list(engine.boxes) == [box.name]
    err = capsys.readouterr().err
    assert box.name in err and KEEP_ENV in err
    assert docker_engine.remove_run_containers(engine, "r") is True  # kept too
    assert list(engine.boxes) == [box.name]


def test_keep_switch_names_cibuildwheels_container_of_the_run_once_each(
    engine: FakeEngine, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """cibuildwheel creates its container itself (with the run's label): keeping the run's containers
    prints its name, and a throwaway's already named is not named twice."""
    monkeypatch.setenv(KEEP_ENV, "1")
    engine.containers.create(
        "img", ["x"], name="cibuildwheel-4f2a", labels=docker_engine.container_labels("cibuildwheel", "r9")
    )
    with throwaway(engine, "img", ["x"], purpose="build-probe", run_id="r9", warn=lambda _l: None) as box:
        pass
    assert docker_engine.remove_run_containers(engine, "r9") is True
    assert sorted(engine.boxes) == sorted([box.name, "cibuildwheel-4f2a"])
    err = capsys.readouterr().err
    assert err.count("cibuildwheel-4f2a") == 1 and err.count(box.name) == 1
    assert f"{KEEP_ENV}: kept the cibuildwheel container cibuildwheel-4f2a" in err
    monkeypatch.delenv(KEEP_ENV)
    assert docker_engine.remove_run_containers(engine, "r9") is True
    assert engine.boxes == {}


@pytest.mark.parametrize(("value", "keep"), [("1", True), ("yes", True), ("0", False), ("", False)])
def test_keep_switch_values(value: str, keep: bool) -> None:
    assert docker_engine.keep_containers({KEEP_ENV: value}) is keep


def test_remove_run_containers_removes_only_that_run(engine: FakeEngine) -> None:
    for purpose, run in (("cibuildwheel", "a"), ("build-probe", "a"), ("provenance", "b")):
        engine.containers.create(
            "img", ["x"], name=f"{purpose}-{run}", labels=docker_engine.container_labels(purpose, run)
        )
    assert docker_engine.remove_run_containers(engine, "a") is True
    assert list(engine.boxes) == ["provenance-b"]


def dead_owner(purpose: str, run_id: str | None = None) -> dict[str, str]:
    """The labels a container of ``purpose`` got from a process that has exited since (a real child
    process, its start time read while it ran)."""
    child = subprocess.Popen(["sleep", "60"])
    try:
        labels = {
            **docker_engine.container_labels(purpose, run_id),
            **docker_engine.Owner(
                socket.gethostname(),
                docker_engine._boot_id(),
                child.pid,
                docker_engine._start_time(child.pid) or "",
            ).labels(),
        }
    finally:
        child.kill()
        child.wait()
    return labels


def test_an_owner_lives_while_its_process_runs() -> None:
    """Issue 38, case 10: the owner recorded is this process: alive; a process that exited, a pid
    now another process's, another boot: gone; another host: cannot be told (a prune leaves it)."""
    me = docker_engine.Owner.this_process()
    assert me.alive() == (True, f"owner pid {os.getpid()} on {socket.gethostname()} is running")
    gone = docker_engine.Owner.of(dead_owner("smoke"))
    assert gone is not None and gone.alive()[0] is False and "is gone" in gone.alive()[1]
    reused = dataclasses.replace(me, start=str(int(me.start) + 1))
    assert reused.alive() == (
        False,
        f"owner pid {me.pid} on {me.host} is gone (the pid is another process's now)",
    )
    rebooted = dataclasses.replace(me, boot="00000000-0000-0000-0000-000000000000")
    assert rebooted.alive()[0] is False and "rebooted" in rebooted.alive()[1]
    elsewhere = dataclasses.replace(me, host="build-runner-7")
    assert elsewhere.alive() == (
        None,
        f"owner pid {me.pid} on build-runner-7, another host: cannot tell whether it runs",
    )
    assert docker_engine.Owner.of({CONTAINER_LABEL: "smoke"}) is None  # an older buildkit's container


def test_prune_removes_only_containers_whose_owner_is_gone(engine: FakeEngine) -> None:
    engine.containers.create("img", ["x"], name="live", labels=docker_engine.container_labels("smoke"))
    engine.containers.create("img", ["x"], name="cibw", labels=dead_owner("cibuildwheel", "staging-x"))
    engine.containers.create("img", ["x"], name="old-exited", labels={CONTAINER_LABEL: "smoke"})
    engine.containers.create("img", ["x"], name="old-running", labels={CONTAINER_LABEL: "smoke"})
    engine.boxes["old-exited"].status = "exited"
    engine.boxes["old-running"].status = "running"
    engine.containers.create("img", ["x"], name="theirs", labels={"com.example": "x"})
    found = {box.name: box for box in docker_engine.labelled_containers(engine)}
    assert {name for name, box in found.items() if box.live} == {"live", "old-running"}
    assert "is running" in found["live"].owner and "is gone" in found["cibw"].owner
    assert "no owner recorded" in found["old-running"].owner
    pruned = docker_engine.prune_containers(engine)
    assert sorted((p.name, p.purpose, p.run_id) for p in pruned) == [
        ("cibw", "cibuildwheel", "staging-x"),
        ("old-exited", "smoke", None),
    ]
    assert sorted(engine.boxes) == ["live", "old-running", "theirs"]


# --------------------------------------------------------------------------- one owner
def _creates_containers(path: Path) -> bool:
    """True when the module calls ``<anything>.containers.create(...)`` or ``.containers.run(...)``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if (
            node.func.attr in ("create", "run")
            and isinstance(owner, ast.Attribute)
            and owner.attr == "containers"
        ):
            return True
    return False


def test_exactly_one_module_creates_containers() -> None:
    creators = sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "buildkit").rglob("*.py") if _creates_containers(p)
    )
    assert creators == ["buildkit/docker_engine.py"]


def test_the_scan_sees_a_creator(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text("def f(client):\n    return client.containers.run('img', ['true'])\n")
    assert _creates_containers(sample)
    sample.write_text("def f(client):\n    return client.containers.list(all=True)\n")
    assert not _creates_containers(sample)
