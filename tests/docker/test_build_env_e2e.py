"""``buildkit build`` keeps the host's environment out of the build container, on the real engine,
gives it what the recipe exports (``archs.export``), and runs the recipe's hooks (``before_all``,
``before_build``, ``config_settings``, ``test_command``), never the project's own.

A project whose ``[tool.cibuildwheel]`` asks for ``environment-pass = ["PIP_INDEX_URL", ...]`` and
has hooks of its own is built from a host whose ``PIP_INDEX_URL`` carries a password, by a recipe
whose ``before_build`` prints those variables: the credential must appear nowhere (container,
cibuildwheel's printed options, job log, terminal, manifest), the recipe's hooks demonstrably ran
with buildkit's environment, and the project's did not run at all. The build is hermetic: the host's
pip resolves the build requirements with that index (the user's configuration), the container never
hears of it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cr3t-e2e-probe"
SECRET_URL = f"https://ci-bot:{SECRET}@pypi.internal.example/simple"
LEAKY_PYPROJECT = """
[tool.cibuildwheel]
environment-pass = ["PIP_INDEX_URL", "BUILDKIT_E2E_TOKEN"]
before-all = "echo PROJECT-BEFORE-ALL"
before-build = "echo PROJECT-BEFORE-BUILD:[$PIP_INDEX_URL]"
test-command = "echo PROJECT-TEST"

[tool.cibuildwheel.linux]
environment-pass = ["PIP_INDEX_URL", "BUILDKIT_E2E_TOKEN"]
"""


def test_host_credentials_never_reach_the_build(tmp_path: Path, debian_rocm_image: Any) -> None:
    source = tmp_path / "csrc"
    shutil.copytree(
        ROOT / "csrc", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    with (source / "pyproject.toml").open("a", encoding="utf-8") as fh:
        fh.write(LEAKY_PYPROJECT)
    data = yaml.safe_load((ROOT / "recipes" / "reference-trixie.yaml").read_text())
    data["source"] = {"path": str(source)}
    # archs.export end to end: the resolved list reaches the build under the name the project reads
    data["archs"]["export"] = {"HCC_AMDGPU_TARGET": ","}
    data["before_all"] = "echo BEFORE-ALL:[$BUILDKIT_JOB]"
    data["before_build"] = [
        "echo ENV-PROBE:[$PIP_INDEX_URL][$BUILDKIT_E2E_TOKEN][$BUILDKIT_JOB]",
        "echo ARCHS-PROBE:[$HCC_AMDGPU_TARGET]",
    ]
    # setuptools ignores settings it does not know: this one only has to reach the frontend's command
    data["config_settings"] = {"buildkit-e2e": "yes"}
    data["test_command"] = "python -c \"import refkernels, six, sys; print('TEST-PROBE:', sys.prefix)\""
    data["test_requires"] = ["six==1.17.0"]  # from the index, into cibuildwheel's test virtualenv
    data["build_frontend"] = "pip"  # not the default: pip wheel builds it, config settings included
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(data, sort_keys=False))
    # PIP_RETRIES: the host's pip tries the unreachable index once per project, not five times
    env = {**os.environ, "PIP_INDEX_URL": SECRET_URL, "BUILDKIT_E2E_TOKEN": SECRET, "PIP_RETRIES": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", "build", str(recipe), "--out", "dist", "--log-dir", "logs"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    log = (tmp_path / "logs" / "cp313-rocm5.7.log").read_text(errors="replace")
    assert proc.returncode == 0, proc.stdout + proc.stderr + log[-4000:]
    # a hermetic build resolves on the host with the user's pip configuration, index credentials
    # included (pip shows them redacted), and the container gets the wheelhouse, never the index
    host_pip, container = log.split("-m cibuildwheel", 1)
    assert "Looking in indexes: https://ci-bot:****@pypi.internal.example/simple" in host_pip, host_pip[
        -3000:
    ]
    assert "pypi.internal.example" not in container
    # the project's hook ran inside the container, with buildkit's environment and nothing of the host's
    assert "ENV-PROBE:[][][cp313-rocm5.7]" in log, log[-4000:]
    assert "CIBW_ENVIRONMENT_PASS_LINUX=" in log
    assert "ARCHS-PROBE:[" + ",".join(data["archs"]["list"]) + "]" in log, log[-4000:]
    assert "BEFORE-ALL:[cp313-rocm5.7]" in log, log[-4000:]
    assert "-Cbuildkit-e2e=yes" in log and "pip wheel" in log, log[-4000:]
    # the recipe's test_command ran on the repaired wheel, in cibuildwheel's test virtualenv
    assert "TEST-PROBE:" in log, log[-4000:]
    assert "PROJECT-" not in log.replace("echo PROJECT-", ""), log[-4000:]
    manifests = "".join(p.read_text() for p in (tmp_path / "dist").glob("*/*.manifest.json"))
    assert manifests
    for where, text in {
        "stdout": proc.stdout,
        "stderr": proc.stderr,
        "log": log,
        "manifest": manifests,
    }.items():
        assert SECRET not in text, where
