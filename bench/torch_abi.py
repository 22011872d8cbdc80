#!/usr/bin/env python3
"""The ``torch-abi`` rule's reading of a torch wheel: cold (no cache) and cached, against a peer
measured in the same run.

Usage::

    python bench/torch_abi.py [--torch WHEEL] [--runs N]

Default wheel: torch 2.13.0+cpu for CPython 3.11 (190 MB; fetched into the corpus cache with pip,
sha256-verified: tests/helpers/torch_ext.py). Each measurement is its own process (``os.wait4``
gives its wall time and peak RSS):

* ``rule cold``: :func:`buildkit.compare.torch_exports.torch_wheel_exports` with an empty cache: the wheel
  hashed, every ``torch/lib/*.so*`` member streamed only up to its dynamic symbol tables, the exports
  written to the cache;
* ``rule cached``: the same call again (the wheel's sha256 known by its path, size, mtime and inode,
  the cache entry read);
* ``peer``: what one does by hand: ``unzip`` the libraries, then ``nm -D --defined-only`` on each.

Targets (issue 13): the rule under 3 s and 100 MiB RSS on this wheel.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RULE = (
    "import sys; from pathlib import Path\n"
    "from buildkit.compare.torch_exports import torch_wheel_exports\n"
    "e = torch_wheel_exports(Path(sys.argv[1]), cache=Path(sys.argv[2]))\n"
    "print(len(e.exports), e.cached)\n"
)
PEER = (
    'set -e; unzip -q -o "$1" "torch/lib/*.so*" -d "$2"; '
    'for f in "$2"/torch/lib/*.so*; do nm -D --defined-only "$f"; done | wc -l'
)


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str, float]:
    """Wall seconds, peak RSS in MiB, stdout and CPU seconds (user + system) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed with exit {proc.returncode}")
    return elapsed, usage.ru_maxrss / 1024, out.strip(), usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--torch", type=Path, help="a torch wheel (default: torch 2.13.0+cpu, cp311)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    wheel = args.torch
    if wheel is None:
        from tests.corpus.fetch import fetch
        from tests.helpers.torch_ext import TORCH_2_13_CPU

        wheel = fetch(TORCH_2_13_CPU)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rows: dict[str, list[tuple[float, float, str, float]]] = {"rule cold": [], "rule cached": [], "peer": []}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
            rows["rule cold"].append(timed([sys.executable, "-c", RULE, str(wheel), cache], env))
            rows["rule cached"].append(timed([sys.executable, "-c", RULE, str(wheel), cache], env))
            rows["peer"].append(timed(["sh", "-c", PEER, "peer", str(wheel), out]))
    size = wheel.stat().st_size / 1e6
    load = os.getloadavg()[0]
    print(f"{wheel.name} ({size:.0f} MB), {args.runs} runs, load average {load:.1f} on {os.cpu_count()} CPUs")
    print("  what          wall median (min)   CPU median   peak RSS   result")
    peer = statistics.median(t for t, *_ in rows["peer"])
    for name, runs in rows.items():
        wall = statistics.median(t for t, *_ in runs)
        fastest = min(t for t, *_ in runs)
        cpu = statistics.median(c for *_, c in runs)
        rss = max(r for _, r, *_ in runs)
        ratio = "" if name == "peer" else f"  {peer / wall:.1f}x faster than the peer"
        print(
            f"  {name:<12} {wall:6.2f} s ({fastest:5.2f} s)   {cpu:6.2f} s   {rss:6.1f} MiB  "
            f"({runs[-1][2]}){ratio}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
