"""The README's quick start, exactly as printed, on a project that is not this repository's (issue 36).

rocm-buildkit comes from the wheel this tree builds, installed in a fresh venv (tests/helpers/quickstart.py);
the project is a one-kernel HIP extension a user could have written (setuptools, a ``build_ext`` calling hipcc
for the archs buildkit exports in ``PYTORCH_ROCM_ARCH``). The quick start's code block runs as one bash script
(``set -e``: every step must succeed, no edit between them): init -> plan -> build -> check -> smoke ->
publish --dry-run -> publish. Then the published static index serves the built wheels.

Real parts only: the Docker engine (the debian-sid-rocm builder of ROCm 7.2 and its runtime image, built or
reused by content tag; their base debian:sid-slim seeded by ci/install-docker.sh), cibuildwheel, auditwheel,
the gate. The first run builds the images (tens of minutes on 2 cores); with them, the three jobs' builds."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.quickstart import installed_venv, readme_section, venv_env

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SETUP = '''\
import os
import shlex
import subprocess
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class HipBuild(build_ext):
    """hipcc builds the one HIP source into the extension, for the archs in PYTORCH_ROCM_ARCH."""

    def build_extension(self, ext):
        archs = [a for a in os.environ.get("PYTORCH_ROCM_ARCH", "").split(";") if a]
        if not archs:
            raise SystemExit("set PYTORCH_ROCM_ARCH")
        out = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        includes = [f"-I{d}" for d in [*self.include_dirs, sysconfig.get_paths()["include"]]]
        hipcc = shlex.split(os.environ.get("HIPCC", "hipcc"))
        offload = [f"--offload-arch={a}" for a in archs]
        subprocess.check_call([*hipcc, "-O2", "-fPIC", "-shared", *offload, *includes, *ext.sources,
                               "-o", out, "-lamdhip64"])


setup(
    name="tinyhip",
    version="0.1.0",
    packages=["tinyhip"],
    ext_modules=[Extension("tinyhip._kernels", sources=["tinyhip/kernels.hip"])],
    cmdclass={"build_ext": HipBuild},
)
'''
KERNELS = """\
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <hip/hip_runtime.h>

__global__ void add_one(float* x) { x[threadIdx.x] += 1.0f; }

static PyObject* device_count(PyObject*, PyObject*) {
  int n = 0;
  if (hipGetDeviceCount(&n) != hipSuccess) n = 0;
  return PyLong_FromLong(n);
}

static PyMethodDef methods[] = {{"device_count", device_count, METH_NOARGS, "HIP devices"}, {nullptr}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", nullptr, -1, methods};
PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
"""


def _project(folder: Path) -> Path:
    project = folder / "my-hip-project"
    (project / "tinyhip").mkdir(parents=True)
    (project / "setup.py").write_text(SETUP)
    (project / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools>=64"]\n')
    (project / "tinyhip" / "__init__.py").write_text("from tinyhip._kernels import device_count\n")
    (project / "tinyhip" / "kernels.hip").write_text(KERNELS)
    return project


def test_the_quick_start_as_printed(tmp_path: Path, docker_client: Any) -> None:
    for base in ("debian:sid-slim",):
        try:
            docker_client.images.get(base)
        except Exception:
            pytest.fail(f"base image {base} missing: ci/install-docker.sh seeds it", pytrace=False)
    venv = installed_venv(tmp_path / "user")
    _project(tmp_path)
    script = readme_section("Quick start (five minutes)", "bash")
    assert script.startswith("cd my-hip-project") and "buildkit publish dist --recipe" in script
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=tmp_path,
        env=venv_env(venv),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        timeout=6 * 3600,
    )
    log = f"--- stdout\n{proc.stdout[-8000:]}\n--- stderr\n{proc.stderr[-12000:]}"
    assert proc.returncode == 0, log
    project = tmp_path / "my-hip-project"
    built = sorted(p.name for p in (project / "dist").glob("*/*.whl"))
    assert len(built) == 3, log  # init's pythons: those of the runtime image (3.13, 3.14, 3.15)
    published = sorted(p.name for p in (project / "site" / "index" / "simple" / "tinyhip").glob("*.whl"))
    assert published == built
    assert "would publish" in proc.stdout + proc.stderr  # the dry run said where, then the real run did it
    assert all("manylinux_2_28_x86_64" in name for name in built)  # init: the glibc2.28 sysroot
    # the job logs beside the wheels (issue 36: they landed in ./build/logs of the working folder)
    assert {p.name for p in (project / "dist" / "logs").glob("*.log")} >= {"cp313-rocm7.2.log"}
    assert not (project / "build" / "logs").exists()
