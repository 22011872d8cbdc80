#!/usr/bin/env python3
"""The host-isa scan's cost (capstone disassembly of every x86_64 host ELF, :mod:`buildkit.inspect.isa`)
against the rest of the gate and against ``auditwheel show``, on the same wheels, in one run.

Usage::

    python bench/isa_scan.py [--wheels A.whl B.whl ...] [--json OUT]

Default wheels: numpy 2.2.6 (cp311 manylinux x86_64, runtime-dispatched AVX-512; ``pip download``
into the corpus cache) and the largest wheel of ``tests/corpus/wheels.toml`` with x86_64 host code
that is cheap to download (at most 300 MB: triton 3.9.0, 285 MB; fetched sha256-verified by
``tests/corpus/fetch.py``). Each measurement is its own process, one after another (wall time and
CPU time from ``os.wait4``):

* ``gate``: ``python -m buildkit check --json`` (default settings: no scan);
* ``scan``: a child that inspects the wheel, then times :func:`~buildkit.inspect.isa.host_isa_of`
  alone (reading the ELF members whole and disassembling them), and prints each ELF's level;
* ``auditwheel``: ``auditwheel show --json --ldpaths "" WHEEL``.

Printed: the three times and the ratios scan/gate, auditwheel/gate and auditwheel/(gate + scan).
The machine is shared: the ratios, measured back to back, are the figures to read.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import auditwheel_command  # noqa: E402
from tests.corpus.fetch import DEFAULT_CACHE, fetch_all, load_corpus  # noqa: E402

MAX_DOWNLOAD = 300_000_000  # "cheap to download": the corpus' largest wheels (cudnn, cublas) are left out

SCAN = (
    "import json, sys, time\n"
    "from buildkit.inspect import inspect_wheel\n"
    "from buildkit.inspect.isa import host_isa_of\n"
    "report = inspect_wheel(sys.argv[1])\n"
    "start = time.perf_counter()\n"
    "scan = host_isa_of(sys.argv[1], report, True)\n"
    "took = time.perf_counter() - start\n"
    "print(json.dumps({'scan': took, 'elves': [[e.member, e.level_name, e.counts, e.scanned_bytes,"
    " e.code_bytes] for e in scan]}))\n"
)


def timed(argv: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system) and stdout of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _pid, _status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, out


def numpy_wheel(cache: Path) -> Path:
    folder = cache / "isa-bench"
    folder.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", "numpy==2.2.6", "--only-binary=:all:", "--no-deps"]
    argv += ["--python-version", "3.11", "--platform", "manylinux_2_17_x86_64", "-d", str(folder), "-q"]
    subprocess.run(argv, check=True)
    return sorted(folder.glob("numpy-2.2.6-cp311-*x86_64*.whl"))[0]


def largest_cheap_wheel(cache: Path) -> Path:
    candidates = [
        w
        for w in load_corpus()
        if w.size <= MAX_DOWNLOAD and "x86_64" in w.filename and not w.filename.endswith("-any.whl")
    ]
    biggest = max(candidates, key=lambda w: w.size)
    return fetch_all([biggest], cache)[0]


class Row(NamedTuple):
    wheel: str
    size: int
    gate_s: float
    gate_cpu_s: float
    scan_s: float
    scan_process_cpu_s: float
    auditwheel_s: float
    auditwheel_cpu_s: float
    elves: list[list[Any]]  # [member, level, [v2, v3, v4], decoded bytes, code bytes]

    @property
    def ratios(self) -> tuple[float, float, float]:
        """scan/gate, auditwheel/gate, auditwheel/(gate + scan)."""
        g, sc, aw = self.gate_s, self.scan_s, self.auditwheel_s
        return sc / g, aw / g, aw / (g + sc)


def measure(wheel: Path) -> Row:
    check = [sys.executable, "-m", "buildkit", "check", "--json", "--size-warn", "1000GiB", str(wheel)]
    gate_wall, gate_cpu, _ = timed(check)
    _, scan_cpu, out = timed([sys.executable, "-c", SCAN, str(wheel)])
    scan = json.loads(out)
    audit_wall, audit_cpu, _ = timed([auditwheel_command(), "show", "--json", "--ldpaths", "", str(wheel)])
    return Row(
        wheel.name,
        wheel.stat().st_size,
        gate_wall,
        gate_cpu,
        scan["scan"],
        scan_cpu,
        audit_wall,
        audit_cpu,
        scan["elves"],
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheels", nargs="*", type=Path)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--json", type=Path, help="write the rows here too")
    args = ap.parse_args()
    wheels = args.wheels or [numpy_wheel(args.cache), largest_cheap_wheel(args.cache)]
    rows = [measure(w) for w in wheels]
    head = ("wheel", "MB", "gate s", "scan s", "audit s", "scan/gate", "aw/gate", "aw/(g+s)")
    print(f"{head[0]:60} " + " ".join(f"{h:>9}" for h in head[1:]))
    for r in rows:
        cells = (r.size / 1e6, r.gate_s, r.scan_s, r.auditwheel_s, *r.ratios)
        print(f"{r.wheel[:60]:60} " + " ".join(f"{c:9.2f}" for c in cells))
        for member, level, counts, scanned, code in [e for e in r.elves if e[1] != "x86-64"][:6]:
            decoded = f"decoded {scanned / 1e6:.1f} of {code / 1e6:.1f} MB"
            print(f"    {level:10} {member} (v2/v3/v4 {counts}; {decoded})")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (the ratios are measured back to back)")
    if args.json:
        data = [{**r._asdict(), "ratios": dict(zip(head[5:], r.ratios, strict=True))} for r in rows]
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
