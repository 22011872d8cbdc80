"""ROCm from pip end to end: the reference HIP extension (csrc/, recipes/reference.yaml's 7.2 job on the
debian-sid-rocm builder, one CPython) built with ``rocm_pip:``, gated, pip-installed into a clean
container with no system ROCm from a local index that also serves the SDK, imported, its targets read.

The SDK is the STAND-IN of tests/helpers/standin_sdk (TheRock's layout, Debian's real ROCm 7.2.4
binaries; AMD's index is unreachable here). Its core wheel has no compiler: the build compiles with
the builder image's hipcc (Debian's 7.2.4, ``ROCM_PATH=/usr``) and links libamdhip64.so.7, the
SONAME the SDK's core wheel ships; ``ROCM_HOME`` and ``CMAKE_PREFIX_PATH`` point at the SDK's devel
root (``rocm-sdk path``) installed in the build container from the hermetic wheelhouse. On the host,
the build requirements (setuptools from PyPI, the SDK from the stand-in's index served on 127.0.0.1,
given as ``PIP_EXTRA_INDEX_URL``: the user's pip configuration) are resolved and locked; the build
container has no network. No AMD GPU here: the wheel is imported, its kernels never run.

A target the release has no device package for (gfx90a: the stand-in ships gfx942 and gfx950) fails
the build's gate with ``rocm-pip-device``; an RPATH that misses and an unpinned ``Requires-Dist`` are
the unit tests of tests/unit/test_rocm_pip_gate.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from buildkit.manifest import read as read_manifest
from buildkit.manifest import sha256_file
from buildkit.publish.index import add_wheels
from tests.helpers.standin_sdk import (
    SERVE_INDEX,
    STANDIN_NOTE,
    ensure_runtime_image,
    ensure_standin_sdk,
    run_offline,
    serve,
)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PIN = "rocm[libraries]==7.2.*"


def _runtime_python(client: Any, image: str) -> str:
    """The clean runtime's CPython ("3.14"): the one the wheel is built for."""
    out = client.containers.run(
        image, ["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], remove=True
    )
    return str(out.decode().strip())


def _recipe(tmp: Path, python: str, archs: list[str], name: str) -> Path:
    data = yaml.safe_load((ROOT / "recipes" / "reference.yaml").read_text())
    data["source"] = {"path": str(ROOT / "csrc")}
    for key in ("publish", "smoke"):
        data.pop(key, None)
    data.update(python=[python], rocm=["7.2"], archs={"list": archs}, rocm_pip={"extras": ["libraries"]})
    path = tmp / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _build(recipe: Path, out: Path, index_url: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PIP_EXTRA_INDEX_URL=index_url)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "buildkit",
            "build",
            str(recipe),
            "--out",
            str(out),
            "--log-dir",
            str(out) + "-logs",
        ],
        cwd=recipe.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=2400,
    )


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, docker_client: Any) -> dict[str, Any]:
    print(STANDIN_NOTE)
    sdk = ensure_standin_sdk(docker_client)
    runtime = ensure_runtime_image(docker_client)
    python = _runtime_python(docker_client, runtime)
    return {"tmp": tmp_path_factory.mktemp("rocm-pip"), "sdk": sdk, "runtime": runtime, "python": python}


def test_built_gated_installed_from_the_index_and_imported_without_system_rocm(
    setup: dict[str, Any], docker_client: Any
) -> None:
    tmp, sdk, python = setup["tmp"], setup["sdk"], setup["python"]
    job = f"cp{python.replace('.', '')}-rocm7.2"
    recipe = _recipe(tmp, python, ["gfx942", "gfx950"], "reference-pip.yaml")
    plan = subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", str(recipe)], capture_output=True, text=True, check=True
    )
    assert f"rocm from pip: the wheel requires {PIN}" in plan.stdout
    with serve(sdk.index) as url:
        out = _build(recipe, tmp / "dist", url)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    (wheel,) = (tmp / "dist" / job).glob("*.whl")
    manifest = read_manifest(wheel)
    locked = {f["name"]: f["version"] for f in manifest["build_requirements"]["files"]}
    for dist in (
        "rocm",
        "rocm-sdk-core",
        "rocm-sdk-devel",
        "rocm-sdk-device-gfx942",
        "rocm-sdk-device-gfx950",
    ):
        assert locked.get(dist) == "7.2.4", locked
    libraries = {u["library"]: u for u in manifest["verdict"]["libraries"]}
    assert libraries["libamdhip64.so.7"]["status"] == "dependency", libraries
    assert "rocm-sdk-core 7.2.4: _rocm_sdk_core/lib/libamdhip64.so.7" in json.dumps(libraries)
    log = (tmp / "dist-logs" / f"{job}.log").read_text()
    assert (
        "ROCm from pip: ROCM_HOME=/opt/buildkit-rocm-sdk/root (/opt/buildkit-rocm-sdk/site/_rocm_sdk_devel)"
        in log
    )
    assert "RPATH + $ORIGIN/../_rocm_sdk_core/lib" in log

    index = tmp / "index"
    index.mkdir()
    wheels = [*sorted(sdk.wheels.glob("*.whl")), wheel]
    add_wheels(index, [(w, sha256_file(w)) for w in wheels])
    version = manifest["job"]["version"]
    script = (
        "! ldconfig -p | grep -q amdhip64\ntest ! -e /opt/rocm\n"
        + SERVE_INDEX
        + f"""python3 -m venv /venv
/venv/bin/pip install -q --no-cache-dir --index-url http://127.0.0.1:8000/simple/ \\
  'buildkit-refkernels=={version}'
/venv/bin/pip list --format=freeze | grep -i -e rocm -e refkernels
/venv/bin/python - <<'PY'
import refkernels
from refkernels import _C  # the extension: libamdhip64.so.7 through its RPATH, no initialize_process
number, _ = _C.arch_number("gfx942")
assert number == 0x942, number
targets = sorted(refkernels.get_build_targets())
maps = open("/proc/self/maps").read()
hip = sorted({{line.split()[-1] for line in maps.splitlines() if "libamdhip64" in line}})
print("targets", targets)
print("hip", hip)
assert targets == ["gfx942", "gfx950"], targets
assert len(hip) == 1 and hip[0].endswith("/site-packages/_rocm_sdk_core/lib/libamdhip64.so.7"), hip
PY
"""
    )
    logs = run_offline(docker_client, setup["runtime"], script, {"/index": index})
    print(logs)
    assert "rocm-sdk-core==7.2.4" in logs and "rocm-sdk-libraries==7.2.4" in logs
    assert "targets ['gfx942', 'gfx950']" in logs


def test_a_target_without_a_device_package_fails_the_builds_gate(setup: dict[str, Any]) -> None:
    tmp, sdk, python = setup["tmp"], setup["sdk"], setup["python"]
    job = f"cp{python.replace('.', '')}-rocm7.2"
    recipe = _recipe(tmp, python, ["gfx90a", "gfx942"], "reference-pip-gfx90a.yaml")
    with serve(sdk.index) as url:
        out = _build(recipe, tmp / "dist-gfx90a", url)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text[-4000:]
    assert "[rocm-pip-device] job target gfx90a: ROCm 7.2.4 has no rocm-sdk-device-gfx90a" in text, text[
        -4000:
    ]
    assert not (tmp / "dist-gfx90a" / job).exists()
    assert list((tmp / "dist-gfx90a" / ".refused" / job).glob("*.whl"))
