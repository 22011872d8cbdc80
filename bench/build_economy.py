"""Benchmark: build cost across a matrix (issue 29), measured in one run on the ROCm 7.2 builder
(debian-sid-rocm) with the reference recipes: the reference HIP extension (csrc/, recipes/reference.yaml
with its three CPythons 3.13/3.14/3.15) and the torch extensions (CPython 3.11, torch 2.13.0+cpu from
the locked wheelhouse, glibc2.31 sysroot: recipes/reference-torch.yaml's refops, and a torch extension
as most projects write one, ``torch.utils.cpp_extension``, tests/helpers/recipes.py).

Scenarios (``--only`` picks some), each a ``buildkit build`` of this checkout (subprocess), ratios and
absolute times printed at the end:

* matrix:   the shared cache volume removed, the three jobs serially: each job's time and ccache
  hits/misses; jobs 2..N together against job 1 (device code compiled once per matrix); then
  ``--force`` again: every compile of every job should hit;
* peer:     plain cibuildwheel in the same image, one run for the three CPythons, without the cache
  volume or the gate (it compiles everything per Python): the cold matrix against it;
* torch:    per torch extension: cold (its volume removed), a no-change rebuild (every compile a
  hit), a one-file change (a host file of the plain extension, the device file of refops);
  device and host compiles counted apart (each extension: one HIP file, the rest host C++); the
  device compile's share of the job projects jobs 2..N of a CPython matrix (the host files
  include Python.h through torch/extension.h: compiled per Python);
* parallel: ``--no-cache --force`` serially, then with ``--parallel 2``: wall time of each;
* remote:   a Redis (Debian's redis-server, started here on 127.0.0.1); machine A builds job 1
  cold with ``--ccache-remote`` (fills the store), machine B (its volume removed) builds it from
  the store, and machine B cold (volume removed, no store);
* third-party (``--third-party`` only; ~1 h): recipes/pywhispercpp.yaml across the three CPythons: the
  cold matrix serially with the remote store (machine A fills it; jobs 2..N against job 1, device and
  host misses counted apart from each job's log, by source: ggml's ``.cu`` files are HIP), the
  no-change matrix, then job 1 on machine B (its volume removed) from the store and cold; the four
  job-1 wheels compared by sha256.

Times: wall seconds of each build, and CPU seconds: the build containers' (cgroup cpuacct, sampled
every half second while they run: the containers of this benchmark's builds only) plus the host's
(buildkit, cibuildwheel, docker CLI: the children's rusage). The machine is shared: wall times are
noisy, CPU seconds less so. Hits and misses come from each job's manifest (``compiler_cache``, the
build's own ccache stats log); the device/host split is by construction of the sources (which file
changed, which files include Python's or torch's headers).
Run: ``python bench/build_economy.py [--only matrix,peer,torch,parallel,remote] [--third-party]``
(needs the Docker engine and the debian-sid-rocm 7.2 image).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from buildkit import image as images  # noqa: E402
from buildkit import profiles  # noqa: E402
from buildkit.building import ccache, cibw  # noqa: E402
from buildkit.docker_engine import RUN_LABEL, connect  # noqa: E402
from buildkit.plan.expansion import expand  # noqa: E402
from buildkit.plan.models import Job  # noqa: E402
from buildkit.recipe import load_recipe  # noqa: E402
from tests.helpers import recipes as helpers  # noqa: E402

JOBS = ("cp313-rocm7.2", "cp314-rocm7.2", "cp315-rocm7.2")
DEVICE, HOST = 3, 1  # csrc: gemm.hip, rowsum.hip, hip_runtime_info.hip; module.c (Python.h)
TORCH_JOB = "cp311-rocm7.2-torch2.13"
TP_PYTHONS = ("3.13", "3.14", "3.15")  # the ROCm 7.2 builder's CPythons
MISSED = ccache.MISSED_LOG_LINE  # a log line per compile that missed (buildkit.building.steps.compile)
PASSED = re.compile(r"^\[([\w.-]+)\] (?:passed|up-to-date) in ([0-9.]+)s", re.M)
SCENARIOS = ("matrix", "peer", "torch", "parallel", "remote")
#: the label the peer's cibuildwheel container gets, for the CPU meter
PEER_LABEL = "io.rocm-buildkit.bench"


class CpuMeter:
    """CPU seconds of the containers whose labels ``match``: each one's cgroup ``cpuacct.usage``
    (cgroup v1) or ``cpu.stat`` ``usage_usec`` (v2), sampled until it is gone, the last value kept."""

    def __init__(self, client: Any, match: Callable[[dict[str, str]], bool]) -> None:
        self.client, self.match = client, match
        self.seen: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def usage(container_id: str) -> float | None:
        v1 = Path("/sys/fs/cgroup/cpuacct/docker") / container_id / "cpuacct.usage"
        with contextlib.suppress(OSError, ValueError):
            return int(v1.read_text()) / 1e9
        for v2 in (
            Path("/sys/fs/cgroup/system.slice") / f"docker-{container_id}.scope" / "cpu.stat",
            Path("/sys/fs/cgroup/docker") / container_id / "cpu.stat",
        ):
            with contextlib.suppress(OSError, ValueError):
                for line in v2.read_text().splitlines():
                    if line.startswith("usage_usec "):
                        return int(line.split()[1]) / 1e6
        return None

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # the low-level list: labels without an inspect each
                for box in self.client.api.containers():
                    if self.match(box.get("Labels") or {}):
                        value = self.usage(box["Id"])
                        if value is not None:
                            self.seen[box["Id"]] = max(value, self.seen.get(box["Id"], 0.0))
            self._stop.wait(0.5)

    def __enter__(self) -> CpuMeter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    @property
    def seconds(self) -> float:
        return sum(self.seen.values())


@dataclass
class Built:
    wall: float
    cpu: float  # the containers' and the host's
    seconds: dict[str, float] = field(default_factory=dict)  # each job's, from the summary
    stats: dict[str, Any] = field(default_factory=dict)  # each job's compiler_cache
    sha256: dict[str, str] = field(default_factory=dict)  # each job's wheel


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(
    client: Any, command: list[str], match: Callable[[int], Callable[[dict[str, str]], bool]], **kw: Any
) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """Run ``command``; wall seconds and CPU seconds (containers matched by ``match(pid)``, host)."""
    host0, t0 = _children_cpu(), time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    with CpuMeter(client, match(proc.pid)) as meter:
        out, err = proc.communicate(timeout=7200)
    wall = time.monotonic() - t0
    done = subprocess.CompletedProcess(command, proc.returncode, out, err)
    return done, wall, meter.seconds + (_children_cpu() - host0)


def _of_build(pid: int) -> Callable[[dict[str, str]], bool]:
    """The containers of the ``buildkit build`` process ``pid``: their build id (the staging folder,
    ``staging-<job>-<pid>-*``) names it."""
    return lambda labels: f"-{pid}-" in labels.get(RUN_LABEL, "")


def build(client: Any, path: Path, tmp: Path, out: str, *flags: str) -> Built:
    command = [sys.executable, "-m", "buildkit", "build", str(path), "--out", str(tmp / out)]
    command += ["--log-dir", str(tmp / "logs" / out), *flags]
    done, wall, cpu = timed(client, command, _of_build)
    if done.returncode != 0:
        sys.exit(f"build {out} failed:\n{done.stdout}\n{done.stderr[-3000:]}")
    built = Built(wall, cpu, {job: float(s) for job, s in PASSED.findall(done.stderr)})
    for folder in sorted(p for p in (tmp / out).iterdir() if p.is_dir() and p.name.startswith("cp")):
        (manifest,) = folder.glob("*.manifest.json")
        data = json.loads(manifest.read_text())
        built.stats[folder.name] = data["compiler_cache"]
        built.sha256[folder.name] = data["wheel"]["sha256"]
    jobs = ", ".join(f"{j} {t:.1f}s {hm(built.stats.get(j))}" for j, t in built.seconds.items())
    print(f"  [{out}] {times(built)}: {jobs}", flush=True)  # as it comes: a long run shows its progress
    return built


def hm(stats: dict[str, Any] | None) -> str:
    return "no cache" if stats is None else f"{stats['hits']} hits / {stats['misses']} misses"


def tag_of(client: Any, path: Path) -> tuple[str, list[Job]]:
    plan = expand(load_recipe(path), env={}, enumerator=lambda: [])
    profile = profiles.get_profile("debian-sid-rocm")
    archs = [str(a) for j in plan.jobs for a in j.archs.kept]
    tag, _ = images.resolve_tag(client, profile, images.rocm_build_args(profile, "7.2", archs))
    return tag, list(plan.jobs)


def volume_of(client: Any, path: Path) -> str:
    tag, jobs = tag_of(client, path)
    return cibw.ccache_volume(jobs[0], tag)


def drop(client: Any, volume: str) -> None:
    with contextlib.suppress(Exception):
        client.volumes.get(volume).remove(force=True)


@contextlib.contextmanager
def redis() -> Iterator[str]:
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


def peer(client: Any, path: Path, tmp: Path) -> tuple[float, float, int]:
    """Plain cibuildwheel in the builder image: the three CPythons in one run and one container, with
    the compile environment of buildkit's first job (archs, sysroot, offline from a wheelhouse of the
    build requirements) and its repair command, but no compiler cache, no gate, no per-job staging.
    Wall seconds, CPU seconds, wheels made."""
    tag, jobs = tag_of(client, path)
    job = jobs[0]
    source = tmp / "peer-src"
    shutil.copytree(
        ROOT / "csrc", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    wheelhouse = source / ".buildkit" / cibw.WHEELHOUSE_NAME
    if ccache.uses_launcher(job):  # the compile environment routes HIP compiles through it
        launcher = source / ccache.STAGED_LAUNCHER
        launcher.parent.mkdir(parents=True, exist_ok=True)
        launcher.write_text(ccache.launcher_script())
        launcher.chmod(0o755)
    download = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--dest", str(wheelhouse)]
    subprocess.run([*download, "setuptools>=77"], check=True, capture_output=True)
    settings = cibw.CibwSettings(
        image=tag,
        source_date_epoch=int(time.time()),
        ccache_volume=None,
        with_ca_bundle=False,
        labels={PEER_LABEL: "peer"},
        network=False,
    )
    options = cibw.cibuildwheel_options(job, settings)
    env = cibw.container_environment(job, settings)
    env.pop("BUILDKIT_JOB", None)
    options["CIBW_ENVIRONMENT_LINUX"] = cibw.render_environment(env)
    options["CIBW_BUILD"] = " ".join(f"{j.cp_tag}-manylinux_x86_64" for j in jobs)
    out = tmp / "peer-out"
    command = [sys.executable, "-m", "cibuildwheel", ".", "--output-dir", str(out)]  # from inside it
    environment = cibw.subprocess_environment(os.environ, options)
    done, wall, cpu = timed(
        client, command, lambda _pid: lambda labels: PEER_LABEL in labels, env=environment, cwd=source
    )
    if done.returncode != 0:
        sys.exit(f"plain cibuildwheel failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return wall, cpu, len(list(out.glob("*.whl")))


def torch_extension(client: Any, tmp: Path, name: str) -> dict[str, Any]:
    """Cold, no-change and one-file-change builds of one torch extension (its own copy of the source)."""
    if name == "refops":
        source = tmp / "refops-src"
        shutil.copytree(
            ROOT / "csrc" / "refops", source, ignore=shutil.ignore_patterns("build", "*.egg-info")
        )
        recipe = yaml.safe_load((ROOT / "recipes" / "reference-torch.yaml").read_text())
        recipe["source"] = {"path": str(source)}
        for key in ("publish", "smoke"):
            recipe.pop(key, None)
        path = tmp / "refops.yaml"
        path.write_text(yaml.safe_dump(recipe, sort_keys=False))
        changed, kind, device, host = source / "src" / "rms_norm.hip", "device", 1, 1
    else:
        path = helpers.plain_torch_extension(tmp)
        source = tmp / "plaintorch"
        changed, kind, device, host = (
            source / "src" / "scale_add.cpp",
            "host",
            helpers.PLAIN_TORCH_DEVICE,
            helpers.PLAIN_TORCH_HOST,
        )
    volume = volume_of(client, path)
    drop(client, volume)
    try:
        cold = build(client, path, tmp, f"{name}-cold", "--force")
        warm = build(client, path, tmp, f"{name}-warm", "--force")
        # code, not a comment: the preprocessed text (ccache's second key) changes too
        change = '\nextern "C" int buildkit_bench_changed() { return 1; }\n'
        changed.write_text(changed.read_text() + change)
        one = build(client, path, tmp, f"{name}-one", "--force")
    finally:
        drop(client, volume)
    return {"cold": cold, "warm": warm, "one": one, "kind": kind, "device": device, "host": host,
            "file": changed.name}  # fmt: skip


class Report:
    """Lines printed as they come, ratios at the end."""

    def __init__(self) -> None:
        self.ratios: list[str] = []

    @staticmethod
    def say(text: str) -> None:
        print(text, flush=True)

    def ratio(self, label: str, text: str) -> None:
        self.ratios.append(f"{label:44} {text}")


def times(b: Built) -> str:
    return f"{b.wall:.1f}s wall, {b.cpu:.1f} CPU s"


def matrix(client: Any, path: Path, tmp: Path, volume: str, out: Report, with_peer: bool) -> None:
    drop(client, volume)
    try:
        cold = build(client, path, tmp, "cold", "--force")
        warm = build(client, path, tmp, "warm", "--force")
    finally:
        drop(client, volume)
    for title, b in (("matrix cold (serial, one shared cache volume):", cold), ("no-change rebuild:", warm)):
        out.say(title)
        for job in JOBS:
            out.say(f"  {job}  {b.seconds.get(job, 0):6.1f}s  {hm(b.stats.get(job))}")
        out.say(f"  total {times(b)}")
    first = cold.seconds[JOBS[0]]
    rest = sum(cold.seconds[j] for j in JOBS[1:])
    device = sum(1 for j in JOBS[1:] if (cold.stats[j]["hits"], cold.stats[j]["misses"]) == (DEVICE, HOST))
    hits = sum(w["hits"] for w in warm.stats.values())
    compiles = sum(w["hits"] + w["misses"] for w in warm.stats.values())
    n = len(JOBS)
    out.ratio(f"jobs 2..{n} / job 1 (cold matrix):", f"{rest / first:.2f}  ({rest:.1f}s / {first:.1f}s)")
    out.ratio(f"jobs 2..{n} with every device compile a hit:", f"{device}/{n - 1}")
    out.ratio("no-change rebuild hits (matrix):", f"{hits}/{compiles}")
    if with_peer:
        p_wall, p_cpu, wheels = peer(client, path, tmp)
        out.say(
            f"plain cibuildwheel, same image, no cache, one run ({wheels} wheels): "
            f"{p_wall:.1f}s wall, {p_cpu:.1f} CPU s"
        )
        out.ratio(
            "cold matrix / plain cibuildwheel:",
            f"{cold.wall / p_wall:.2f} wall ({cold.wall:.1f}s / {p_wall:.1f}s), "
            f"{cold.cpu / p_cpu:.2f} CPU ({cold.cpu:.1f} / {p_cpu:.1f} CPU s)",
        )
        out.ratio(
            "no-change matrix / plain cibuildwheel:",
            f"{warm.wall / p_wall:.2f} wall, {warm.cpu / p_cpu:.2f} CPU",
        )


def torch(client: Any, tmp: Path, out: Report) -> None:
    for ext in ("plaintorch", "refops"):
        r = torch_extension(client, tmp, ext)
        out.say(f"torch extension {ext} ({TORCH_JOB}; {r['device']} device + {r['host']} host compiles):")
        cold, warm, one = (r[k] for k in ("cold", "warm", "one"))
        for what, b in (("cold", cold), ("no-change", warm), (f"{r['file']} changed ({r['kind']})", one)):
            out.say(f"  {what:28} {times(b)}  {hm(b.stats.get(TORCH_JOB))}")
        w, o = warm.stats[TORCH_JOB], one.stats[TORCH_JOB]
        other = "host" if r["kind"] == "device" else "device"
        changed_hit = r[r["kind"]] - o["misses"]  # the changed kind's files that still hit
        split = (
            f"{r['kind']} {changed_hit}/{r[r['kind']]} hit, {other} {o['hits'] - changed_hit}/{r[other]} hit"
        )
        out.ratio(
            f"{ext}: no-change rebuild hits:",
            f"{w['hits']}/{w['hits'] + w['misses']}  ({times(warm)}; "
            f"/ cold: {warm.wall / cold.wall:.2f} wall, "
            f"{warm.cpu / cold.cpu:.2f} CPU)",
        )
        out.ratio(
            f"{ext}: one {r['kind']} file changed:",
            f"{o['hits']} hits / {o['misses']} misses ({split}); {times(one)}",
        )
        if r["kind"] == "device":  # job 2 of a CPython matrix: its device compile a hit, its host ones not
            device_s = max(one.cpu - warm.cpu, 0.0)
            out.ratio(
                f"{ext}: the device compile's CPU s:",
                f"~{device_s:.1f} of a cold job's {cold.cpu:.1f}: jobs 2..N / job 1 of a CPython matrix "
                f"~{(cold.cpu - device_s) / cold.cpu:.2f} (CPU, projected)",
            )


def parallel(client: Any, path: Path, tmp: Path, out: Report) -> None:
    serial = build(client, path, tmp, "serial", "--force", "--no-cache")
    both = build(client, path, tmp, "parallel", "--force", "--no-cache", "--parallel", "2")
    out.say(f"--no-cache matrix: serial {times(serial)}; --parallel 2 {times(both)}")
    out.ratio("--parallel 2 / serial (wall, no cache):", f"{both.wall / serial.wall:.2f}")


def remote(client: Any, path: Path, tmp: Path, volume: str, out: Report) -> None:
    with redis() as url:
        drop(client, volume)
        a = build(client, path, tmp, "machine-a", "--job", JOBS[0], "--ccache-remote", url)
        drop(client, volume)
        b = build(client, path, tmp, "machine-b", "--job", JOBS[0], "--ccache-remote", url)
        drop(client, volume)
        bc = build(client, path, tmp, "machine-b-cold", "--job", JOBS[0])
        drop(client, volume)
    job = JOBS[0]
    out.say(f"remote store ({job}): A cold {times(a)} ({hm(a.stats.get(job))})")
    out.say(
        f"  B from the store {times(b)} ({hm(b.stats.get(job))}); "
        f"B cold {times(bc)} ({hm(bc.stats.get(job))})"
    )
    out.ratio(
        "machine B cold / machine B from store:", f"{bc.wall / b.wall:.2f}x wall, {bc.cpu / b.cpu:.2f}x CPU"
    )


def third_party_recipe(tmp: Path) -> Path:
    """recipes/pywhispercpp.yaml across the builder's three CPythons (its smoke tests left out)."""
    recipe = yaml.safe_load((ROOT / "recipes" / "pywhispercpp.yaml").read_text())
    recipe["python"] = list(TP_PYTHONS)
    recipe.pop("smoke", None)
    path = tmp / "pywhispercpp-matrix.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path


def missed(tmp: Path, out: str, job: str) -> list[str]:
    """The input files of the job's compiles that missed the cache (its build log)."""
    log = (tmp / "logs" / out / f"{job}.log").read_text(errors="replace")
    return [line.removeprefix(MISSED).strip() for line in log.splitlines() if line.startswith(MISSED)]


def is_device(name: str) -> bool:
    """A HIP translation unit: ggml compiles its ggml-cuda/*.cu as HIP (CMake's HIP language)."""
    return name.endswith((".cu", ".hip"))


def pywhispercpp(client: Any, tmp: Path, out: Report) -> None:
    """The real third-party project across three CPythons: the cold matrix serially on machine A (with
    the remote store: A fills it), the no-change matrix, then job 1 on machine B (an empty local
    volume) from the store and cold."""
    path = third_party_recipe(tmp)
    volume = volume_of(client, path)
    jobs = [j.id for j in tag_of(client, path)[1]]
    with redis() as url:
        drop(client, volume)
        try:
            cold = build(client, path, tmp, "tp-cold", "--force", "--ccache-remote", url)
            warm = build(client, path, tmp, "tp-warm", "--force")
            drop(client, volume)
            b = build(client, path, tmp, "tp-machine-b", "--force", "--job", jobs[0], "--ccache-remote", url)
            drop(client, volume)
            bc = build(client, path, tmp, "tp-machine-b-cold", "--force", "--job", jobs[0])
        finally:
            drop(client, volume)
    first = missed(tmp, "tp-cold", jobs[0])  # a cold job: every compile misses
    device_total = sum(map(is_device, first))
    out.say(
        f"pywhispercpp matrix cold (serial; machine A, filling the remote store), "
        f"{len(first)} compiles a job:"
    )
    for job in jobs:
        m = missed(tmp, "tp-cold", job)
        d = sum(map(is_device, m))
        out.say(
            f"  {job}  {cold.seconds.get(job, 0):7.1f}s  {hm(cold.stats.get(job))}; device misses {d}/"
            f"{device_total}, host misses {len(m) - d}/{len(first) - device_total}"
        )
    out.say(f"  total {times(cold)}")
    out.say(f"no-change matrix: {times(warm)}")
    for job in jobs:
        out.say(
            f"  {job}  {warm.seconds.get(job, 0):7.1f}s  {hm(warm.stats.get(job))}  "
            f"missed: {missed(tmp, 'tp-warm', job)}"
        )
    rest = sum(cold.seconds[j] for j in jobs[1:])
    device_hits = sum(device_total - sum(map(is_device, missed(tmp, "tp-cold", j))) for j in jobs[1:])
    out.ratio(
        f"pywhispercpp jobs 2..{len(jobs)} / job 1:",
        f"{rest / cold.seconds[jobs[0]]:.2f}  ({rest:.1f}s / {cold.seconds[jobs[0]]:.1f}s)",
    )
    out.ratio(
        f"pywhispercpp device hits, jobs 2..{len(jobs)}:",
        f"{device_hits}/{device_total * (len(jobs) - 1)} "
        f"({device_hits / max(device_total * (len(jobs) - 1), 1):.1%})",
    )
    hits = sum(w["hits"] for w in warm.stats.values())
    out.ratio(
        "pywhispercpp no-change hits:", f"{hits}/{sum(w['hits'] + w['misses'] for w in warm.stats.values())}"
    )
    out.ratio(
        "pywhispercpp no-change / cold:", f"{warm.wall / cold.wall:.2f} wall, {warm.cpu / cold.cpu:.2f} CPU"
    )
    out.say(
        f"machine B ({jobs[0]}): from the store {times(b)} ({hm(b.stats.get(jobs[0]))}); "
        f"cold {times(bc)} ({hm(bc.stats.get(jobs[0]))})"
    )
    out.ratio(
        "pywhispercpp machine B cold / from store:",
        f"{bc.wall / b.wall:.2f}x wall, {bc.cpu / b.cpu:.2f}x CPU",
    )
    same = {cold.sha256[jobs[0]], warm.sha256[jobs[0]], b.sha256[jobs[0]], bc.sha256[jobs[0]]}
    out.ratio(
        f"pywhispercpp {jobs[0]} wheels (A cold, no-change, B store, B cold):",
        "identical" if len(same) == 1 else f"DIFFER: {sorted(same)}",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--only", default=",".join(SCENARIOS), help="comma-separated: " + ", ".join(SCENARIOS)
    )
    parser.add_argument(
        "--third-party",
        action="store_true",
        help="also recipes/pywhispercpp.yaml across three CPythons (~1 h)",
    )
    args = parser.parse_args(argv)
    chosen = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = chosen - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")
    client = connect()
    out = Report()
    with tempfile.TemporaryDirectory(prefix="buildkit-economy-") as name:
        tmp = Path(name)
        path = helpers.reference_three_pythons(tmp)
        volume = volume_of(client, path)
        if chosen & {"matrix", "peer"}:
            matrix(client, path, tmp, volume, out, with_peer="peer" in chosen)
        if "torch" in chosen:
            torch(client, tmp, out)
        if "parallel" in chosen:
            parallel(client, path, tmp, out)
        if "remote" in chosen:
            remote(client, path, tmp, volume, out)
        if args.third_party:
            pywhispercpp(client, tmp, out)
    out.say("ratios:")
    for line in out.ratios:
        out.say("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
