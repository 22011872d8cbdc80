"""Connect to the Docker engine the user means: ``DOCKER_HOST``, else the current docker context.

``from_env()`` honours ``DOCKER_HOST``/``DOCKER_TLS_VERIFY``/``DOCKER_CERT_PATH`` but not
``docker context use``; :func:`connect` reads the current context (``DOCKER_CONTEXT`` or the CLI's
``config.json``) through the SDK's own context API, so a remote build host works the same way as the
local socket. A daemon that does not answer raises :class:`~buildkit.errors.DockerUnavailable`
(exit 8) naming the endpoint it tried.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

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
