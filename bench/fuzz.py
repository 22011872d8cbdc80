"""Fuzz ``check``'s readers for a long while: mutated real wheels through the gate, as CI does briefly.

    python bench/fuzz.py --minutes 30            # random mutations of the seed wheels for 30 minutes
    python bench/fuzz.py --minutes 5 --seed 7    # another sequence

The target is the one ``tests/unit/test_fuzz_gate.py`` runs for a bounded number of hypothesis examples
(:mod:`tests.helpers.fuzz_wheels`: seed wheels, mutations at the zip, member, structure and dist-info
levels, and :func:`~tests.helpers.fuzz_wheels.drive`, which gates the wheel and renders both reports).
Here the mutations come from a seeded ``random.Random`` (no shrinking, many more inputs per second).

Each input runs under an alarm (``--timeout``, default 10 s: a hang is a crash) and the process under
an address-space limit (``--memory``, default 3072 MiB: an unbounded allocation is a MemoryError, a
crash). A crash (a traceback, a hang, or an ``unreadable`` verdict that names no bytes) is written to
``--out`` (default ``tests/data/fuzz``) as ``<sha256>-<seed>.whl`` with a ``.json`` beside it (seed,
level, exception, traceback): the input of a regression test once the bug is fixed. The summary gives the
inputs run, outcomes per level, crashes, the slowest input and the peak RSS.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import random
import resource
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.corpus.fetch import DEFAULT_CACHE  # noqa: E402
from tests.helpers.fuzz_wheels import LEVELS, Seed, drive, mutate, seed_wheels  # noqa: E402


class Hang(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang("no verdict within the time limit")


def _random_input(rng: random.Random, seeds: list[Seed]) -> tuple[Seed, str, bytes]:
    seed = rng.choice(seeds)
    level = rng.choice(LEVELS)
    edits = [
        (rng.randrange(1 << 32), rng.randbytes(rng.choice((1, 1, 2, 4, 8, 16))))
        for _ in range(rng.randint(1, 8))
    ]
    cut = rng.choice((0, 0, 0, rng.randint(1, 99)))
    return seed, level, mutate(seed, level, rng.randrange(1 << 16), edits, cut)


def _keep(out: Path, seed: Seed, level: str, data: bytes, exc: BaseException) -> Path:
    digest = hashlib.sha256(data).hexdigest()[:24]
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{digest}-{seed.name}"
    path.write_bytes(data)
    record = {
        "seed": seed.name,
        "level": level,
        "exception": f"{type(exc).__name__}: {exc}"[:2000],
        "traceback": traceback.format_exception(exc)[-6:],
    }
    path.with_name(path.name + ".json").write_text(json.dumps(record, indent=1) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--timeout", type=int, default=10, help="seconds per input before it counts as a hang")
    ap.add_argument("--memory", type=int, default=3072, help="address-space limit of the process, MiB")
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "fuzz")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CACHE, help="where cached PyPI seed wheels are")
    args = ap.parse_args(argv)

    limit = args.memory << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, _alarm)
    rng = random.Random(args.seed)
    outcomes: collections.Counter[tuple[str, str]] = collections.Counter()
    crashes: list[Path] = []
    slowest = (0.0, "")
    with tempfile.TemporaryDirectory(prefix="buildkit-fuzz-") as tmp:
        work = Path(tmp)
        seeds = seed_wheels(work / "seeds", args.corpus)
        print(f"seeds: {', '.join(f'{s.name} ({len(s.data)} B)' for s in seeds)}", flush=True)
        start = time.monotonic()
        deadline = start + args.minutes * 60
        runs = 0
        while time.monotonic() < deadline:
            seed, level, data = _random_input(rng, seeds)
            path = work / seed.name
            path.write_bytes(data)
            runs += 1
            t0 = time.monotonic()
            signal.alarm(args.timeout)
            try:
                outcomes[(level, drive(path))] += 1
            except Exception as exc:  # every exception is a finding: kept, then the run goes on
                kept = _keep(args.out, seed, level, data, exc)
                crashes.append(kept)
                outcomes[(level, "crash")] += 1
                print(f"crash: {type(exc).__name__}: {str(exc)[:200]} -> {kept}", flush=True)
            finally:
                signal.alarm(0)
            took = time.monotonic() - t0
            if took > slowest[0]:
                slowest = (took, f"{seed.name} ({level})")
        elapsed = time.monotonic() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"inputs: {runs} in {elapsed / 60:.1f} min ({runs / elapsed:.1f}/s), seed {args.seed}")
    for level in LEVELS:
        row = {k[1]: v for k, v in outcomes.items() if k[0] == level}
        print(f"  {level:<14} {json.dumps(row, sort_keys=True)}")
    print(
        f"crashes: {len(crashes)}; slowest input {slowest[0]:.2f} s ({slowest[1]}); peak RSS {peak:.0f} MiB"
    )
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
