#!/usr/bin/env python3
"""``buildkit check`` against ``auditwheel show`` and the decompress-only floor, on real GPU wheels.

Usage::

    python bench/check_vs_auditwheel.py            # fetch (cached) and measure every wheel
    python bench/check_vs_auditwheel.py --fetch-only
    python bench/check_vs_auditwheel.py --wheels a.whl b.whl   # measure given files

Wheels are real third-party ROCm and CUDA wheels from PyPI (40-300 MiB compressed), pinned by
name and version below, downloaded through PyPI's JSON API into ``~/.cache/rocm-buildkit/bench-wheels``
(``$BUILDKIT_BENCH_CACHE``) and checked against the sha256 PyPI publishes.

Contestants, each its own subprocess, one after another (best of ``--repeat`` runs):

* ``floor``: this script with ``--floor WHEEL``: one single-threaded pass that decompresses every ELF
  member (``zipfile``, i.e. zlib, read in 1 MiB chunks, discarded) and nothing else: the issue's floor;
* ``floor-isal``: the same pass inflating with ISA-L (what ``check`` inflates with), to show how much of
  the gain is the faster inflater;
* ``check``: ``python -m buildkit check --json WHEEL`` (default workers), wall time of the whole process;
* ``check in-process``: this script with ``--inprocess WHEEL``: the time of ``inspect_wheel`` +
  ``evaluate`` alone, measured inside an already started interpreter (no start-up, no imports);
* ``auditwheel``: ``auditwheel show --json WHEEL``;
* start-up references: ``python -c pass`` and ``python -m buildkit --help``.

Per child: wall time; peak RSS (``ru_maxrss`` from ``os.wait4``); bytes written to disk: the child's
``/proc/<pid>/io`` ``write_bytes`` (sampled until it exits) plus the peak size of its private
``TMPDIR`` (a fresh empty directory per child, sampled every 50 ms; auditwheel extracts the wheel
there). Agreement compares ``sym_tag``, the external libraries and the overall tag with auditwheel's
``show --json``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

# (name, version, GPU stack): pinned so every run measures the same bytes. The comparison set:
# platform wheels auditwheel gives a verdict on, so every row can be checked for agreement.
WHEELS: tuple[tuple[str, str, str], ...] = (
    ("cupy-rocm-5-0", "13.3.0", "ROCm"),
    ("onnxruntime-rocm", "1.22.2.post3", "ROCm"),
    ("nvidia-curand-cu12", "10.3.10.19", "CUDA"),
    ("jax-rocm7-pjrt", "0.12.0", "ROCm"),
    ("cupy-cuda12x", "14.2.0", "CUDA"),
    ("nvidia-nccl-cu12", "2.21.5", "CUDA"),
)
# Real ROCm wheels auditwheel gives no verdict on, measured and reported apart (no agreement to check):
# what `check` does where the peer cannot answer.
EXTRAS: tuple[tuple[str, str, str], ...] = (
    # auditwheel show crashes (FileNotFoundError on libamd_comgr.so.2, which the wheel needs and lacks)
    ("pytorch-triton-rocm", "2.1.0", "ROCm"),
    # py3-none-any, 9111 members of which 2613 are AMDGPU code objects (.co/.hsaco): auditwheel ignores
    # them ("unknown architecture") and answers "not a platform wheel"
    ("amd-aiter", "0.1.7.post2.dev18", "ROCm"),
)
CACHE = Path(
    os.environ.get("BUILDKIT_BENCH_CACHE", Path.home() / ".cache" / "rocm-buildkit" / "bench-wheels")
)
CHUNK = 1 << 20
ELF_MAGIC = b"\x7fELF"


# --------------------------------------------------------------------------- fetching
def _pick_file(urls: list[dict[str, Any]]) -> dict[str, Any]:
    def score(u: dict[str, Any]) -> int:
        fn = u["filename"]
        if not fn.endswith(".whl"):
            return -1
        if not fn.endswith("-any.whl") and ("x86_64" not in fn or "manylinux" not in fn):
            return -1
        if fn.endswith("-py3-none-any.whl"):
            return 0  # a pure-Python-tagged wheel (GPU code objects only): taken when it is all there is
        return 2 if "-cp311-" in fn else 1 if "-py3-none-" in fn else -1

    best = max(urls, key=score, default=None)
    if best is None or score(best) < 0:
        raise SystemExit(
            "no cp311/py3 manylinux x86_64 (or py3-none-any) wheel among "
            + ", ".join(u["filename"] for u in urls)
        )
    return best


def fetch(name: str, version: str) -> Path:
    """Download one pinned wheel into the cache (atomically), verifying PyPI's sha256."""
    CACHE.mkdir(parents=True, exist_ok=True)
    index = f"https://pypi.org/pypi/{name}/json"
    with urllib.request.urlopen(index, timeout=60) as resp:
        meta = json.load(resp)
    if version not in meta.get("releases", {}):
        raise SystemExit(f"{name} {version} is not on PyPI")
    info = _pick_file(meta["releases"][version])
    target: Path = CACHE / str(info["filename"])
    want = info["digests"]["sha256"]
    if target.exists() and target.stat().st_size == info["size"]:
        return target
    print(f"fetching {info['filename']} ({info['size'] / 2**20:.0f} MiB)", file=sys.stderr, flush=True)
    digest = hashlib.sha256()
    with tempfile.NamedTemporaryFile(dir=CACHE, delete=False, suffix=".part") as tmp:
        try:
            url = urllib.parse.urljoin(index, info["url"])  # mirrors may give relative links
            with urllib.request.urlopen(url, timeout=120) as resp:
                while block := resp.read(CHUNK):
                    digest.update(block)
                    tmp.write(block)
            if digest.hexdigest() != want:
                raise SystemExit(f"{info['filename']}: sha256 mismatch with PyPI")
            os.replace(tmp.name, target)
        finally:
            if os.path.exists(tmp.name):
                os.unlink(tmp.name)
    return target


# --------------------------------------------------------------------------- the floor
def floor(path: Path) -> int:
    """Decompress every ELF member once, single-threaded; return the decompressed bytes."""
    total = 0
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            with zf.open(info) as fh:
                head = fh.read(4)
                if head != ELF_MAGIC:
                    continue
                total += len(head)
                while block := fh.read(CHUNK):
                    total += len(block)
    return total


def floor_isal(path: Path) -> int:
    """The same pass, inflating with ISA-L through buildkit's member reader (CRC checked too)."""
    from buildkit.inspect.zipstream import open_member

    total = 0
    with zipfile.ZipFile(path) as zf:
        fd = os.open(path, os.O_RDONLY)
        try:
            for info in zf.infolist():
                if info.is_dir() or info.file_size == 0:
                    continue
                stream = open_member(fd, info, zf, inflater="isal")
                head = stream.read(4)
                if head != ELF_MAGIC:
                    continue
                total += len(head)
                while block := stream.read(CHUNK):
                    total += len(block)
        finally:
            os.close(fd)
    return total


def bound(path: Path) -> dict[str, Any]:
    """How fast *any* reader of the bytes ``check`` reads could be on this machine: those bytes (per
    member, as many as ``check`` consumed, at most the member's size) inflated once with ISA-L inside
    this already started interpreter, and the time divided by the CPUs this process may use, as if
    inflating parallelised perfectly with no start-up, no parsing and no thread overhead. A lower
    bound on ``check``'s wall time; ``auditwheel / bound`` is the most any such reader could gain."""
    from buildkit.inspect import inspect_wheel
    from buildkit.inspect.zipstream import open_member

    report = inspect_wheel(path, verify_record=False)
    want = {s.name: min(s.bytes_read, s.file_size) for s in report.stats if s.bytes_read}
    total = 0
    with zipfile.ZipFile(path) as zf:
        fd = os.open(path, os.O_RDONLY)
        try:
            start = time.perf_counter()
            for info in zf.infolist():
                left = want.get(info.filename, 0)
                if not left:
                    continue
                stream = open_member(fd, info, zf, inflater="isal")
                while left > 0 and (block := stream.read(min(CHUNK, left))):
                    left -= len(block)
                    total += len(block)
            elapsed = time.perf_counter() - start
        finally:
            os.close(fd)
    cpus = len(os.sched_getaffinity(0))
    return {"inflate_s": elapsed, "bytes": total, "cpus": cpus, "bound_s": elapsed / cpus}


def inprocess(path: Path) -> dict[str, Any]:
    """Time ``inspect_wheel`` + ``evaluate`` inside this (already started) interpreter."""
    from buildkit.gate.evaluate import evaluate
    from buildkit.inspect import inspect_wheel
    from buildkit.service.check import GateFlags, gate_config

    config = gate_config(GateFlags(size_warn="1000GiB"))
    start = time.perf_counter()
    report = inspect_wheel(path, verify_record=False)  # as `buildkit check` without a job
    inspected = time.perf_counter()
    verdict = evaluate(report, config)
    done = time.perf_counter()
    return {
        "inspect_s": inspected - start,
        "evaluate_s": done - inspected,
        "total_s": done - start,
        "bytes_read": report.bytes_read,
        "passed": verdict.passed,
    }


# --------------------------------------------------------------------------- measuring a child
@dataclass
class Run:
    wall: float
    maxrss_mib: float
    write_bytes: int
    tmp_peak: int
    returncode: int
    stdout: str
    stderr: str = field(repr=False, default="")


def _dir_size(root: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, f)).st_size
    return total


def _io_write_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/io") as fh:
            for line in fh:
                if line.startswith("write_bytes:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def measure(argv: list[str]) -> Run:
    """Run ``argv`` to completion; its stdout/stderr go to pipes (not files), so any byte it writes
    to disk is its own doing."""
    tmpdir = tempfile.mkdtemp(prefix="bench-tmp-", dir=CACHE)
    env = {**os.environ, "TMPDIR": tmpdir}
    peak_tmp = 0
    last_write = 0
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    captured: dict[str, bytes] = {}
    done = threading.Event()

    def drain(name: str, stream: IO[bytes]) -> None:
        captured[name] = stream.read()

    def sample() -> None:
        nonlocal peak_tmp, last_write
        while not done.wait(0.05):
            peak_tmp = max(peak_tmp, _dir_size(tmpdir))
            wb = _io_write_bytes(proc.pid)
            if wb is not None:
                last_write = max(last_write, wb)

    assert proc.stdout is not None and proc.stderr is not None
    threads = [
        threading.Thread(target=drain, args=("out", proc.stdout), daemon=True),
        threading.Thread(target=drain, args=("err", proc.stderr), daemon=True),
        threading.Thread(target=sample, daemon=True),
    ]
    for t in threads:
        t.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    for t in threads:
        t.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    shutil.rmtree(tmpdir, ignore_errors=True)
    return Run(
        wall=wall,
        maxrss_mib=usage.ru_maxrss / 1024,
        write_bytes=max(last_write, usage.ru_oublock * 512),
        tmp_peak=peak_tmp,
        returncode=proc.returncode,
        stdout=captured.get("out", b"").decode("utf-8", "replace"),
        stderr=captured.get("err", b"").decode("utf-8", "replace"),
    )


# --------------------------------------------------------------------------- comparing verdicts
def compare(check_json: dict[str, Any], aw_json: dict[str, Any]) -> dict[str, bool]:
    wheel = check_json["wheels"][0]
    ours_ext = sorted(wheel["external_libraries"])
    theirs_ext = sorted(aw_json.get("external_libs", {}))
    return {
        "sym_tag": wheel["platform"]["sym_tag"] == aw_json.get("sym_tag"),
        "external": ours_ext == theirs_ext,
        "overall": wheel["platform"]["overall_tag"] == aw_json.get("overall_tag"),
    }


def mib(n: float) -> str:
    return f"{n / 2**20:.1f}"


def _best(argv: list[str], repeat: int) -> Run:
    return _best_of([measure(argv) for _ in range(repeat)])


def _best_of(runs: list[Run]) -> Run:
    """The fastest of ``runs``, carrying the most memory, bytes written and temp space any of them used."""
    best = min(runs, key=lambda r: r.wall)
    best.maxrss_mib = max(r.maxrss_mib for r in runs)
    best.write_bytes = max(r.write_bytes for r in runs)
    best.tmp_peak = max(r.tmp_peak for r in runs)
    return best


def bench(paths: list[Path], repeat: int, extras: list[Path] | None = None) -> int:
    aw = shutil.which("auditwheel")
    if aw is None:
        raise SystemExit("auditwheel is not on PATH")
    me = [sys.executable, __file__]
    CACHE.mkdir(parents=True, exist_ok=True)  # children's private TMPDIRs and the results live there
    python_start = _best([sys.executable, "-c", "pass"], 3).wall
    buildkit_start = _best([sys.executable, "-m", "buildkit", "--help"], 3).wall
    auditwheel_start = _best([aw, "--help"], 3).wall
    print(
        f"start-up: python -c pass {python_start:.3f}s, python -m buildkit --help {buildkit_start:.3f}s, "
        f"auditwheel --help {auditwheel_start:.3f}s",
        file=sys.stderr,
        flush=True,
    )
    rows = []
    extra_set = set(extras or [])
    for path in [*paths, *(extras or [])]:
        size = path.stat().st_size
        print(f"== {path.name} ({mib(size)} MiB)", file=sys.stderr, flush=True)
        fl = _best([*me, "--floor", str(path)], repeat)
        fi = _best([*me, "--floor-isal", str(path)], repeat)
        ck = _best(
            [sys.executable, "-m", "buildkit", "check", "--json", "--size-warn", "1000GiB", str(path)], repeat
        )
        ip_runs = [measure([*me, "--inprocess", str(path)]) for _ in range(repeat)]
        ip = min((json.loads(r.stdout) for r in ip_runs), key=lambda d: d["total_s"])
        bd = min(
            (json.loads(measure([*me, "--bound", str(path)]).stdout) for _ in range(repeat)),
            key=lambda d: d["bound_s"],
        )
        au = _best([aw, "show", "--json", str(path)], 1)
        if ck.returncode not in (0, 6, 7):
            print(ck.stderr, file=sys.stderr)
            raise SystemExit(f"buildkit check crashed on {path.name} (exit {ck.returncode})")
        check_doc = json.loads(ck.stdout)["wheels"][0]
        try:
            aw_json = json.loads(au.stdout)
        except json.JSONDecodeError:
            lines = au.stderr.strip().splitlines()
            aw_json = {
                "error": f"auditwheel show exited {au.returncode}: " + (lines[-1] if lines else "no output")
            }
        readable = "error" not in check_doc
        agree = compare(json.loads(ck.stdout), aw_json) if readable and "sym_tag" in aw_json else {}
        row = {
            "wheel": path.name,
            "set": "extra" if path in extra_set else "comparison",
            "size_mib": round(size / 2**20, 1),
            "floor_bytes": int(fl.stdout.strip() or 0),
            "check_bytes_read": ip["bytes_read"],
            "floor_s": round(fl.wall, 3),
            "floor_isal_s": round(fi.wall, 3),
            "check_s": round(ck.wall, 3),
            "check_inprocess_s": round(ip["total_s"], 3),
            "auditwheel_s": round(au.wall, 3),
            "bound_s": round(bd["bound_s"], 6),
            "bound_inflate_s": round(bd["inflate_s"], 6),
            "bound_cpus": bd["cpus"],
            # subprocess wall / subprocess wall
            "check_vs_floor": round(ck.wall / fl.wall, 2),
            "check_vs_floor_isal": round(ck.wall / fi.wall, 2),
            "auditwheel_vs_check": round(au.wall / ck.wall, 1),
            # auditwheel's subprocess wall / check's in-process time (start-up and imports excluded)
            "auditwheel_vs_check_inprocess": round(au.wall / ip["total_s"], 1),
            "auditwheel_vs_floor": round(au.wall / fl.wall, 2),
            # the most any reader of check's bytes could gain here (inflate only, every CPU, no start-up)
            "auditwheel_vs_bound": round(au.wall / bd["bound_s"], 1),
            "check_rss_mib": round(ck.maxrss_mib, 1),
            "auditwheel_rss_mib": round(au.maxrss_mib, 1),
            "floor_rss_mib": round(fl.maxrss_mib, 1),
            # the same bytes seen two ways (block-layer writes, files in TMPDIR): report the larger
            "check_written": max(ck.write_bytes, ck.tmp_peak),
            "auditwheel_written": max(au.write_bytes, au.tmp_peak),
            "auditwheel_tmp_peak": au.tmp_peak,
            "agree": agree,
            "auditwheel_sym_tag": aw_json.get("sym_tag"),
            "check_sym_tag": check_doc["platform"]["sym_tag"] if readable else None,
            "check_error": check_doc.get("error"),
            "auditwheel_error": aw_json.get("error"),
            "check_exit": ck.returncode,
        }
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)

    print(
        f"start-up (s): python -c pass {python_start:.3f}; python -m buildkit --help {buildkit_start:.3f}; "
        f"auditwheel --help {auditwheel_start:.3f}"
    )
    print(
        "wall times in s (subprocess, best of --repeat); chk/floor = check wall / floor wall; "
        "aw/chk = auditwheel wall / check wall; aw/inproc = auditwheel wall / in-process inspect+evaluate"
    )
    header = (
        f"{'wheel':<34} {'MiB':>6} {'floor':>6} {'fl-isal':>7} {'check':>6} {'inproc':>6} {'bound':>6} "
        f"{'aw':>6} {'chk/floor':>9} {'aw/chk':>6} {'aw/inproc':>9} {'aw/bound':>8} {'RSS MiB':>7} "
        f"{'written':>8} {'aw written':>10}  agree(sym,ext,overall)"
    )
    compared = [r for r in rows if r["set"] == "comparison"]
    others = [r for r in rows if r["set"] == "extra"]
    for title, group in (("comparison set", compared), ("extras: auditwheel gives no verdict", others)):
        if not group:
            continue
        print(f"-- {title}")
        print(header)
        for r in group:
            a = r["agree"]
            agree_txt = (
                ",".join("yes" if a.get(k) else "NO" for k in ("sym_tag", "external", "overall"))
                if a
                else "n/a"
            )
            print(
                f"{r['wheel'][:34]:<34} {r['size_mib']:>6} {r['floor_s']:>6.2f} {r['floor_isal_s']:>7.2f} "
                f"{r['check_s']:>6.2f} {r['check_inprocess_s']:>6.2f} {r['bound_s']:>6.2f} "
                f"{r['auditwheel_s']:>6.2f} {r['check_vs_floor']:>9} {r['auditwheel_vs_check']:>6} "
                f"{r['auditwheel_vs_check_inprocess']:>9} {r['auditwheel_vs_bound']:>8} "
                f"{r['check_rss_mib']:>7} {r['check_written']:>8} {r['auditwheel_written']:>10}  {agree_txt}"
            )
    if not compared:
        raise SystemExit("no wheel in the comparison set")
    largest = max(compared, key=lambda r: r["size_mib"])
    targets = {
        "largest: check >= 30x faster than auditwheel show (subprocess walls)": largest["auditwheel_vs_check"]
        >= 30,
        "largest: check no slower than the floor (subprocess walls)": largest["check_vs_floor"] <= 1.0,
        "every wheel: check peak RSS < 100 MiB": all(r["check_rss_mib"] < 100 for r in rows),
        "every wheel: check writes nothing": all(r["check_written"] == 0 for r in rows),
        "comparison set: auditwheel judged every wheel": all(r["auditwheel_error"] is None for r in compared),
        "comparison set: symbol verdicts and external libraries agree on every wheel": all(
            r["agree"].get("sym_tag") and r["agree"].get("external") for r in compared
        ),
        "every wheel: check read it": all(r["check_error"] is None for r in rows),
    }
    for r in rows:
        if r["auditwheel_error"] or r["check_error"]:
            print(f"note: {r['wheel']}: auditwheel: {r['auditwheel_error']}; check: {r['check_error']}")
    print(
        f"note: on the largest ({largest['wheel']}), 30x would need check to finish in "
        f"{largest['auditwheel_s'] / 30:.3f}s; python itself starts in {python_start:.3f}s, and only "
        f"inflating the {mib(largest['check_bytes_read'])} MiB check reads takes "
        f"{largest['bound_inflate_s']:.3f}s "
        f"with ISA-L ({largest['bound_s']:.3f}s if spread perfectly over {largest['bound_cpus']} CPUs): "
        f"no reader of those bytes can be more than {largest['auditwheel_vs_bound']}x faster than "
        "auditwheel here"
    )
    print()
    for name, ok in targets.items():
        print(f"{'MET ' if ok else 'MISS'}  {name}")
    out = CACHE / "last-results.json"
    startup = {
        "python_s": python_start,
        "buildkit_help_s": buildkit_start,
        "auditwheel_help_s": auditwheel_start,
    }
    out.write_text(json.dumps({"startup": startup, "rows": rows, "targets": targets}, indent=2))
    print(f"\nraw figures: {out}")
    return 0 if all(targets.values()) else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fetch-only", action="store_true")
    ap.add_argument("--floor", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--floor-isal", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--inprocess", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--bound", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--repeat", type=int, default=2, help="runs per contestant, best wall kept (default 2)")
    ap.add_argument("--wheels", nargs="+", type=Path, help="measure these files instead of the pinned set")
    ap.add_argument("--no-extras", action="store_true", help="skip the wheels auditwheel gives no verdict on")
    args = ap.parse_args()
    if args.floor:
        print(floor(args.floor))
        return 0
    if args.floor_isal:
        print(floor_isal(args.floor_isal))
        return 0
    if args.inprocess:
        print(json.dumps(inprocess(args.inprocess)))
        return 0
    if args.bound:
        print(json.dumps(bound(args.bound)))
        return 0
    paths = args.wheels or [fetch(n, v) for n, v, _ in WHEELS]
    extras = [] if args.wheels or args.no_extras else [fetch(n, v) for n, v, _ in EXTRAS]
    if args.fetch_only:
        for p in [*paths, *extras]:
            print(p)
        return 0
    return bench(paths, max(1, args.repeat), extras)


if __name__ == "__main__":
    sys.exit(main())
