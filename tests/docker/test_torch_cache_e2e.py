"""The compiler cache for a torch extension (issue 29), on the real engine: a torch extension as most
projects write one (``torch.utils.cpp_extension``'s ``BuildExtension`` and ``CppExtension``, whose
compile lines name the isolated build environment's torch include folders, plus a HIP kernel:
tests/helpers/recipes.py) on the ROCm 7.2 builder, CPython 3.11 and torch 2.13.0+cpu from the
hash-locked wheelhouse, hermetic (no network), with the glibc2.31 sysroot of recipes/reference-torch.yaml.

pypa/build makes the isolated build environment at a fixed path (``--env-dir``,
``ccache.BUILD_ENV_DIR``): before that every build got a random ``/tmp/build-env-*``, every compile
that included torch's headers missed on a no-change rebuild (seen: 0 hits, 2 misses) and the wheel
carried that random path (in the names of pybind11's lambdas, 38 times), so no two builds were the
same bytes. Here: cold misses every compile, a no-change rebuild hits every one (device and host), a
build on "machine B" (an empty local cache) from the remote store machine A filled hits every one,
and the cold, cached and remote-cached wheels are the same bytes.

Not asserted: the same bytes as a ``--no-cache`` build. The HIP kernel here is compiled without an
explicit ``-cuid`` (csrc's and refops' builds pass one), so clang derives the translation unit's ID
(``__hip_cuid_*``) from a hash of its command line, and ccache calls clang with the arguments in its
own order (and ``-fcolor-diagnostics``): an uncached build names that symbol differently.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from buildkit import image as images
from buildkit import profiles
from buildkit.building import ccache
from buildkit.building.cibw import ccache_volume
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe
from tests.docker.conftest import redis_command
from tests.helpers.recipes import PLAIN_TORCH_DEVICE, PLAIN_TORCH_HOST, plain_torch_extension

pytestmark = [pytest.mark.docker, pytest.mark.slow]

JOB = "cp311-rocm7.2-torch2.13"
COMPILES = PLAIN_TORCH_DEVICE + PLAIN_TORCH_HOST


def _build(tmp: Path, recipe: Path, out: str, *flags: str) -> tuple[dict[str, Any], Path]:
    command = [
        sys.executable,
        "-m",
        "buildkit",
        "build",
        str(recipe),
        "--out",
        out,
        "--log-dir",
        out + "-logs",
    ]
    proc = subprocess.run([*command, *flags], cwd=tmp, capture_output=True, text=True, timeout=3600)
    log = tmp / (out + "-logs") / f"{JOB}.log"
    assert proc.returncode == 0, (
        proc.stdout[-3000:] + proc.stderr[-3000:] + (log.read_text()[-6000:] if log.exists() else "")
    )
    (manifest,) = (tmp / out / JOB).glob("*.manifest.json")
    (wheel,) = (tmp / out / JOB).glob("*.whl")
    return json.loads(manifest.read_text()), wheel


def _counts(built: dict[str, Any]) -> tuple[int, int]:
    stats = built["compiler_cache"]
    return stats["hits"], stats["misses"]


def test_a_torch_extension_hits_every_compile_and_its_wheel_is_the_same_bytes(
    tmp_path: Path, docker_client: Any, redis: tuple[str, int]
) -> None:
    recipe = plain_torch_extension(tmp_path)
    plan = expand(load_recipe(recipe), env={}, enumerator=lambda: [])
    profile = profiles.get_profile("debian-sid-rocm")
    archs = [str(a) for j in plan.jobs for a in j.archs.kept]
    tag, _ = images.resolve_tag(docker_client, profile, images.rocm_build_args(profile, "7.2", archs))
    volume = ccache_volume(plan.job(JOB), tag)
    host, port = redis
    url = f"redis://{host}:{port}"

    def drop_volume(*, check: bool = True) -> None:
        with contextlib.suppress(Exception):
            docker_client.volumes.get(volume).remove(force=True)
        if check:
            with contextlib.suppress(Exception):
                docker_client.volumes.get(volume)
                pytest.fail(f"cache volume {volume} is in use elsewhere: cannot start cold", pytrace=False)

    assert redis_command(host, port, "FLUSHALL") == "OK"
    drop_volume()
    try:
        cold, cold_wheel = _build(tmp_path, recipe, "cold", "--ccache-remote", url)
        assert _counts(cold) == (0, COMPILES), cold["compiler_cache"]
        log = (tmp_path / "cold-logs" / f"{JOB}.log").read_text(errors="replace")
        assert f"--env-dir {ccache.BUILD_ENV_DIR}" in log  # pypa/build's environment at the fixed path
        assert f"-I{ccache.BUILD_ENV_DIR}/lib/python3.11/site-packages/torch/include" in log
        assert re.search(r"/tmp/build-env-\w{8}", log) is None, log  # no random environment anywhere

        warm, _ = _build(tmp_path, recipe, "warm", "--force")  # no change: every compile hits
        assert _counts(warm) == (COMPILES, 0), warm["compiler_cache"]

        drop_volume()  # machine B: an empty local cache, the store machine A (the cold build) filled
        remote, _ = _build(tmp_path, recipe, "remote", "--force", "--ccache-remote", url)
        assert _counts(remote) == (COMPILES, 0), remote["compiler_cache"]

        sums = {b["wheel"]["sha256"] for b in (cold, warm, remote)}
        assert len(sums) == 1, sums  # cold, cached and remote-cached: the same bytes
        with zipfile.ZipFile(cold_wheel) as wheel:
            (module,) = (n for n in wheel.namelist() if n.startswith("plaintorch/_C."))
            data = wheel.read(module)
        assert re.search(rb"/tmp/build-env-\w{8}", data) is None and ccache.BUILD_ENV_DIR.encode() in data
    finally:
        drop_volume(check=False)
