"""Plan a 10,000-job matrix and print the time (target: under 1 s).

The recipe is generated: Python 3.10-3.14 x (ROCm 7.0 with torch 2.9, ROCm 7.2 with torch 2.10)
x PREBUILD_KERNELS (10 values) x OPT_VARIANT (100 values) = 10,000 jobs. Measured in-process:
load + validate + expand, then each renderer. The peer is cibuildwheel's
`--print-build-identifiers` for the same build selector (cp310-cp314 manylinux x86_64), run as a
subprocess next to `buildkit plan` as a subprocess, so both pay interpreter start-up; since the
peer's matrix is 5 identifiers, the ratio printed is per job.

    python bench/plan_matrix.py [--jobs-per-axis 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from buildkit.plan.expansion import expand
from buildkit.plan.render import render_github, render_json, render_table
from buildkit.recipe import load_recipe

T = TypeVar("T")
TARGET_S = 1.0
PYTHONS = ["3.10", "3.11", "3.12", "3.13", "3.14"]


def recipe_text(variants: int) -> str:
    opt = ", ".join(f'"v{i}"' for i in range(variants))
    kernels = ", ".join(f'"{i}"' for i in range(10))
    return f"""\
name: bench
source: {{git: "https://example.org/bench.git", ref: v1.0.0}}
version: {{base: "1.0.0", local: "rocm{{rocm}}.manylinux.{{policy}}"}}
python: [{", ".join(f'"{p}"' for p in PYTHONS)}]
rocm: ["7.0", "7.2"]
torch:
  - {{version: "2.9", index_url: "https://download.pytorch.org/whl/rocm7.0"}}
  - {{version: "2.10", index_url: "https://download.pytorch.org/whl/rocm7.2"}}
matrix:
  zip: [rocm, torch]
  axes:
    PREBUILD_KERNELS: [{kernels}]
    OPT_VARIANT: [{opt}]
archs: {{list: [gfx90a, gfx942, gfx950]}}
manylinux: {{policy: manylinux_2_28}}
repair: {{exclude: {{sets: [rocm, torch]}}}}
image: manylinux_2_28-rocm
"""


def best_of(repeat: int, fn: Callable[[], T]) -> tuple[float, T]:
    best = float("inf")
    result = fn()
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def wall(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - t0, proc.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs-per-axis", type=int, default=100, help="OPT_VARIANT values (100 -> 10,000 jobs)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.yaml"
        path.write_text(recipe_text(args.jobs_per_axis))
        env = {"PATH": os.environ.get("PATH", "")}

        t_load, recipe = best_of(args.repeat, lambda: load_recipe(path))
        t_expand, plan = best_of(args.repeat, lambda: expand(recipe, env=env))
        n = len(plan.jobs)
        t_json, _ = best_of(args.repeat, lambda: render_json(plan))
        t_github, gh = best_of(args.repeat, lambda: render_github(plan))
        t_table, _ = best_of(args.repeat, lambda: render_table(plan))
        plan_s = t_load + t_expand
        print(f"jobs: {n}  (github shards of <= 256: {gh.count('include')})")
        print(f"load+validate: {t_load * 1000:8.1f} ms")
        print(f"expand:        {t_expand * 1000:8.1f} ms  ({t_expand / n * 1e6:.1f} us/job)")
        print(
            f"plan total:    {plan_s * 1000:8.1f} ms  target < {TARGET_S * 1000:.0f} ms: "
            f"{'MET' if plan_s < TARGET_S else 'MISSED'}"
        )
        print(
            f"render json:   {t_json * 1000:8.1f} ms   github: {t_github * 1000:.1f} ms   "
            f"table: {t_table * 1000:.1f} ms"
        )

        # End to end, as a user runs it, next to the peer.
        buildkit = [sys.executable, "-m", "buildkit", "plan", "--format", "json", str(path)]
        t_cli, out = min(wall(buildkit, dict(os.environ)) for _ in range(args.repeat))
        print(
            f"`buildkit plan --format json` (subprocess, {n} jobs): {t_cli * 1000:.0f} ms "
            f"({len(out) / 1e6:.1f} MB of JSON)"
        )
        cibw = shutil.which("cibuildwheel")
        if cibw is None:
            print("peer: cibuildwheel not installed; no ratio")
            return 0 if plan_s < TARGET_S else 1
        peer_env = dict(
            os.environ,
            CIBW_BUILD="cp310-* cp311-* cp312-* cp313-* cp314-*",
            CIBW_ARCHS_LINUX="x86_64",
            CIBW_SKIP="*musllinux*",
        )
        peer_cmd = [cibw, "--print-build-identifiers", "--platform", "linux"]
        t_peer, ids = min(wall(peer_cmd, peer_env) for _ in range(args.repeat))
        k = len(ids.split())
        print(
            f"peer `cibuildwheel --print-build-identifiers` (same python selector, {k} identifiers): "
            f"{t_peer * 1000:.0f} ms"
        )
        print(
            f"per job: buildkit {t_cli / n * 1e6:.0f} us vs cibuildwheel {t_peer / k * 1e6:.0f} us "
            f"-> ratio {(t_peer / k) / (t_cli / n):.0f}x in buildkit's favour "
            f"(whole command: buildkit/cibuildwheel = {t_cli / t_peer:.2f})"
        )
    return 0 if plan_s < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
