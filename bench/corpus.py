#!/usr/bin/env python3
"""``buildkit check`` against ``auditwheel show`` on the pinned real-wheel corpus (tests/corpus/wheels.toml).

Usage::

    python bench/corpus.py                   # fetch (cached) + judge + time every corpus wheel
    python bench/corpus.py --ci              # only the CI subset
    python bench/corpus.py --no-timing       # verdicts only: one check and one auditwheel run per wheel
    python bench/corpus.py --only numpy scipy --repeat 3
    python bench/corpus.py --wheels a.whl b.whl   # any files

Per wheel, in one run, each contestant its own subprocess, one after another, in ``--repeat`` interleaved
rounds (best kept; auditwheel is timed once when its first run takes 5 s or more):

* ``check``: ``python -m buildkit check --json WHEEL`` with the default settings (RECORD hashes
  verified), and ``check --no-verify-record``;
* ``auditwheel``: ``auditwheel show --json --ldpaths "" WHEEL`` (hermetic: no library of this host
  can satisfy a dependency, as no library of the user's host will at run time);
* ``floor``: this script with ``--floor WHEEL``: one single-threaded pass that decompresses the members
  ``check`` must read (every member, since RECORD is verified: zipfile, i.e. zlib, 1 MiB reads,
  discarded), and ``floor-elf``: only the ELF members (what ``check --no-verify-record`` must read).

Printed per wheel and in total: readable or not, agreement with auditwheel on ``sym_tag``, the overall
tag and the external libraries, time ratios to auditwheel and to the floor, peak RSS, bytes written.
A disagreement is *explained* only when ``docs/auditwheel-differences.toml`` lists it with its reason;
the run fails (exit 1) on any unreadable wheel, any crash or traceback of ``check``, or any
unexplained disagreement. Speed targets are printed as MET/MISS and do not change the exit code
(2 shared cores are too noisy for a hard gate) unless ``--strict-speed``.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import shutil
import sys
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import check_vs_auditwheel  # noqa: E402
from check_vs_auditwheel import Run, _best_of, measure  # noqa: E402

from tests.corpus.fetch import DEFAULT_CACHE, fetch_all, load_corpus  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

DIFFERENCES = ROOT / "docs" / "auditwheel-differences.toml"
FIELDS = ("sym_tag", "overall_tag", "external")
AUDITWHEEL_ERROR = "auditwheel-error"


# --------------------------------------------------------------------------- floors
# The floor runs as ``python -c FLOOR_SCRIPT WHEEL [--elf]``: the interpreter and zipfile only, not
# this module's imports (which would make the floor slower than it is).
FLOOR_SCRIPT = """
import sys, zipfile
total = 0
with zipfile.ZipFile(sys.argv[1]) as zf:
    for info in zf.infolist():
        if info.is_dir():
            continue
        with zf.open(info) as fh:
            head = fh.read(4)
            if len(sys.argv) > 2 and head != b"\\x7fELF":
                continue
            total += len(head)
            while block := fh.read(1 << 20):
                total += len(block)
print(total)
"""


def floor_argv(path: Path, *, elf_only: bool) -> list[str]:
    return [sys.executable, "-c", FLOOR_SCRIPT, str(path), *(["--elf"] if elf_only else [])]


# --------------------------------------------------------------------------- deliberate differences
@dataclass(frozen=True)
class Difference:
    """One deliberate difference. With ``libraries``, it explains a disagreement only when auditwheel
    calls external exactly the gate's external libraries plus at least one of those (fnmatch
    patterns) and nothing else; for ``overall_tag`` also only when that is the cause: auditwheel says
    ``linux_<arch>`` and the gate's overall tag is the one its symbols allow. ``field =
    "auditwheel-error"`` lists a wheel auditwheel gives no verdict on (crash, "unknown architecture")."""

    wheel: str  # fnmatch pattern on the file name
    field: str  # sym_tag | overall_tag | external
    reason: str
    libraries: tuple[str, ...] = ()

    def explains(self, wheel: str, fld: str, ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
        if self.field != fld or not fnmatch.fnmatchcase(wheel, self.wheel):
            return False
        if not self.libraries:
            return True
        mine, peer = set(ours["external"]), set(theirs["external"])
        extra = peer - mine
        if not extra or not mine <= peer:
            return False
        if not all(any(fnmatch.fnmatchcase(lib, pat) for pat in self.libraries) for lib in extra):
            return False
        if fld == "overall_tag":
            return str(theirs["overall_tag"]).startswith("linux_") and ours["overall_tag"] == ours["sym_tag"]
        return True


def load_differences(path: Path = DIFFERENCES) -> list[Difference]:
    if not path.exists():
        return []
    data = tomllib.loads(path.read_text())
    out = []
    for entry in data.get("difference", []):
        if entry["field"] not in (*FIELDS, AUDITWHEEL_ERROR):
            raise SystemExit(f"{path}: unknown field {entry['field']!r} (one of {', '.join(FIELDS)})")
        if not entry.get("reason", "").strip():
            raise SystemExit(f"{path}: the difference for {entry['wheel']} has no reason")
        libraries = tuple(str(lib) for lib in entry.get("libraries", ()))
        out.append(Difference(entry["wheel"], entry["field"], entry["reason"].strip(), libraries))
    return out


def explained(row: Row, fld: str, differences: list[Difference]) -> Difference | None:
    return next((d for d in differences if d.explains(row.wheel, fld, row.ours, row.theirs)), None)


# --------------------------------------------------------------------------- one wheel
@dataclass
class Row:
    wheel: str
    size: int
    members: int
    readable: bool = False
    crashed: bool = False
    check_exit: int = 0
    check_error: str | None = None
    passed: bool | None = None
    failed_rules: list[str] = field(default_factory=list)
    auditwheel_error: str | None = None
    ours: dict[str, Any] = field(default_factory=dict)
    theirs: dict[str, Any] = field(default_factory=dict)
    agree: dict[str, bool] = field(default_factory=dict)
    unexplained: list[str] = field(default_factory=list)
    explained: dict[str, str] = field(default_factory=dict)
    times: dict[str, float] = field(default_factory=dict)
    rss_mib: dict[str, float] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)


def _check_argv(path: Path, *, verify: bool) -> list[str]:
    argv = [sys.executable, "-m", "buildkit", "check", "--json", "--size-warn", "1000GiB"]
    return [*argv, *([] if verify else ["--no-verify-record"]), str(path)]


def auditwheel_command() -> str:
    """auditwheel's own console script beside this interpreter (as ``python -m buildkit`` is run with
    it), not a shim found first on PATH (pyenv's shim is a shell script that costs ~0.1 s a run)."""
    beside = Path(sys.executable).parent / "auditwheel"
    found = str(beside) if beside.exists() else shutil.which("auditwheel")
    if found is None:
        raise SystemExit("auditwheel is not installed")
    return found


def _auditwheel_argv(path: Path) -> list[str]:
    return [auditwheel_command(), "show", "--json", "--ldpaths", "", str(path)]


def compile_buildkit() -> None:
    """Byte-compile the package, as ``pip install`` does: with PYTHONDONTWRITEBYTECODE set (this
    machine sets it) an editable checkout would otherwise be compiled from source on every run,
    while auditwheel, installed by pip, starts from its .pyc files."""
    import compileall

    import buildkit

    compileall.compile_dir(str(Path(buildkit.__file__).parent), quiet=1)


def _written(run: Run) -> int:
    return max(run.write_bytes, run.tmp_peak)


def _auditwheel_verdict(run: Run) -> dict[str, Any]:
    try:
        doc = json.loads(run.stdout)
    except json.JSONDecodeError:
        lines = [line for line in run.stderr.strip().splitlines() if line.strip()]
        return {"error": f"exit {run.returncode}: " + (lines[-1][:300] if lines else "no output")}
    if not isinstance(doc, dict) or "sym_tag" not in doc:
        return {"error": f"exit {run.returncode}: unexpected output"}
    return doc


def judge(row: Row, check: Run, auditwheel: Run, differences: list[Difference]) -> None:
    """Fill the verdict part of ``row`` from one check and one auditwheel run."""
    row.check_exit = check.returncode
    row.crashed = "Traceback (most recent call last)" in check.stderr or check.returncode not in (0, 6, 7)
    if row.crashed:
        tail = check.stderr.strip().splitlines()
        row.check_error = f"exit {check.returncode}: " + (tail[-1] if tail else "no output")
        return
    wheel = json.loads(check.stdout)["wheels"][0]
    row.check_error = wheel.get("error")
    row.readable = row.check_error is None
    aw = _auditwheel_verdict(auditwheel)
    row.auditwheel_error = aw.get("error")
    if row.auditwheel_error is not None:
        known = next(
            (
                d
                for d in differences
                if d.field == AUDITWHEEL_ERROR and fnmatch.fnmatchcase(row.wheel, d.wheel)
            ),
            None,
        )
        if known is None:
            row.unexplained.append(AUDITWHEEL_ERROR)
        else:
            row.explained[AUDITWHEEL_ERROR] = known.reason
    if not row.readable:
        return
    row.passed = bool(wheel["passed"])
    row.failed_rules = sorted({f["rule"] for f in wheel["findings"] if f["severity"] == "error"})
    platform = wheel["platform"]
    row.ours = {
        "sym_tag": platform["sym_tag"],
        "overall_tag": platform["overall_tag"],
        "external": sorted(wheel["external_libraries"]),
    }
    if row.auditwheel_error is not None:
        return
    row.theirs = {
        "sym_tag": aw.get("sym_tag"),
        "overall_tag": aw.get("overall_tag"),
        "external": sorted(aw.get("external_libs", {})),
    }
    for fld in FIELDS:
        row.agree[fld] = row.ours[fld] == row.theirs[fld]
        if not row.agree[fld]:
            known = explained(row, fld, differences)
            if known is None:
                row.unexplained.append(fld)
            else:
                row.explained[fld] = known.reason


#: an auditwheel run at least this long is timed once: its run-to-run noise (~0.05 s here) is small
#: against it, and the corpus's slow ones take minutes; shorter ones are timed ``--repeat`` times like
#: the other contestants
AUDITWHEEL_ONCE_FROM = 5.0


def measure_wheel(path: Path, *, timing: bool, repeat: int, differences: list[Difference]) -> Row:
    """Judge one wheel (one run each of check and auditwheel) and, with ``timing``, time every
    contestant ``repeat`` times in interleaved rounds (check, auditwheel, check --no-verify-record,
    floor, ELF floor; best kept), so that a burst of load on the machine hits them alike."""
    with zipfile.ZipFile(path) as zf:
        members = len(zf.infolist())
    row = Row(wheel=path.name, size=path.stat().st_size, members=members)
    argvs = {"check": _check_argv(path, verify=True), "auditwheel": _auditwheel_argv(path)}
    runs = {name: [measure(argv)] for name, argv in argvs.items()}
    judge(row, runs["check"][0], runs["auditwheel"][0], differences)
    if timing and not row.crashed:
        argvs |= {
            "check_no_verify": _check_argv(path, verify=False),
            "floor": floor_argv(path, elf_only=False),
            "floor_elf": floor_argv(path, elf_only=True),
        }
        for name in ("check_no_verify", "floor", "floor_elf"):
            runs[name] = [measure(argvs[name])]
        for _round in range(repeat - 1):
            for name, argv in argvs.items():
                if name == "auditwheel" and runs[name][0].wall >= AUDITWHEEL_ONCE_FROM:
                    continue
                runs[name].append(measure(argv))
    best = {name: _best_of(timed) for name, timed in runs.items()}
    check, auditwheel = best["check"], best["auditwheel"]
    row.times = {"check": check.wall, "auditwheel": auditwheel.wall}
    row.rss_mib = {"check": check.maxrss_mib, "auditwheel": auditwheel.maxrss_mib}
    row.written = {"check": _written(check), "auditwheel": _written(auditwheel)}
    if "floor" in best:
        fast, fl, fe = best["check_no_verify"], best["floor"], best["floor_elf"]
        row.times |= {"check_no_verify": fast.wall, "floor": fl.wall, "floor_elf": fe.wall}
        row.rss_mib |= {"check_no_verify": fast.maxrss_mib, "floor": fl.maxrss_mib}
        row.written |= {"check_no_verify": _written(fast)}
    return row


# --------------------------------------------------------------------------- report
def _ratio(a: float | None, b: float | None) -> float | None:
    return None if not a or not b else a / b


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def report(rows: list[Row], *, timing: bool) -> dict[str, Any]:
    print(
        f"{'wheel':<58} {'MiB':>6} {'mbrs':>5} {'read':>4} {'sym':>4} {'tag':>4} {'ext':>4} "
        f"{'check':>6} {'aw':>6} {'aw/chk':>6} {'chk/fl':>6} {'nv/fle':>6} {'RSS':>5} {'wr':>3}  gate"
    )
    for r in rows:

        def mark(fld: str, r: Row = r) -> str:
            if fld not in r.agree:
                return "n/a"
            return "yes" if r.agree[fld] else ("expl" if fld in r.explained else "NO")

        t = r.times
        verdict = (
            "CRASH"
            if r.crashed
            else "unreadable"
            if not r.readable
            else "pass"
            if r.passed
            else "fail " + ",".join(r.failed_rules)
        )
        print(
            f"{r.wheel[:58]:<58} {r.size / 2**20:>6.1f} {r.members:>5} {'yes' if r.readable else 'NO':>4} "
            f"{mark('sym_tag'):>4} {mark('overall_tag'):>4} {mark('external'):>4} "
            f"{_fmt(t.get('check')):>6} {_fmt(t.get('auditwheel')):>6} "
            f"{_fmt(_ratio(t.get('auditwheel'), t.get('check')), '.1f'):>6} "
            f"{_fmt(_ratio(t.get('check'), t.get('floor'))):>6} "
            f"{_fmt(_ratio(t.get('check_no_verify'), t.get('floor_elf'))):>6} "
            f"{r.rss_mib.get('check', 0):>5.0f} {'0' if r.written.get('check') == 0 else 'YES':>3}  {verdict}"
        )
    judged = [r for r in rows if r.agree]
    totals: dict[str, Any] = {
        "wheels": len(rows),
        "unreadable": sum(not r.readable and not r.crashed for r in rows),
        "crashed": sum(r.crashed for r in rows),
        "judged_by_auditwheel": len(judged),
        "not_judged_by_auditwheel": sum(r.auditwheel_error is not None for r in rows),
        "agree": {fld: sum(r.agree.get(fld, False) for r in judged) for fld in FIELDS},
        "explained": {fld: sum(fld in r.explained for r in judged) for fld in FIELDS},
        "unexplained": [f"{r.wheel}: {fld}" for r in rows for fld in r.unexplained],
        "gate_passed": sum(bool(r.passed) for r in rows),
        "gate_failed": sum(r.passed is False for r in rows),
        "bytes": sum(r.size for r in rows),
    }
    rules: dict[str, int] = {}
    for r in rows:
        for rule in r.failed_rules:
            rules[rule] = rules.get(rule, 0) + 1
    totals["failures_per_rule"] = dict(sorted(rules.items(), key=lambda kv: -kv[1]))
    speed = [r for r in rows if r.readable and r.times.get("check") and r.times.get("auditwheel")]
    totals["geomean_aw_over_check"] = _geomean([r.times["auditwheel"] / r.times["check"] for r in speed])
    totals["max_check_rss_mib"] = max((r.rss_mib.get("check", 0) for r in rows), default=0)
    totals["check_bytes_written"] = sum(r.written.get("check", 0) for r in rows)
    if timing:
        timed = [r for r in speed if "floor" in r.times]
        totals["geomean_aw_over_check_no_verify"] = _geomean(
            [r.times["auditwheel"] / r.times["check_no_verify"] for r in timed]
        )
        totals["max_check_over_floor"] = max(
            (r.times["check"] / r.times["floor"] for r in timed), default=None
        )
        totals["max_check_no_verify_over_floor_elf"] = max(
            (r.times["check_no_verify"] / r.times["floor_elf"] for r in timed), default=None
        )
    print()
    print(
        f"{totals['wheels']} wheels ({totals['bytes'] / 2**30:.2f} GiB): {totals['unreadable']} unreadable, "
        f"{totals['crashed']} crashed; auditwheel judged {totals['judged_by_auditwheel']} "
        f"(not {totals['not_judged_by_auditwheel']})"
    )
    for fld in FIELDS:
        print(
            f"  {fld}: agree on {totals['agree'][fld]}/{len(judged)}, "
            f"{totals['explained'][fld]} listed deliberate differences"
        )
    print(f"  gate: {totals['gate_passed']} passed, {totals['gate_failed']} failed; by rule: {rules}")
    print(
        f"  speed: geometric mean auditwheel/check {_fmt(totals['geomean_aw_over_check'], '.1f')}x (RECORD "
        f"verified)"
        + (
            f", {_fmt(totals.get('geomean_aw_over_check_no_verify'), '.1f')}x (--no-verify-record)"
            if timing
            else ""
        )
    )
    print(
        f"  check peak RSS max {totals['max_check_rss_mib']:.0f} MiB; bytes written "
        f"{totals['check_bytes_written']}"
    )
    for line in totals["unexplained"]:
        print(f"UNEXPLAINED {line}")
    for r in rows:
        if r.crashed or not r.readable:
            print(f"{'CRASH' if r.crashed else 'UNREADABLE'} {r.wheel}: {r.check_error}")
    return totals


def targets(rows: list[Row], totals: dict[str, Any], *, timing: bool) -> dict[str, bool]:
    out = {
        "every wheel readable": totals["unreadable"] == 0,
        "no crash or traceback": totals["crashed"] == 0,
        "no unexplained disagreement with auditwheel": not totals["unexplained"],
        "peak RSS < 100 MiB on every wheel": totals["max_check_rss_mib"] < 100,
        "0 bytes written": totals["check_bytes_written"] == 0,
    }
    if timing:
        speed = [r for r in rows if r.readable and "floor" in r.times]
        out["check never slower than auditwheel show"] = all(
            r.times["check"] <= r.times["auditwheel"] for r in speed
        )
        slow = [r for r in speed if r.times["auditwheel"] >= 10]
        out[f">= 30x where auditwheel takes >= 10 s ({len(slow)} wheels)"] = all(
            r.times["auditwheel"] / r.times["check"] >= 30 for r in slow
        )
        out["check <= 1.0x the floor on every wheel"] = all(
            r.times["check"] <= r.times["floor"] for r in speed
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ci", action="store_true", help="only the CI subset")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these projects")
    ap.add_argument("--wheels", nargs="+", type=Path, help="these files instead of the corpus")
    ap.add_argument("--no-timing", action="store_true", help="verdicts only (one run of each tool)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per timed contestant, best kept")
    ap.add_argument("--jobs", type=int, default=2, help="wheels judged at once with --no-timing")
    ap.add_argument("--strict-speed", action="store_true", help="a missed speed target fails the run")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--results", type=Path, help="where to write the raw figures (JSON)")
    args = ap.parse_args()
    if args.wheels:
        paths = list(args.wheels)
    else:
        corpus = load_corpus(ci_only=args.ci)
        if args.only:
            wanted = {n.lower() for n in args.only}
            corpus = [w for w in corpus if w.name.lower() in wanted]
        paths = fetch_all(corpus, args.cache)
    args.cache.mkdir(parents=True, exist_ok=True)
    check_vs_auditwheel.CACHE = args.cache  # where measure() makes each child's private TMPDIR
    differences = load_differences()
    timing = not args.no_timing
    compile_buildkit()
    start = time.perf_counter()
    jobs = 1 if timing else max(1, args.jobs)  # timed contestants run alone, one after another

    def one(item: tuple[int, Path]) -> Row:
        i, path = item
        print(f"[{i}/{len(paths)}] {path.name}", file=sys.stderr, flush=True)
        return measure_wheel(path, timing=timing, repeat=max(1, args.repeat), differences=differences)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        rows = list(pool.map(one, enumerate(paths, 1)))
    totals = report(rows, timing=timing)
    goals = targets(rows, totals, timing=timing)
    print()
    for name, ok in goals.items():
        print(f"{'MET ' if ok else 'MISS'}  {name}")
    print(f"({time.perf_counter() - start:.0f} s)")
    results = args.results or args.cache / ("corpus-results-ci.json" if args.ci else "corpus-results.json")
    results.write_text(
        json.dumps({"totals": totals, "targets": goals, "rows": [asdict(r) for r in rows]}, indent=1)
    )
    print(f"raw figures: {results}")
    correctness = [k for k in goals if k.startswith(("every wheel", "no "))]
    failed = [k for k in goals if not goals[k] and (k in correctness or args.strict_speed)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
