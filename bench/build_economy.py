"""Benchmark: build cost across a matrix (issue 29), measured in one run on the reference HIP extension
(csrc/) on the ROCm 7.2 builder with its three CPythons (recipes/reference.yaml, 3.13/3.14/3.15, 7.2).

Scenarios, each a ``buildkit build`` of this checkout (subprocess), ratios printed at the end:

* matrix cold:  the shared cache volume removed, the three jobs serially: each job's time and
  ccache hits/misses; jobs 2..N together against job 1 (device code compiled once per matrix);
* no-change:    ``--force`` again: every compile of every job should hit;
* parallel:     ``--no-cache --force`` serially, then with ``--parallel 2``: wall time of each;
* remote store: a Redis (Debian's redis-server, started here on 127.0.0.1);
  machine A builds job 1 cold with ``--ccache-remote`` (fills the store), machine B (its volume
  removed) builds it from the store, and machine B cold (volume removed, no store).

Hits and misses come from each job's manifest (``compiler_cache``, this build's own ccache stats
log). The device/host split is by construction of csrc: three HIP translation units and one C file
(module.c, includes Python.h), so for a job with 3 hits and 1 miss every device compile hit.
Run: ``python bench/build_economy.py`` (needs the Docker engine and the debian-sid-rocm 7.2 image).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from buildkit import image as images  # noqa: E402
from buildkit import profiles  # noqa: E402
from buildkit.build.cibw import ccache_volume  # noqa: E402
from buildkit.docker_engine import connect  # noqa: E402
from buildkit.plan.expansion import expand  # noqa: E402
from buildkit.recipe import load_recipe  # noqa: E402
from tests.helpers.recipes import reference_three_pythons  # noqa: E402

JOBS = ("cp313-rocm7.2", "cp314-rocm7.2", "cp315-rocm7.2")
DEVICE, HOST = 3, 1
PASSED = re.compile(r"^\[(cp3\d+-rocm7\.2)\] (?:passed|up-to-date) in ([0-9.]+)s", re.M)


def recipe(tmp: Path) -> Path:
    return reference_three_pythons(tmp)


def volume_of(path: Path, client: Any) -> str:
    plan = expand(load_recipe(path), env={}, enumerator=lambda: [])
    profile = profiles.get_profile("debian-sid-rocm")
    archs = [str(a) for j in plan.jobs for a in j.archs.kept]
    tag, _ = images.resolve_tag(client, profile, images.rocm_build_args(profile.name, "7.2", archs))
    return ccache_volume(plan.job(JOBS[0]), tag)


def drop(client: Any, volume: str) -> None:
    with contextlib.suppress(Exception):
        client.volumes.get(volume).remove(force=True)


def build(path: Path, tmp: Path, out: str, *flags: str) -> tuple[float, dict[str, float], dict[str, Any]]:
    """Wall seconds, each job's seconds, each job's compiler_cache."""
    command = [sys.executable, "-m", "buildkit", "build", str(path), "--out", str(tmp / out)]
    command += ["--log-dir", str(tmp / "logs" / out), *flags]
    t0 = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=7200)
    wall = time.monotonic() - t0
    if done.returncode != 0:
        sys.exit(f"build {out} failed:\n{done.stdout}\n{done.stderr[-3000:]}")
    seconds = {job: float(s) for job, s in PASSED.findall(done.stderr)}
    stats = {}
    for folder in sorted((tmp / out).glob("cp3*")):
        (manifest,) = folder.glob("*.manifest.json")
        stats[folder.name] = json.loads(manifest.read_text())["compiler_cache"]
    return wall, seconds, stats


def hm(stats: dict[str, Any] | None) -> str:
    return "no cache" if stats is None else f"{stats['hits']} hits / {stats['misses']} misses"


@contextlib.contextmanager
def redis(client: Any) -> Any:
    host = "127.0.0.1"  # the relay runs in the host's network namespace: nothing leaves loopback
    with socket.socket() as s:
        s.bind((host, 0))
        port = int(s.getsockname()[1])
    server = shutil.which("redis-server")
    if server is None:
        sys.exit("redis-server is not installed (./dev setup installs it)")
    args = [server, "--bind", host, "--port", str(port), "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen([*args, "--protected-mode", "no"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        yield f"redis://{host}:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> int:
    client = connect()
    with tempfile.TemporaryDirectory(prefix="buildkit-economy-") as name:
        tmp = Path(name)
        path = recipe(tmp)
        volume = volume_of(path, client)
        drop(client, volume)
        try:
            _, cold_s, cold = build(path, tmp, "cold", "--force")
            print("matrix cold (serial, one shared cache volume):")
            for job in JOBS:
                print(f"  {job}  {cold_s.get(job, 0):6.1f}s  {hm(cold.get(job))}")
            _, warm_s, warm = build(path, tmp, "cold", "--force")
            print("no-change rebuild:")
            for job in JOBS:
                print(f"  {job}  {warm_s.get(job, 0):6.1f}s  {hm(warm.get(job))}")
            serial_wall, _, _ = build(path, tmp, "serial", "--force", "--no-cache")
            parallel_wall, _, _ = build(path, tmp, "parallel", "--force", "--no-cache", "--parallel", "2")
            print(f"--no-cache matrix: serial {serial_wall:.1f}s, --parallel 2 {parallel_wall:.1f}s")
            with redis(client) as url:
                drop(client, volume)
                a_wall, _, a = build(path, tmp, "machine-a", "--job", JOBS[0], "--ccache-remote", url)
                drop(client, volume)
                b_wall, _, b = build(path, tmp, "machine-b", "--job", JOBS[0], "--ccache-remote", url)
                drop(client, volume)
                bc_wall, _, bc = build(path, tmp, "machine-b-cold", "--job", JOBS[0])
            print(
                f"remote store ({JOBS[0]}): A cold {a_wall:.1f}s ({hm(a.get(JOBS[0]))}), "
                f"B from the store {b_wall:.1f}s ({hm(b.get(JOBS[0]))}), "
                f"B cold {bc_wall:.1f}s ({hm(bc.get(JOBS[0]))})"
            )
        finally:
            drop(client, volume)
    first = cold_s[JOBS[0]]
    rest = sum(cold_s[j] for j in JOBS[1:])
    device_hits = sum(1 for j in JOBS[1:] if (cold[j]["hits"], cold[j]["misses"]) == (DEVICE, HOST))
    warm_hits = sum(w["hits"] for w in warm.values())
    warm_all = sum(w["hits"] + w["misses"] for w in warm.values())
    print("ratios:")
    print(f"  jobs 2..{len(JOBS)} / job 1 (cold matrix):   {rest / first:.2f}  ({rest:.1f}s / {first:.1f}s)")
    print(f"  jobs 2..{len(JOBS)} with every device compile a hit: {device_hits}/{len(JOBS) - 1}")
    print(f"  no-change rebuild hits:                 {warm_hits}/{warm_all}")
    print(f"  --parallel 2 / serial (wall, no cache): {parallel_wall / serial_wall:.2f}")
    print(f"  machine B cold / machine B from store:  {bc_wall / b_wall:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
