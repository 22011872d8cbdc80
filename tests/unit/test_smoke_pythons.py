"""``buildkit smoke`` for a wheel serving several CPythons, and its dependencies resolved on the host
(issue 30); the parts that need no Docker engine (tests/docker/test_smoke_hermetic.py runs them in
containers)."""

from __future__ import annotations

import json
from pathlib import Path

from buildkit import manifest, smoke
from tests.helpers.wheel_zip import write_wheel

ROOT = Path(__file__).resolve().parents[2]

RECIPE = f"""\
name: demo
source: {{path: {ROOT / "csrc"}}}
version: {{base: "1.0", local: "rocm{{rocm}}"}}
python: ["3.11", "3.12", "3.13"]
wheel: {{abi: py3-none}}
rocm: ["5.7"]
archs: {{list: [gfx90a], toolchain: debian-trixie}}
manylinux: {{policy: manylinux_2_41}}
image: debian-rocm
smoke:
  - name: import
    image: "example/runtime:py{{python}}-rocm{{rocm}}"
    imports: [demo]
  - name: gpu
    image: rocm-buildkit/debian-runtime
    labels: [gpu]
"""


def _wheel_with_manifest(
    tmp_path: Path, job: dict[str, object], lock: tuple[dict[str, str], ...] = ()
) -> Path:
    wheel = write_wheel(
        tmp_path / "demo-1.0+rocm5.7-py3-none-manylinux_2_41_x86_64.whl", {"demo/__init__.py": b""}
    )
    data = {"job": job, "build_requirements": {"files": list(lock)}}
    manifest.manifest_path(wheel).write_text(json.dumps(data), encoding="utf-8")
    return wheel


def test_every_recipe_entry_runs_under_each_python_the_wheel_serves(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(RECIPE)
    job = {
        "id": "py3-rocm5.7",
        "python": "3.11",
        "rocm": "5.7",
        "wheel_tag": "py3-none",
        "serves": ["3.11", "3.12", "3.13"],
    }
    wheel = _wheel_with_manifest(tmp_path, job)
    specs = smoke.choose_specs(wheel, recipe=str(recipe), labels=())
    assert [(s.name, s.image, s.python) for s in specs] == [
        ("import (CPython 3.11)", "example/runtime:py3.11-rocm5.7", "python3.11"),
        ("gpu (CPython 3.11)", "rocm-buildkit/debian-runtime", "python3.11"),
        ("import (CPython 3.12)", "example/runtime:py3.12-rocm5.7", "python3.12"),
        ("gpu (CPython 3.12)", "rocm-buildkit/debian-runtime", "python3.12"),
        ("import (CPython 3.13)", "example/runtime:py3.13-rocm5.7", "python3.13"),
        ("gpu (CPython 3.13)", "rocm-buildkit/debian-runtime", "python3.13"),
    ]
    # --python names the interpreter: each entry once, as before
    specs = smoke.choose_specs(wheel, recipe=str(recipe), labels=(), python="python3")
    assert [(s.name, s.image, s.python) for s in specs] == [
        ("import", "example/runtime:py3.11-rocm5.7", None),
        ("gpu", "rocm-buildkit/debian-runtime", None),
    ]


def test_a_per_python_wheel_runs_each_entry_once(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(RECIPE)
    wheel = _wheel_with_manifest(
        tmp_path, {"id": "cp313-rocm5.7", "python": "3.13", "rocm": "5.7", "serves": ["3.13"]}
    )
    specs = smoke.choose_specs(wheel, recipe=str(recipe), labels=("gpu",))
    assert [(s.name, s.python) for s in specs] == [("gpu", None)]
    assert smoke.served_pythons(None) == ()


def test_missing_requirements_evaluate_markers_for_the_runtime_python_and_skip_what_is_installed() -> None:
    requires = [
        "typing-extensions>=4.5.0",
        "tomli>=1.1; python_version < '3.11'",
        "Numpy>=1.20",
        "packaging",
        "extra-thing; extra == 'docs'",
    ]
    installed = {"numpy": "1.26.4", "packaging": "21.0"}
    assert smoke.missing_requirements(requires, "3.13", installed) == ("typing-extensions>=4.5.0",)
    assert smoke.missing_requirements(requires, "3.10", {"numpy": "1.19.0"}) == (
        "typing-extensions>=4.5.0",
        "tomli>=1.1",
        "Numpy>=1.20",
        "packaging",
    )


def test_a_runtime_images_local_torch_satisfies_the_wheels_pin() -> None:
    """A torch wheel's ``torch==2.13.*`` is met by the image's 2.13.0+cpu: nothing is downloaded (the
    image's torch is the one the smoke test is for)."""
    assert smoke.missing_requirements(["torch==2.13.*"], "3.11", {"torch": "2.13.0+cpu"}) == ()
    assert smoke.missing_requirements(["torch==2.13.*"], "3.11", {"torch": "2.14.1"}) == ("torch==2.13.*",)


def test_the_build_lock_pins_and_the_download_targets_the_runtime_python(tmp_path: Path) -> None:
    lock = [{"name": "typing-extensions", "version": "4.12.2", "file": "x.whl", "sha256": "0" * 64}]
    wheel = _wheel_with_manifest(tmp_path, {"id": "py3-rocm5.7"}, tuple(lock))
    assert smoke.locked_versions(manifest.read(wheel)) == {"typing-extensions": "4.12.2"}
    cmd = smoke.download_command(
        ["typing-extensions>=4.5"], "3.13", wheel, tmp_path / "d", tmp_path / "c.txt"
    )
    text = " ".join(cmd)
    assert "--only-binary=:all: --python-version 3.13 --implementation cp --abi cp313" in text
    assert "--platform manylinux_2_41_x86_64" in text and text.count("--platform") == 26  # 2_41..2_17 + 2014
    assert cmd[-3:] == ["--dest", str(tmp_path / "d"), "typing-extensions>=4.5"]
    assert ["--constraint", str(tmp_path / "c.txt")] == cmd[
        cmd.index("--constraint") : cmd.index("--constraint") + 2
    ]
