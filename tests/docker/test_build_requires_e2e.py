"""What the isolated build environment gets beyond the project's own requirements, on the real
engine with the reference recipe (hermetic, the default):

* a project whose ``setup.py`` imports a package its ``pyproject.toml`` does not list fails to build;
  the recipe's ``build_requires`` puts it there (resolved on the host, locked, staged) and it builds;
* a project that builds against torch, in a job without a torch pin, is refused before any
  container starts (its build environment would have no torch: aiter then silently skips its
  kernels), naming the line that shows it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from buildkit.manifest import read as read_manifest
from tests.docker.test_hermetic_e2e import JOB, _build, _recipe, _source

pytestmark = pytest.mark.docker

FORGOTTEN = "tomli-w==1.2.0"  # a real PyPI wheel (py3-none-any) the source's setup.py imports


def _forgetful_source(tmp: Path) -> Path:
    source = _source(tmp)
    setup = source / "setup.py"
    text = setup.read_text()
    setup.write_text(text.replace("import os\n", "import os\n\nimport tomli_w  # not in pyproject.toml\n", 1))
    return source


def test_a_forgotten_build_requirement_fails_and_build_requires_fixes_it(
    tmp_path: Path, debian_rocm_image: Any, docker_client: Any
) -> None:
    without = tmp_path / "without"
    without.mkdir()
    built = _build(docker_client, without, _recipe(without, _forgetful_source(without)))
    assert built.proc.returncode == 9, built.proc.stdout + built.proc.stderr
    assert "No module named 'tomli_w'" in built.log, built.log[-3000:]
    assert not (without / "dist" / JOB).exists()

    fixed = tmp_path / "with"
    fixed.mkdir()
    recipe = _recipe(fixed, _forgetful_source(fixed), build_requires=[FORGOTTEN])
    built = _build(docker_client, fixed, recipe)
    assert built.proc.returncode == 0, built.proc.stdout + built.proc.stderr + built.log[-4000:]
    assert f"added to [build-system] requires: {FORGOTTEN}" in built.log
    recorded = read_manifest(built.wheel)["build_requirements"]
    assert FORGOTTEN in recorded["requested"]
    assert [(f["name"], f["version"]) for f in recorded["files"] if f["name"] == "tomli-w"] == [
        ("tomli-w", "1.2.0")
    ]
    # the user's source is untouched: only the staged copy got the requirement
    assert "tomli" not in (fixed / "csrc" / "pyproject.toml").read_text()
    (attrs,) = built.engine.seen.values()
    assert attrs["HostConfig"]["NetworkMode"] == "none"


def test_a_torch_extension_without_a_torch_pin_is_refused_before_any_container(
    tmp_path: Path, debian_rocm_image: Any, docker_client: Any
) -> None:
    source = _source(tmp_path)
    setup = source / "setup.py"
    setup.write_text(
        setup.read_text().replace(
            "import os\n",
            "import os\n\ntry:\n    import torch  # noqa: F401\n"
            "except ImportError:\n    print('no torch: skip kernels')\n",
            1,
        )
    )
    built = _build(docker_client, tmp_path, _recipe(tmp_path, source))
    assert built.proc.returncode == 9, built.proc.stdout + built.proc.stderr
    err = built.proc.stderr
    assert f"job {JOB}: the project builds against torch (setup.py:6: import torch  # noqa: F401)" in err, err
    assert "add a torch axis to" in err and "Traceback" not in err
    assert built.engine.seen == {} and "-m cibuildwheel" not in built.log
    assert not (tmp_path / "dist" / JOB).exists()
