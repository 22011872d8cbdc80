"""The Docker engine: connecting to the one the user means, and the one owner of throwaway containers.

:func:`connect` reads the current context (``DOCKER_CONTEXT`` or the CLI's ``config.json``) through
the SDK's own context API (``from_env()`` ignores ``docker context use``); a daemon that does not
answer raises :class:`~buildkit.errors.DockerUnavailable` (exit 8) naming the endpoint it tried.

:func:`throwaway` is the only place buildkit creates a container; cibuildwheel creates its own, with
:func:`container_labels` passed through its ``create_args``. Every one carries :data:`CONTAINER_LABEL`
(a build's also :data:`RUN_LABEL`) and its :class:`Owner`; :func:`prune_containers` removes what a
hard kill left, only where the owner is gone (docs/REFERENCE.md, ``image prune --containers``)."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import docker.context
import docker.errors
import requests
from docker.client import DockerClient, from_env

from buildkit.errors import DockerUnavailable

DEFAULT_TIMEOUT = 120


@dataclass(frozen=True)
class Endpoint:
    """Where the engine is expected: ``host`` (a URL) and what named it (``source``)."""

    host: str
    source: str


def _current_context() -> docker.context.Context | None:
    try:
        context = docker.context.ContextAPI.get_current_context()
    except (docker.errors.DockerException, OSError, ValueError):
        return None
    if context is None or context.name == "default":
        return None
    return context


def endpoint(env: dict[str, str] | None = None) -> Endpoint:
    """The engine endpoint that :func:`connect` will use, without contacting it."""
    environ = os.environ if env is None else env
    host = environ.get("DOCKER_HOST")
    if host:
        return Endpoint(host, "DOCKER_HOST")
    context = _current_context() if env is None else None
    if context is not None and context.Host:
        return Endpoint(context.Host, f"docker context {context.name!r}")
    return Endpoint("unix:///var/run/docker.sock", "default socket")


def _unavailable(where: Endpoint, exc: BaseException) -> DockerUnavailable:
    return DockerUnavailable(
        f"no Docker engine answers at {where.host} (from {where.source}): {exc}\n"
        "  hint: start dockerd (ci/install-docker.sh does it), or point DOCKER_HOST or "
        "`docker context use` at a running engine"
    )


#: what the Docker SDK raises when the engine stops answering or refuses a request mid-way
ENGINE_ERRORS: tuple[type[BaseException], ...] = (
    docker.errors.DockerException,
    requests.exceptions.RequestException,
)


def engine_failed(exc: BaseException, *, during: str, hint: str = "") -> DockerUnavailable:
    """A :class:`DockerUnavailable` (exit 8) for one of :data:`ENGINE_ERRORS` raised ``during`` a
    step: names the endpoint of :func:`endpoint` and the step; ``hint`` is added as a hint line."""
    where = endpoint()
    text = f"the Docker engine at {where.host} (from {where.source}) failed during {during}: {exc}"
    if hint:
        text += f"\n  hint: {hint}"
    return DockerUnavailable(text)


def connect(*, timeout: int = DEFAULT_TIMEOUT) -> DockerClient:
    """A client for the engine named by ``DOCKER_HOST`` or the current context, checked with a ping."""
    where = endpoint()
    try:
        if where.source.startswith("docker context"):
            context = _current_context()
            tls = context.TLSConfig if context is not None else None
            client = DockerClient(base_url=where.host, tls=tls or False, timeout=timeout)
        else:
            client = from_env(timeout=timeout)
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException, OSError) as exc:
        raise _unavailable(where, exc) from None
    return client


# --------------------------------------------------------------------------- throwaway containers
#: the one label key of every container buildkit makes (value: its purpose, e.g. ``smoke``)
CONTAINER_LABEL = "io.rocm-buildkit.container"
#: the build a container belongs to (value: the build's own id), so that the cleanup after a failure
#: or Ctrl-C removes exactly that build's containers, never another build's on the same engine
RUN_LABEL = "io.rocm-buildkit.run"
#: ``=1``: leave throwaway containers in place (names printed on stderr) to look inside them
KEEP_ENV = "BUILDKIT_DEBUG_KEEP_CONTAINER"
PRUNE_HINT = "`buildkit image prune --containers`"

Warn = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def keep_containers(env: Mapping[str, str] | None = None) -> bool:
    """True when :data:`KEEP_ENV` asks to keep the containers (``1``, ``true``, ``yes``)."""
    value = (os.environ if env is None else env).get(KEEP_ENV, "")
    return value.strip().lower() in ("1", "true", "yes")


def container_labels(purpose: str, run_id: str | None = None) -> dict[str, str]:
    """The labels of a container made for ``purpose`` (in the build ``run_id``), with its :class:`Owner`."""
    labels = {CONTAINER_LABEL: purpose, **Owner.this_process().labels()}
    if run_id is not None:
        labels[RUN_LABEL] = run_id
    return labels


#: the owner's labels: ``<prefix>host``, ``boot``, ``pid``, ``start``
OWNER_PREFIX = "io.rocm-buildkit.owner."


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks after boot, /proc/PID/stat's 22nd field; None: no
    such process). A pid reused by a later process has another start time."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # after the command name, which may hold spaces
    return fields[19] if len(fields) > 19 else None


@dataclass(frozen=True)
class Owner:
    """The process a container belongs to: it lives while a process of that pid and start time runs
    on that host since that boot."""

    host: str
    boot: str
    pid: int
    start: str

    @classmethod
    def this_process(cls) -> Owner:
        pid = os.getpid()
        return cls(socket.gethostname(), _boot_id(), pid, _start_time(pid) or "")

    def labels(self) -> dict[str, str]:
        return {
            OWNER_PREFIX + "host": self.host,
            OWNER_PREFIX + "boot": self.boot,
            OWNER_PREFIX + "pid": str(self.pid),
            OWNER_PREFIX + "start": self.start,
        }

    @classmethod
    def of(cls, labels: Mapping[str, str]) -> Owner | None:
        """The owner a container's labels record (None: none, an older buildkit's container)."""
        try:
            return cls(
                labels[OWNER_PREFIX + "host"],
                labels[OWNER_PREFIX + "boot"],
                int(labels[OWNER_PREFIX + "pid"]),
                labels[OWNER_PREFIX + "start"],
            )
        except (KeyError, ValueError):
            return None

    def alive(self) -> tuple[bool | None, str]:
        """Whether the owner still runs (None: it cannot be told from this host), and why."""
        who = f"pid {self.pid} on {self.host}"
        if self.host != socket.gethostname():
            return None, f"owner {who}, another host: cannot tell whether it runs"
        if self.boot != _boot_id():
            return False, f"owner {who} is gone (the machine rebooted since)"
        started = _start_time(self.pid)
        if started is None:
            return False, f"owner {who} is gone"
        if started != self.start:
            return False, f"owner {who} is gone (the pid is another process's now)"
        return True, f"owner {who} is running"


def run_filter(run_id: str) -> str:
    """The ``docker ps --filter`` value that selects the containers of one build."""
    return f"label={RUN_LABEL}={run_id}"


@dataclass(frozen=True)
class _Exited:
    """How a started throwaway container ended: its exit code and its two output streams."""

    exit_code: int
    stdout: bytes
    stderr: bytes


class Throwaway:
    """A container made by :func:`throwaway`: what its users do with it while it exists."""

    def __init__(self, container: Any, name: str, purpose: str) -> None:
        self.container = container
        self.name = name
        self.purpose = purpose

    @property
    def short_id(self) -> str:
        return str(self.container.short_id)

    def start(self) -> None:
        self.container.start()

    def wait(self, timeout: int | None = None) -> _Exited:
        """Wait for the command to end (``timeout`` seconds at most: the engine client raises
        ``ReadTimeout`` after that); its exit code and output."""
        status = self.container.wait() if timeout is None else self.container.wait(timeout=timeout)
        code = int(status.get("StatusCode", 1)) if isinstance(status, dict) else 1
        out: bytes = self.container.logs(stdout=True, stderr=False)
        err: bytes = self.container.logs(stdout=False, stderr=True)
        return _Exited(code, out, err)

    def run(self, timeout: int | None = None) -> _Exited:
        """Start the command and wait for it (:meth:`wait`)."""
        self.start()
        return self.wait(timeout)

    def get_archive(self, path: str) -> tuple[Any, Any]:
        """A tar stream of ``path`` in the container (one request), and its stat."""
        stream, stat = self.container.get_archive(path)
        return stream, stat

    def put_archive(self, path: str, data: Any) -> bool:
        """Extract the tar ``data`` at ``path`` in the container; False when the engine refused."""
        return bool(self.container.put_archive(path, data))

    def exec_run(self, command: Sequence[str], **kwargs: Any) -> Any:
        return self.container.exec_run(list(command), **kwargs)


def _remove(client: Any, container: Any, name: str, purpose: str, warn: Warn) -> None:
    """Remove the container (found by ``name`` when its creation was interrupted); a failure is
    said, never raised: the error that ended the block is the one the caller must see."""
    try:
        if container is None:
            try:
                container = client.containers.get(name)
            except docker.errors.NotFound:
                return  # the engine never made it
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except Exception as exc:
        warn(f"warning: could not remove the {purpose} container {name}: {exc}; {PRUNE_HINT} removes it")


@contextlib.contextmanager
def throwaway(
    client: Any,
    image: str,
    command: Sequence[str],
    *,
    purpose: str,
    run_id: str | None = None,
    network: bool | str = False,
    environment: Mapping[str, str] | None = None,
    entrypoint: Sequence[str] | None = None,
    devices: Sequence[str] = (),
    group_add: Sequence[str] = (),
    volumes: Mapping[str, str] | None = None,
    warn: Warn = _stderr,
) -> Iterator[Throwaway]:
    """A container of ``image`` created (not started) for ``purpose``, removed when the block ends.

    ``network``: False, no network at all (``--network none``); True, the default bridge; a string, the
    network mode (``"host"``: the compiler-cache relay only). ``volumes``: named volumes -> mount paths
    (read-write: ccache's statistics are reset there); no host path is ever mounted. The name is unique
    (``buildkit-<purpose>-<random>``) so that a container whose creation was interrupted is still found
    and removed; a removal that fails is said through ``warn``, never raised.
    ``BUILDKIT_DEBUG_KEEP_CONTAINER=1`` keeps it (its name printed on stderr)."""
    name = f"buildkit-{purpose}-{uuid.uuid4().hex[:12]}"
    create: dict[str, Any] = {
        "name": name,
        "labels": container_labels(purpose, run_id),
        "network_mode": network if isinstance(network, str) else "bridge" if network else "none",
        "detach": True,
    }
    if environment:
        create["environment"] = dict(environment)
    if entrypoint is not None:
        create["entrypoint"] = list(entrypoint)
    if devices:
        create["devices"] = list(devices)
    if group_add:
        create["group_add"] = list(group_add)
    if volumes:
        hosted = [name for name in volumes if name.startswith(("/", ".", "~"))]
        if hosted:  # the engine would bind-mount a host path for these: never
            raise ValueError(f"throwaway volumes must be named volumes, not host paths: {hosted}")
        create["volumes"] = {name: {"bind": path, "mode": "rw"} for name, path in volumes.items()}
    container = None
    try:
        container = client.containers.create(image, list(command), **create)
        yield Throwaway(container, name, purpose)
    finally:
        if keep_containers():  # said on stderr whatever ``warn`` does: the user asked for the name
            _announce_kept(name, purpose)
        else:
            _remove(client, container, name, purpose, warn)


#: containers whose kept name was printed already (a build's are named by throwaway and by the run)
_ANNOUNCED: set[str] = set()


def _announce_kept(name: str, purpose: str) -> None:
    """Say on stderr, once per container, that ``BUILDKIT_DEBUG_KEEP_CONTAINER`` kept it, and its name."""
    if name not in _ANNOUNCED:
        _ANNOUNCED.add(name)
        _stderr(f"{KEEP_ENV}: kept the {purpose} container {name} (remove it with {PRUNE_HINT})")


def remove_run_containers(client: Any, run_id: str) -> bool:
    """Remove the containers of the build ``run_id`` (cibuildwheel's too); False when that was
    impossible (the engine does not answer), so that the caller can tell the user what to clean up.
    With ``BUILDKIT_DEBUG_KEEP_CONTAINER=1`` nothing is removed (and True returned), and the name of
    each container of the run is printed on stderr: cibuildwheel's own (created by cibuildwheel with
    the run's label, not by :func:`throwaway`) is named nowhere else."""
    try:
        containers = list(client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_id}"}))
    except Exception:
        return keep_containers()
    if keep_containers():
        for container in containers:
            labels = dict(getattr(container, "labels", None) or {})
            _announce_kept(str(container.name), labels.get(CONTAINER_LABEL, "build"))
        return True
    removed = True
    for container in containers:
        try:
            container.remove(force=True)
        except Exception as exc:
            removed = removed and getattr(exc, "status_code", None) == 404  # already gone
    return removed


@dataclass(frozen=True)
class _Pruned:
    """A labelled container, as :func:`labelled_containers` found it and :func:`prune_containers` left it."""

    name: str
    purpose: str
    run_id: str | None
    status: str  # the engine's state: "running", "exited", "created"
    owner: str = ""  # whose it is, and whether that process runs
    live: bool = False  # left by a prune: its owner runs, or cannot be told to be gone


def _judged(container: Any) -> _Pruned:
    labels = dict(container.labels or {})
    purpose, run_id, status = labels.get(CONTAINER_LABEL, ""), labels.get(RUN_LABEL), str(container.status)
    owner = Owner.of(labels)
    if owner is None:
        running = status in ("running", "restarting", "paused")
        why = "no owner recorded (an older buildkit)" + (
            ": it still runs, `docker rm -f` removes it" if running else ""
        )
        return _Pruned(str(container.name), purpose, run_id, status, why, running)
    alive, why = owner.alive()
    return _Pruned(str(container.name), purpose, run_id, status, why, alive is not False)


def labelled_containers(client: Any) -> list[_Pruned]:
    """The containers carrying :data:`CONTAINER_LABEL`, each with its owner and whether a prune
    would leave it (``live``), removing nothing."""
    return [_judged(c) for c in client.containers.list(all=True, filters={"label": CONTAINER_LABEL})]


def prune_containers(client: Any, *, only: Collection[str] | None = None) -> list[_Pruned]:
    """Remove the containers carrying :data:`CONTAINER_LABEL` whose owner is gone (a live owner's, or one
    that cannot be told gone, is left); ``only``: just those of these names. Engine errors
    (:data:`ENGINE_ERRORS`) are raised; a container already gone is skipped."""
    removed: list[_Pruned] = []
    for container in client.containers.list(all=True, filters={"label": CONTAINER_LABEL}):
        if only is not None and str(container.name) not in only:
            continue
        judged = _judged(container)
        if judged.live:
            continue
        try:
            container.remove(force=True)
        except docker.errors.NotFound:
            continue
        removed.append(judged)
    return removed
