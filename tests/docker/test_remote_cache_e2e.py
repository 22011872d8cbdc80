"""``build --ccache-remote redis://HOST:PORT`` against a real Redis (Debian's redis-server, started
here on 127.0.0.1; the relay runs in the host's network namespace, so nothing leaves loopback): the
build container reaches the store through the relay's socket and nothing else (no interface but its
own loopback, where the store's address is refused); "machine A" builds cold and fills the store,
"machine B" (its local cache volume removed, as a fresh runner would have it) builds the same job
from the store: every compile hits, and the wheel is the same bytes."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from buildkit import image as images
from buildkit import profiles
from buildkit.building import remote_cache
from buildkit.building.cibw import ccache_volume
from buildkit.docker_engine import throwaway
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
JOB = "cp313-rocm7.2"
COMPILES = 4  # csrc: three .hip and module.c

PROBE = r"""
import socket, sys
def reach(family, address):
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(3)
            s.connect(address)
            s.sendall(b"PING\r\n")
            return s.recv(64).decode(errors="replace").strip() or "connected"
    except OSError as exc:
        return "refused: " + type(exc).__name__
print("socket", reach(socket.AF_UNIX, sys.argv[1]))
import os
print("interfaces", ",".join(sorted(os.listdir("/sys/class/net"))))
for host, port in [(sys.argv[2], int(sys.argv[3]))]:
    print(f"{host}:{port}", reach(socket.AF_INET, (host, port)))
"""


def _redis(host: str, port: int, *command: str) -> str:
    done = subprocess.run(
        ["redis-cli", "-h", host, "-p", str(port), *command], capture_output=True, text=True
    )
    return done.stdout.strip()


def _builder_tag(client: Any, recipe: Path) -> str:
    plan = expand(load_recipe(recipe), env={}, enumerator=lambda: [])
    profile = profiles.get_profile("debian-sid-rocm")
    archs = [str(a) for j in plan.jobs for a in j.archs.kept]
    tag, _ = images.resolve_tag(client, profile, images.rocm_build_args(profile, "7.2", archs))
    return tag


def _recipe(tmp: Path) -> Path:
    data = yaml.safe_load((ROOT / "recipes" / "reference.yaml").read_text())
    data["source"] = {"path": str(ROOT / "csrc")}
    data["python"] = ["3.13"]
    data["rocm"] = ["7.2"]
    data.pop("publish", None)
    path = tmp / "reference-remote.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_the_build_container_reaches_the_store_and_nothing_else(
    tmp_path: Path, docker_client: Any, redis: tuple[str, int]
) -> None:
    host, port = redis
    tag = _builder_tag(docker_client, _recipe(tmp_path))
    remote = remote_cache.parse_remote(f"redis://{host}:{port}")
    with remote_cache.channel(docker_client, tag, remote) as opened:
        assert opened.url == f"redis+unix:{remote_cache.SOCKET}"
        with throwaway(  # as the build container: no network, the relay's socket volume
            docker_client,
            tag,
            ["-c", PROBE, remote_cache.SOCKET, host, str(port)],
            purpose="test-ccache-remote",
            entrypoint=["python3"],
            volumes={opened.volume: remote_cache.SOCKET_DIR},
        ) as box:
            done = box.run(timeout=120)
        volume = opened.volume
    lines = dict(line.split(" ", 1) for line in done.stdout.decode().splitlines())
    assert lines["socket"] == "+PONG", (lines, done.stderr)  # the store, through the relay
    # not the store's own address: the container's loopback is its own, and it has no other interface
    assert lines[f"{host}:{port}"].startswith("refused"), lines
    assert lines["interfaces"] == "lo", lines  # --network=none: no interface but its own loopback
    assert not docker_client.volumes.list(filters={"name": volume})  # removed with the relay


def _build(tmp: Path, recipe: Path, out: str, *flags: str) -> tuple[dict[str, Any], float]:
    t0 = time.monotonic()
    command = [sys.executable, "-m", "buildkit", "build", str(recipe), "--out", out, "--log-dir", "logs"]
    proc = subprocess.run([*command, *flags], cwd=tmp, capture_output=True, text=True, timeout=3600)
    seconds = time.monotonic() - t0
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (manifest,) = (tmp / out / JOB).glob("*.manifest.json")
    return json.loads(manifest.read_text()), seconds


def test_machine_b_builds_from_the_store_machine_a_filled(
    tmp_path: Path, docker_client: Any, redis: tuple[str, int]
) -> None:
    host, port = redis
    recipe = _recipe(tmp_path)
    tag = _builder_tag(docker_client, recipe)
    volume = ccache_volume(expand(load_recipe(recipe), env={}, enumerator=lambda: []).job(JOB), tag)
    url = f"redis://{host}:{port}"

    def drop_volume() -> None:
        with contextlib.suppress(Exception):
            docker_client.volumes.get(volume).remove(force=True)

    assert _redis(host, port, "FLUSHALL") == "OK"
    drop_volume()
    try:
        a, cold = _build(tmp_path, recipe, "dist-a", "--ccache-remote", url)
        assert (a["compiler_cache"]["hits"], a["compiler_cache"]["misses"]) == (0, COMPILES)
        assert int(_redis(host, port, "DBSIZE")) >= COMPILES  # the results (and manifests) are in the store
        drop_volume()  # machine B: an empty local cache
        b, warm = _build(tmp_path, recipe, "dist-b", "--ccache-remote", url)
        print(
            f"machine A cold {cold:.1f}s {a['compiler_cache']}; "
            f"machine B from the store {warm:.1f}s {b['compiler_cache']}"
        )
        assert (b["compiler_cache"]["hits"], b["compiler_cache"]["misses"]) == (COMPILES, 0), b[
            "compiler_cache"
        ]
        assert a["wheel"]["sha256"] == b["wheel"]["sha256"]
    finally:
        drop_volume()
