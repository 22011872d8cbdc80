"""Which builder image ``buildkit init`` writes when ``--image`` is not given: one this machine can
build (the candidates and the probe: docs/REFERENCE.md, ``buildkit init``).

A profile needs a Docker engine, the images its Dockerfile builds ``FROM`` (in the engine, or
pulled) and the hosts its build downloads from (every ``http(s)://`` URL of the Dockerfile). An
image of the profile built earlier does not count: its content tag changes with the Dockerfile and
the release, and a rebuild needs them. :func:`choose` is the decision on what :func:`probe` found
(pure: tests give it a machine they describe).
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from buildkit import profiles

#: best first: the production builder, then the one that needs no registry but Debian's mirror
CANDIDATES: tuple[str, ...] = ("manylinux_2_28-rocm", "debian-sid-rocm")
#: seconds for the whole probe of the hosts (all at once) and for the engine's answer
PROBE_TIMEOUT = 2.0
DOCKER_HUB = "registry-1.docker.io"

_FROM = re.compile(r"^FROM\s+(?:--\S+\s+)*(?P<ref>\S+)(?:\s+AS\s+(?P<stage>\S+))?", re.I | re.M)
_ARG = re.compile(r"^ARG\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>\S+)", re.M)
_URL = re.compile(r"\bhttps?://[A-Za-z0-9.-]+(?::\d+)?")
_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


@dataclass(frozen=True)
class Needs:
    """What building a profile's image takes from the machine."""

    profile: str
    #: the images its Dockerfile builds FROM (``debian:sid-slim``, ``quay.io/pypa/...@sha256:...``)
    bases: tuple[str, ...]
    #: ``(host, port)`` its build downloads from (URLs in the Dockerfile)
    hosts: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Machine:
    """What the probe found."""

    #: None: a Docker engine answers; else why none does
    engine_missing: str | None
    #: image references the engine holds (``repo:tag`` and ``repo@sha256:...``)
    images: frozenset[str]
    #: the hosts that answered
    reachable: frozenset[str]


@dataclass(frozen=True)
class Choice:
    image: str
    #: one line: why this image (printed by init)
    why: str
    #: whether the machine can build it (False: chosen for want of a better one)
    buildable: bool
    #: the other candidates, each with what the machine lacks to build it (empty: nothing)
    others: tuple[tuple[str, tuple[str, ...]], ...] = ()


def registry_host(reference: str) -> str:
    """The registry an image reference is pulled from (Docker Hub for ``debian:sid-slim``)."""
    first, _, rest = reference.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first.split(":")[0]
    return DOCKER_HUB


def needs_of_dockerfile(profile: str, text: str) -> Needs:
    """The bases (``FROM``, ``${ARG}`` resolved by the ARG's default, earlier stages left out) and the
    download hosts (every ``http(s)://`` URL) of a Dockerfile's text."""
    defaults = {m.group("name"): m.group("value").strip("\"'") for m in _ARG.finditer(text)}
    stages: set[str] = set()
    bases: list[str] = []
    for m in _FROM.finditer(text):
        ref = _VARIABLE.sub(lambda v: defaults.get(v.group(1), v.group(0)), m.group("ref"))
        if ref not in stages and ref not in bases and ref != "scratch":
            bases.append(ref)
        if m.group("stage"):
            stages.add(m.group("stage"))
    hosts: list[tuple[str, int]] = []
    for m in _URL.finditer(text):
        parts = urlsplit(m.group(0))
        host = (parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
        if host[0] and host not in hosts:
            hosts.append(host)
    return Needs(profile=profile, bases=tuple(bases), hosts=tuple(hosts))


def needs_of(profile: profiles.Profile) -> Needs:
    """:func:`needs_of_dockerfile` of ``profile``'s Dockerfile."""
    text = (profiles.docker_dir() / profile.dockerfile).read_text(encoding="utf-8")
    return needs_of_dockerfile(profile.name, text)


def _present(reference: str, images: frozenset[str]) -> bool:
    if reference in images:
        return True
    return (
        ":" not in reference.rpartition("/")[2] and "@" not in reference and f"{reference}:latest" in images
    )


def lacking(needs: Needs, machine: Machine) -> list[str]:
    """What of ``needs`` the machine lacks, in words (empty: it can build the image)."""
    if machine.engine_missing is not None:
        return [f"a Docker engine ({machine.engine_missing})"]
    missing: list[str] = []
    for base in needs.bases:
        host = registry_host(base)
        if not _present(base, machine.images) and host not in machine.reachable:
            missing.append(f"base {base.split('@')[0]} is not in the engine and {host} does not answer")
    missing += [f"{host} does not answer" for host, _ in needs.hosts if host not in machine.reachable]
    return missing


def _has(needs: Needs, machine: Machine) -> str:
    parts = [
        f"{base.split('@')[0]} ({'in the engine' if _present(base, machine.images) else 'pulled'})"
        for base in needs.bases
    ]
    return "from " + ", ".join(parts + [host for host, _ in needs.hosts])


def choose(machine: Machine, candidates: Sequence[Needs]) -> Choice:
    """The first candidate the machine can build; else the first, not buildable, saying what lacks."""
    missing = {n.profile: lacking(n, machine) for n in candidates}
    first = candidates[0].profile
    if machine.engine_missing is not None:
        return Choice(
            first,
            f"{first}: no Docker engine answers here ({machine.engine_missing}); build where one runs "
            "(CI, `buildkit image build`)",
            buildable=False,
            others=tuple((n.profile, tuple(missing[n.profile])) for n in candidates[1:]),
        )
    for needs in candidates:
        if missing[needs.profile]:
            continue
        others = tuple((n.profile, tuple(missing[n.profile])) for n in candidates if n is not needs)
        why = f"{needs.profile}: this machine can build it, {_has(needs, machine)}"
        lacks = [f"not {name}: {', '.join(what)}" for name, what in others if what]
        return Choice(needs.profile, "; ".join([why, *lacks]), buildable=True, others=others)
    lacks = [f"{n.profile}: {', '.join(missing[n.profile])}" for n in candidates]
    others = tuple((n.profile, tuple(missing[n.profile])) for n in candidates[1:])
    return Choice(first, f"{first}: no builder can be built here ({'; '.join(lacks)})", False, others)


Reach = Callable[[str, int, float], bool]


def _connects(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def reachable_hosts(
    hosts: Iterable[tuple[str, int]], *, timeout: float = PROBE_TIMEOUT, reach: Reach = _connects
) -> frozenset[str]:
    """The hosts a DNS lookup and a TCP connection reach within ``timeout`` seconds in all (each in a
    daemon thread: a lookup that hangs past the timeout counts as unreachable and delays nothing)."""
    found: set[str] = set()
    lock = threading.Lock()

    def attempt(host: str, port: int) -> None:
        if reach(host, port, timeout):
            with lock:
                found.add(host)

    threads = [threading.Thread(target=attempt, args=h, daemon=True) for h in dict.fromkeys(hosts)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    with lock:
        return frozenset(found)


def _engine_images(timeout: float) -> tuple[str | None, frozenset[str]]:
    # the Docker SDK and the engine module only when init probes (start-up time of every other command)
    import docker.errors
    import requests.exceptions

    from buildkit.docker_engine import connect  # with the SDK above
    from buildkit.errors import BuildkitError  # with the SDK above

    try:
        client = connect(timeout=max(1, round(timeout)))
    except BuildkitError as exc:
        return exc.message.splitlines()[0], frozenset()
    try:
        images: set[str] = set()
        for image in client.images.list():
            attrs = image.attrs or {}
            images.update(attrs.get("RepoTags") or ())
            images.update(attrs.get("RepoDigests") or ())
        return None, frozenset(images)
    except (docker.errors.DockerException, requests.exceptions.RequestException, OSError) as exc:
        return f"listing its images failed: {exc}", frozenset()
    finally:
        client.close()


def probe(candidates: Sequence[Needs], *, timeout: float = PROBE_TIMEOUT) -> Machine:
    """Ask this machine: its Docker engine's images, and which of the candidates' hosts answer (the
    registries of bases the engine lacks, the download hosts)."""
    missing, images = _engine_images(timeout)
    hosts: list[tuple[str, int]] = []
    if missing is None:
        for needs in candidates:
            hosts += [(registry_host(b), 443) for b in needs.bases if not _present(b, images)]
            hosts += list(needs.hosts)
    return Machine(engine_missing=missing, images=images, reachable=reachable_hosts(hosts, timeout=timeout))


def choose_builder(offered: Sequence[profiles.Profile], *, timeout: float = PROBE_TIMEOUT) -> Choice:
    """:func:`choose` on what :func:`probe` finds on this machine, among ``offered`` (the profiles of
    :data:`CANDIDATES`, in that order)."""
    candidates = [needs_of(profile) for profile in offered]
    return choose(probe(candidates, timeout=timeout), candidates)
