"""Benchmark: the compiler cache on a real third-party project that does nothing for it.

The project is lxml 6.0.2 (:data:`SDIST`, pinned by version and sha256), a Cython package: its PyPI
sdist ships the C that Cython generated (7 files, ``etree.c`` alone 12.8 MB), which its setuptools
``setup.py`` compiles one after the other by name through ``x86_64-linux-gnu-gcc`` against Debian's
libxml2 and libxslt (``image.packages``: a layer over the debian-rocm image), knowing nothing of
ccache. Three scenarios, each built by ``buildkit build`` (cache volume mounted, compilers routed
through ccache) and by plain ``python -m cibuildwheel`` on the same tree, in the same image, with the
same environment and repair command but no cache, one after the other in this one process:

* cold:       ``buildkit build --force`` from the sdist, with a fresh (removed) cache volume;
* no-change:  ``buildkit build --force`` again: the wheel is rebuilt, every compile should hit;
* one-file:   the unpacked sdist copied to a path source with one C file changed
  (:data:`EDITED`, lxml.sax): that file misses, the 6 others hit.

Per run: wall time, the "Building wheel..." step cibuildwheel reports, and for buildkit the hits and
misses its manifest records (``compiler_cache``). Targets (issue 12): buildkit's no-change rebuild
>= 10x and one-file rebuild >= 3x faster than its cold build. ``--strict`` exits 1 on a miss;
``--plain-once`` measures plain cibuildwheel for the cold scenario only (it has no cache, so its
rebuilds are cold builds again). Run: ``python bench/build_cache.py`` (needs the Docker engine, PyPI
for the build requirements, and builds the debian-rocm image if it is missing).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from buildkit.building import cibw  # noqa: E402
from buildkit.building.staging import HOST_CA_BUNDLE, stage_source  # noqa: E402
from buildkit.docker_engine import connect  # noqa: E402
from buildkit.image.builder import ensure_builder  # noqa: E402
from buildkit.plan.expansion import expand  # noqa: E402
from buildkit.recipe import load_recipe  # noqa: E402
from buildkit.source.tree import unpacked_source  # noqa: E402

SDIST = {"sdist": "lxml==6.0.2", "sha256": "cd79f3367bd74b317dda655dc8fcfa304d9eb6e4fb06b7168c5cf27f96e0cd62"}
#: the one file the one-file scenario changes (a function appended: a real edit, another object file)
EDITED = "src/lxml/sax.c"
COMPILES = 7
STEP = re.compile(r"✓ ([0-9.]+)s")
RECIPE: dict[str, Any] = {
    "name": "lxml",
    "source": SDIST,
    "version": {"base": "6.0.2"},  # src/lxml/__init__.py fixes it: no local label
    "python": ["3.13"],
    "rocm": ["5.7"],
    "archs": {"list": ["gfx90a"], "toolchain": "debian-trixie"},
    "manylinux": {"policy": "manylinux_2_41"},
    # libxml2 and libxslt from Debian (lxml's pyproject asks cibuildwheel for STATIC_DEPS, downloading
    # them: the recipe's environment replaces that table, as buildkit's always does)
    "image": {"profile": "debian-rocm", "packages": ["libxml2-dev", "libxslt1-dev", "pkg-config"]},
    "gate": {"waive": [{"rule": "gfx-arch", "reason": "lxml has no GPU code: the benchmark's CPU project"}]},
}


@dataclass
class Run:
    scenario: str
    tool: str  # "buildkit" | "cibuildwheel"
    wall: float
    compile: float
    cache: dict[str, Any] | None = None  # the manifest's compiler_cache (buildkit runs)


#: what cibuildwheel says when its container went away under it (another process on this shared
#: engine removed it): the run is repeated once, the figure of the failed try thrown away
CONTAINER_GONE = "the container shell has exited"


def run(
    cmd: list[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    *,
    retry: Callable[[], None] | None = lambda: None,
) -> tuple[float, str]:
    """Wall time and output of ``cmd``; ``retry`` (None: no retry) runs before the one repeat."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    text = proc.stdout + proc.stderr
    if proc.returncode != 0 and retry is not None and CONTAINER_GONE in text:
        print(f"note: the build container went away under {cmd[2]}; running it again", file=sys.stderr)
        retry()
        return run(cmd, cwd, env, retry=None)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}")
    return wall, text


def compile_seconds(log_text: str) -> float:
    """The time cibuildwheel reports for its "Building wheel..." step."""
    lines = log_text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "Building wheel...":
            for later in lines[i + 1 :]:
                m = STEP.search(later)
                if m:
                    return float(m.group(1))
    return float("nan")


def write_recipe(path: Path, source: dict[str, str]) -> Path:
    path.write_text(yaml.safe_dump({**RECIPE, "source": source}, sort_keys=False))
    return path


def buildkit_run(scenario: str, recipe: Path, work: Path, retry: Callable[[], None] = lambda: None) -> Run:
    logs, out = work / "logs", work / "dist"
    cmd = [sys.executable, "-m", "buildkit", "build", str(recipe), "--out", str(out), "--log-dir", str(logs)]
    wall, _ = run([*cmd, "--force"], work, retry=retry)
    (log,) = logs.glob("*.log")
    (manifest,) = out.glob("*/*.manifest.json")
    cache = json.loads(manifest.read_text())["compiler_cache"]
    return Run(scenario, "buildkit", wall, compile_seconds(log.read_text(errors="replace")), cache)


def plain_run(scenario: str, tree: Path, job: Any, image: str, work: Path) -> Run:
    """The same tree through cibuildwheel alone: the job's image, environment and repair, no cache."""
    staged = work / f"plain-{scenario}"
    with_ca = stage_source(tree, staged, HOST_CA_BUNDLE)  # as buildkit stages it, CA bundle included
    settings = cibw.CibwSettings(
        image=image, source_date_epoch=315532800, ccache_volume=None, with_ca_bundle=with_ca
    )
    env = cibw.subprocess_environment(os.environ, cibw.cibuildwheel_options(job, settings))
    out = work / f"plain-{scenario}-wheelhouse"
    cmd = [sys.executable, "-m", "cibuildwheel", "--platform", "linux", "--output-dir", str(out), "."]
    wall, text = run(cmd, staged, env)
    shutil.rmtree(staged, ignore_errors=True)
    return Run(scenario, "cibuildwheel", wall, compile_seconds(text))


def _cache_cell(cache: dict[str, Any] | None) -> str:
    if not cache:
        return "-"
    rate = cache["hit_rate"]
    return f"{cache['hits']}/{cache['misses']} ({'n/a' if rate is None else f'{rate:.1%}'})"


def report(runs: list[Run]) -> bool:
    ours = {r.scenario: r for r in runs if r.tool == "buildkit"}
    plain = {r.scenario: r for r in runs if r.tool == "cibuildwheel"}
    print(
        f"build_cache: lxml 6.0.2 from its PyPI sdist ({COMPILES} C files of Cython's, setuptools), one job"
    )
    print(
        f"{'scenario':<11}{'buildkit s':>11}{'compile s':>11}  {'hits/misses (rate)':<20}"
        f"{'cibuildwheel s':>15}{'compile s':>11}{'cibw/buildkit':>15}"
    )
    for name in ("cold", "no-change", "one-file"):
        r = ours[name]
        p = plain.get(name) or plain["cold"]
        mark = "" if name in plain else " (cold's)"
        print(
            f"{name:<11}{r.wall:>11.1f}{r.compile:>11.1f}  {_cache_cell(r.cache):<20}"
            f"{p.wall:>15.1f}{p.compile:>11.1f}{p.wall / r.wall:>14.2f}x{mark}"
        )
    print()
    ok = True
    for name, target in (("no-change", 10.0), ("one-file", 3.0)):
        ratio = ours["cold"].wall / ours[name].wall
        met = ratio >= target
        ok = ok and met
        verdict = "MET" if met else "MISS"
        print(f"buildkit cold / {name + ' rebuild':<18} = {ratio:6.1f}x   (target >= {target:g}x) {verdict}")
    expected = {"cold": (0, COMPILES), "no-change": (COMPILES, 0), "one-file": (COMPILES - 1, 1)}
    for name, (hits, misses) in expected.items():
        cache = ours[name].cache or {}
        if (cache.get("hits"), cache.get("misses")) != (hits, misses):
            print(f"note: {name}: expected {hits} hits and {misses} misses, the manifest says {cache}")
    worst = max(r.wall - r.compile for r in ours.values())
    print(f"orchestration overhead per job (worst: wall - compile step) = {worst:.1f} s")
    return ok


def fresh_volume(client: Any, volume: str) -> None:
    """Remove the job's cache volume, so that the cold build starts empty (exit when it cannot)."""
    import docker.errors

    try:
        client.volumes.get(volume).remove(force=True)
    except docker.errors.NotFound:
        return
    except docker.errors.APIError as exc:
        sys.exit(f"cannot remove the cache volume {volume} (in use?): {exc}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--plain-once", action="store_true", help="plain cibuildwheel for the cold build only"
    )
    args = parser.parse_args()

    client = connect()
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bench-build-cache-") as tmp_s:
        tmp = Path(tmp_s)
        sdist_recipe = write_recipe(tmp / "recipe.yaml", SDIST)
        recipe = load_recipe(sdist_recipe)
        job = expand(recipe, env={}).jobs[0]
        # the recipe's builder (the packages layer), built before any timing and shared by both tools
        image = ensure_builder(
            recipe.image, job.rocm, recipe_dir=tmp, recipe_name=recipe.name, client=client, progress=print
        )
        volume = cibw.ccache_volume(job, image.tag)
        fresh_volume(client, volume)
        tree = unpacked_source(recipe, tmp / "unpacked")
        try:
            runs.append(buildkit_run("cold", sdist_recipe, tmp, retry=lambda: fresh_volume(client, volume)))
            runs.append(plain_run("cold", tree, job, image.tag, tmp))
            runs.append(buildkit_run("no-change", sdist_recipe, tmp))
            if not args.plain_once:
                runs.append(plain_run("no-change", tree, job, image.tag, tmp))
            edited = tmp / "edited"
            shutil.copytree(tree, edited)
            with (edited / EDITED).open("a", encoding="utf-8") as fh:
                fh.write("\nint bench_one_file_change(void) { return 1; }\n")
            path_recipe = write_recipe(tmp / "recipe-edited.yaml", {"path": str(edited)})
            runs.append(buildkit_run("one-file", path_recipe, tmp))
            if not args.plain_once:
                runs.append(plain_run("one-file", edited, job, image.tag, tmp))
        finally:
            with contextlib.suppress(Exception):
                client.volumes.get(volume).remove(force=True)
    met = report(runs)
    if args.strict and not met:
        sys.exit(1)


if __name__ == "__main__":
    main()
