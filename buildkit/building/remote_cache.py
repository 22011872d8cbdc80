"""``build --ccache-remote redis://HOST:PORT``: ccache's remote storage, reached by a hermetic build
through one channel to that one address (how: docs/REFERENCE.md).

The relay (a throwaway container in the host's network namespace) listens on :data:`SOCKET` in a
named volume made for the build and forwards every connection to ``HOST:PORT`` and nowhere else; the
build's ccache gets ``CCACHE_REMOTE_STORAGE=redis+unix:`` :data:`SOCKET`. The relay and its volume are
removed when the build ends (Ctrl-C included); a build with ``network: true`` reaches the store
directly. Why not a Docker network with the relay alone on it: an ``internal`` network still reaches
every address of the host; a socket reaches one address only. URLs with credentials are refused: the
build's environment is written to its log."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from buildkit.docker_engine import CONTAINER_LABEL, throwaway
from buildkit.errors import BuildFailed, UsageError

#: where the relay's socket volume is mounted (in the relay and in the build container), the socket
SOCKET_DIR = "/buildkit-ccache-remote"
SOCKET = f"{SOCKET_DIR}/redis.sock"
_SCHEMES = ("redis",)
_READY = "relay ready"
_READY_TIMEOUT = 60.0

#: run by the builder image's python3: forward each connection on SOCKET to argv[1]:argv[2]
RELAY = f"""
import asyncio, sys
HOST, PORT = sys.argv[1], int(sys.argv[2])
async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()
async def serve(reader, writer):
    try:
        up_reader, up_writer = await asyncio.open_connection(HOST, PORT)
    except OSError:
        writer.close()
        return
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)
async def main():
    server = await asyncio.start_unix_server(serve, "{SOCKET}")
    print("{_READY}", flush=True)
    async with server:
        await server.serve_forever()
asyncio.run(main())
"""


@dataclass(frozen=True)
class Remote:
    """A checked ``--ccache-remote`` URL."""

    url: str
    scheme: str
    host: str
    port: int

    def through_relay(self) -> str:
        """The URL the build container's ccache uses: the relay's socket, and the database as given."""
        database = urlsplit(self.url).path.strip("/")
        return f"redis+unix:{SOCKET}" + (f"?db={database}" if database else "")


def parse_remote(url: str) -> Remote:
    """``redis://HOST:PORT[/DB]``; UsageError for anything else."""
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES:
        raise UsageError(f"--ccache-remote {url}: the scheme must be one of {', '.join(_SCHEMES)}")
    if parts.username or parts.password:
        raise UsageError("--ccache-remote: credentials in the URL are refused (the build log shows the URL)")
    if not parts.hostname:
        raise UsageError(f"--ccache-remote {url}: no host")
    host = parts.hostname
    port = parts.port or 6379
    return Remote(url=url, scheme=parts.scheme, host=host, port=port)


@dataclass(frozen=True)
class Channel:
    """What the build containers get: the volume of the relay's socket, and the URL their ccache uses."""

    volume: str
    url: str


def _wait_ready(box: Any, timeout: float = _READY_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        box.container.reload()
        if box.container.status != "running":
            break
        if _READY in box.container.logs(stdout=True, stderr=False).decode(errors="replace"):
            return
        time.sleep(0.2)
    logs = box.container.logs().decode(errors="replace")
    raise BuildFailed(f"the relay to the compiler-cache store did not start: {logs.strip()[-500:]}")


@contextlib.contextmanager
def channel(client: Any, image: str, remote: Remote, *, run_id: str | None = None) -> Iterator[Channel]:
    """The relay to ``remote`` and its socket volume; both removed when the block ends."""
    volume = f"rocm-buildkit-relay-{uuid.uuid4().hex[:12]}"
    client.volumes.create(volume, labels={CONTAINER_LABEL: "ccache-relay"})
    try:
        with throwaway(
            client,
            image,
            ["-c", RELAY, remote.host, str(remote.port)],
            purpose="ccache-relay",
            run_id=run_id,
            network="host",
            entrypoint=["python3"],
            volumes={volume: SOCKET_DIR},
        ) as box:
            box.start()
            _wait_ready(box)
            yield Channel(volume=volume, url=remote.through_relay())
    finally:
        with contextlib.suppress(Exception):
            client.volumes.get(volume).remove(force=True)
