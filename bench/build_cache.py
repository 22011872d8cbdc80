"""Benchmark: cold build, no-change rebuild, one-kernel-changed rebuild, and plain cibuildwheel.

All four runs build the reference recipe (csrc/, gfx908;gfx90a;gfx942, Debian builder) in one
process of this script, on the same engine and image, so their ratios are comparable:

* cold:        ``buildkit build --force`` with an empty compiler-cache volume
* no-change:   ``buildkit build`` again: the inputs key matches, nothing is rebuilt
* one-kernel:  ``buildkit build`` after editing one kernel source: ccache serves the rest
* cibuildwheel: the same project through ``python -m cibuildwheel`` alone, with the same image
  and environment but none of buildkit's steps (no gate, no cache, no manifest)

Orchestration overhead of a job = its wall time minus the compiler step cibuildwheel reports
("Building wheel..." step time). Targets (issue 4): no-change >= 10x faster than cold; overhead
< 15 s per job. Run: ``python bench/build_cache.py`` (needs the Docker engine and the image).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
STEP = re.compile(r"✓ ([0-9.]+)s")


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
    return wall, proc.stdout + proc.stderr


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


def main() -> None:
    from buildkit.build.cibw import ccache_volume
    from buildkit.docker_engine import connect
    from buildkit.image import ensure_image
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    client = connect()
    image = ensure_image("debian-rocm", client=client, progress=lambda _l: None)
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp_s:
        tmp = Path(tmp_s)
        source = tmp / "csrc"
        shutil.copytree(
            ROOT / "csrc", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
        )
        data = yaml.safe_load((ROOT / "recipes" / "reference.yaml").read_text())
        data["source"] = {"path": str(source)}
        recipe = tmp / "recipe.yaml"
        recipe.write_text(yaml.safe_dump(data, sort_keys=False))
        job = expand(load_recipe(recipe), env={}).jobs[0]
        volume = ccache_volume(job, image.tag)
        with contextlib.suppress(Exception):
            client.volumes.get(volume).remove(force=True)
        logs = tmp / "logs"
        base = [
            sys.executable,
            "-m",
            "buildkit",
            "build",
            str(recipe),
            "--out",
            str(tmp / "dist"),
            "--log-dir",
            str(logs),
        ]
        log = logs / f"{job.id}.log"

        cold, _ = run([*base, "--force"], tmp)
        cold_compile = compile_seconds(log.read_text())
        nochange, out = run(base, tmp)
        assert "up-to-date" in out, out
        kernel = source / "src" / "rowsum.hip"
        kernel.write_text(
            kernel.read_text() + "\n__global__ void bench_extra_kernel(float *x) { x[0] += 1.0f; }\n"
        )
        one, _ = run(base, tmp)
        one_compile = compile_seconds(log.read_text())

        # the same project through cibuildwheel alone (same image and environment, no buildkit)
        from buildkit.build import cibw
        from buildkit.build.staging import HOST_CA_BUNDLE

        with_ca = HOST_CA_BUNDLE.is_file()
        if with_ca:  # pip in the container needs the host's CA bundle, as in buildkit's own runs
            (source / ".buildkit").mkdir(exist_ok=True)
            shutil.copyfile(HOST_CA_BUNDLE, source / ".buildkit" / "ca-bundle.crt")
        settings = cibw.CibwSettings(
            image=image.tag, source_date_epoch=315532800, ccache_volume=None, with_ca_bundle=with_ca
        )
        options = cibw.cibuildwheel_options(job, settings)
        env = cibw.subprocess_environment(os.environ, options)
        plain, plain_out = run(
            [
                sys.executable,
                "-m",
                "cibuildwheel",
                "--platform",
                "linux",
                "--output-dir",
                str(tmp / "plain"),
                ".",
            ],
            source,
            env,
        )
        plain_compile = compile_seconds(plain_out)
        with contextlib.suppress(Exception):
            client.volumes.get(volume).remove(force=True)

    print("build_cache: reference recipe (3 archs), one job, Debian builder")
    print(f"{'run':<28}{'wall s':>9}{'compile s':>11}{'overhead s':>12}")
    rows = [
        ("cold (empty ccache)", cold, cold_compile),
        ("no-change rebuild", nochange, 0.0),
        ("one-kernel-changed rebuild", one, one_compile),
        ("plain cibuildwheel", plain, plain_compile),
    ]
    for name, wall, comp in rows:
        print(f"{name:<28}{wall:>9.2f}{comp:>11.2f}{wall - comp:>12.2f}")
    print()
    print(f"cold / no-change          = {cold / nochange:6.1f}x   (target >= 10x)")
    print(f"cold / one-kernel-changed = {cold / one:6.1f}x")
    print(
        f"buildkit cold / plain cibuildwheel = {cold / plain:6.2f}x "
        "(buildkit adds the gate, manifest and toolchain probe)"
    )
    worst = max(cold - cold_compile, one - one_compile)
    print(f"orchestration overhead per job (worst) = {worst:.2f} s   (target < 15 s)")


if __name__ == "__main__":
    main()
