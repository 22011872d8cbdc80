"""A ``docker build`` through the SDK, its every output line passed on and kept in a log
(``~/.cache/rocm-buildkit/logs/``); a refused build names the log."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import docker.errors

from buildkit.errors import BuildFailed, BuildkitError, RegistryUnavailable
from buildkit.fsutil import cache_home

Progress = Callable[[str], None]


class EngineLine(str):
    """A line of the engine's own build output (``Step 3/9 : RUN ...`` and what the step prints), as passed
    to ``progress``: a command showing image builds as progress prints these only when asked (``-v``)."""


#: the engine's words for a registry it cannot reach or that refuses a pull (Go's net/http and the
#: distribution client: ``Get "https://quay.io/v2/": dial tcp: lookup quay.io ... no such host``)
_REGISTRY = re.compile(
    r'Get "https?://[^"/]+/v2/|dial tcp|no such host|i/o timeout|TLS handshake timeout|'
    r"connection refused|pull access denied|failed to resolve source metadata|network is unreachable",
    re.I,
)
#: what builds when no registry is reachable
OFFLINE_HINT = (
    "no registry is reachable from this engine: `buildkit image seed debian:sid-slim` makes a Debian base "
    "with debootstrap from Debian's mirror, and the debian-sid-rocm profile builds from it alone (`buildkit "
    "init --image debian-sid-rocm`, or image: debian-sid-rocm with manylinux.sysroot: glibc2.31 and "
    "manylinux.policy: manylinux_2_31)"
)


def refused(tag: str, dockerfile: str, detail: str, tail: list[str], log_name: str) -> BuildkitError:
    """The error of a refused image build: :class:`RegistryUnavailable` (exit 17) when the engine could not
    reach a registry, else :class:`BuildFailed` (exit 9); both name the log."""
    lines = "".join(f"  | {line}\n" for line in tail[-10:])
    if _REGISTRY.search(detail):
        return RegistryUnavailable(
            f"building image {tag} ({dockerfile}) cannot reach a registry: {detail.strip()}\n{lines}"
            f"  full log: {log_name}\n  hint: {OFFLINE_HINT}"
        )
    return BuildFailed(
        f"building image {tag} ({dockerfile}) failed: {detail.strip()}\n{lines}  full log: {log_name}"
    )


def default_log_path(name: str, tag: str) -> Path:
    """``~/.cache/rocm-buildkit/logs/image-<name>-<content hash>.log``."""
    return cache_home() / "logs" / f"image-{name}-{tag.rsplit(':', 1)[1]}.log"


def stream_build(
    client: Any,
    context: Path,
    dockerfile: str,
    tag: str,
    args: dict[str, str],
    labels: dict[str, str],
    log: TextIO,
    progress: Progress,
) -> str:
    """Run the build, passing every output line to ``progress`` and ``log``; the image id."""
    image_id = ""
    tail: list[str] = []
    stream = client.api.build(
        path=str(context),
        dockerfile=dockerfile,
        tag=tag,
        buildargs=args,
        labels=labels,
        rm=True,
        forcerm=True,
        pull=False,
        decode=True,
    )
    for chunk in stream:
        if "error" in chunk:
            detail = str(chunk.get("errorDetail", {}).get("message") or chunk["error"])
            log.write(detail + "\n")
            log.flush()
            raise refused(tag, dockerfile, detail, tail, log.name)
        text = chunk.get("stream") or chunk.get("status") or ""
        if text:
            log.write(text if text.endswith("\n") else text + "\n")
            log.flush()
            for line in text.splitlines():
                if line.strip():
                    tail.append(line)
                    progress(EngineLine(line))
        aux = chunk.get("aux")
        if isinstance(aux, dict) and "ID" in aux:
            image_id = str(aux["ID"])
    return image_id


def build_logged(
    client: Any,
    context: Path,
    dockerfile: str,
    tag: str,
    args: dict[str, str],
    labels: dict[str, str],
    log_file: Path,
    progress: Progress,
) -> Any:
    """:func:`stream_build` with its output kept in ``log_file``; the built image (the engine's
    object). A refused build is :class:`BuildFailed` naming the log."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("w") as log:
        try:
            image_id = stream_build(client, context, dockerfile, tag, args, labels, log, progress)
        except docker.errors.APIError as exc:
            raise refused(tag, dockerfile, str(exc), [], str(log_file)) from None
    return client.images.get(image_id or tag)
