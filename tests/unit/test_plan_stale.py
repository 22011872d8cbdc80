"""``buildkit plan`` names the wheels in the build's output folder that an edit of the recipe made stale
(issue 36): the manifest records the digest of each key that can change a wheel (``recipe.build_keys``,
:meth:`buildkit.recipe.Recipe.record`); an edit of ``publish:`` or ``smoke:`` alone is no note, as
``publish --recipe`` takes those wheels. The wheels are files with the manifest ``build`` writes (the
recipe's own record, :mod:`buildkit.manifest`): plan reads nothing else of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit import manifest
from buildkit.recipe import load_recipe
from buildkit.service.plan import stale_notes

ROOT = Path(__file__).resolve().parents[2]

RECIPE = """\
name: tinyhip
source: {path: proj}
version: {base: "0.1.0"}
python: ["3.12", "3.13"]
rocm: ["7.2"]
archs: {list: [gfx90a, gfx942]}
manylinux: {policy: manylinux_2_28}
repair: {exclude: {sets: [rocm]}}
image: manylinux_2_28-rocm
smoke:
  - name: import
    image: rocm-buildkit/debian-sid-rocm-runtime
    imports: [tinyhip]
publish: {directory: site/index}
"""


def _built(
    tmp_path: Path, name: str = "tinyhip", *, older: bool = False, folder: str = "cp313-rocm7.2"
) -> Path:
    """A wheel of the recipe as it is now in dist/FOLDER/, with its manifest's recipe record."""
    recipe = load_recipe(tmp_path / "r.yaml")
    wheel = tmp_path / "dist" / folder / f"{name}-0.1.0-cp313-cp313-manylinux_2_28_x86_64.whl"
    wheel.parent.mkdir(parents=True, exist_ok=True)
    wheel.write_bytes(b"PK")
    record = {**recipe.record(), "name": name}
    if older:  # a manifest written before build_keys
        del record["build_keys"]
    manifest.write(wheel, {"recipe": record, "wheel": {"filename": wheel.name}})
    return wheel


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "setup.py").write_text(
        'from setuptools import setup\nsetup(name="tinyhip", version="0.1.0")\n'
    )
    (tmp_path / "r.yaml").write_text(RECIPE)
    return tmp_path


def _edit(folder: Path, old: str, new: str) -> None:
    text = (folder / "r.yaml").read_text()
    assert old in text
    (folder / "r.yaml").write_text(text.replace(old, new))


def test_an_unchanged_recipe_and_a_publish_or_smoke_edit_make_no_note(project: Path) -> None:
    _built(project)
    before = load_recipe(project / "r.yaml")
    assert stale_notes(before, project / "dist") == ()
    _edit(project, "directory: site/index", "directory: elsewhere")
    _edit(project, "imports: [tinyhip]", "imports: [tinyhip, tinyhip._kernels]")
    recipe = load_recipe(project / "r.yaml")
    assert recipe.sha256 != before.sha256  # the file changed ...
    assert stale_notes(recipe, project / "dist") == ()  # ... in keys that cannot change the wheel


def test_an_edit_of_build_keys_names_the_wheel_and_the_keys(project: Path) -> None:
    wheel = _built(project)
    _edit(project, "gfx90a, gfx942", "gfx942")
    _edit(project, "manylinux_2_28-rocm", "debian-sid-rocm")
    _edit(project, "directory: site/index", "directory: elsewhere")  # not named: cannot change the wheel
    [note] = stale_notes(load_recipe(project / "r.yaml"), project / "dist")
    assert note.startswith(f"{wheel} was built from an earlier version of r.yaml: archs, image changed;")
    assert "`buildkit build` makes it again" in note


def test_wheels_of_one_edit_share_a_note_and_other_projects_and_the_quarantine_are_not_read(
    project: Path,
) -> None:
    first = _built(project)
    second = _built(project, folder="cp312-rocm7.2")
    _built(project, name="other")  # another recipe's project in the same folder
    _built(project, folder=".refused/cp313-rocm7.2")  # the gate's quarantine: never published
    _edit(project, 'python: ["3.12", "3.13"]', 'python: ["3.13"]')
    [note] = stale_notes(load_recipe(project / "r.yaml"), project / "dist")
    assert note.startswith(f"{second}, {first} were built from an earlier version of r.yaml: python changed;")


def test_a_key_added_counts_and_an_older_manifest_says_it_names_no_keys(project: Path) -> None:
    _built(project)
    _built(project, folder="cp312-rocm7.2", older=True)
    (project / "r.yaml").write_text(RECIPE + "env: {MAX_JOBS: '2'}\n")
    notes = stale_notes(load_recipe(project / "r.yaml"), project / "dist")
    assert len(notes) == 2
    assert any(": env changed;" in n and "cp313-rocm7.2" in n for n in notes)
    assert any("names no keys" in n and "cp312-rocm7.2" in n for n in notes)


def test_no_output_folder_no_note(project: Path) -> None:
    assert stale_notes(load_recipe(project / "r.yaml"), project / "nowhere") == ()


def _plan(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", "r.yaml", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTORCH_ROCM_ARCH": ""},
        timeout=120,
    )


def test_plan_prints_the_note_once_and_puts_it_in_the_json(project: Path) -> None:
    _built(project)
    _edit(project, "gfx90a, gfx942", "gfx942")
    proc = _plan(project)  # --out dist, the default of build's
    assert proc.returncode == 0, proc.stderr
    wheel = "dist/cp313-rocm7.2/tinyhip-0.1.0-cp313-cp313-manylinux_2_28_x86_64.whl"
    wanted = f"buildkit plan: note: {wheel} was built"
    assert proc.stderr.count(wanted) == 1
    assert "earlier version of r.yaml: archs changed" in proc.stderr
    as_json = _plan(project, "--json", "-q")
    notes = json.loads(as_json.stdout)["notes"]
    assert [n for n in notes if "archs changed" in n] and "archs changed" not in as_json.stderr
    # another --out: nothing built there
    elsewhere = _plan(project, "--out", "build-out")
    assert elsewhere.returncode == 0 and "was built from an earlier" not in elsewhere.stderr
