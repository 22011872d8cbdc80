"""``buildkit init``, ``buildkit schema``, ``buildkit rules`` and the plan's notes about a project's own
``[tool.cibuildwheel]`` (issue 27): a recipe for an existing project in one command, the reference texts
from the installed package, no help text pointing at a file only the repository has."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import click
import pytest
import yaml

from buildkit import builders
from buildkit.cli import COMMANDS, cli, main
from buildkit.cli import init as init_cli
from buildkit.plan.expansion import expand
from buildkit.plan.source_version import check_source_version
from buildkit.profiles import PROFILES, builder_names
from buildkit.recipe import load_recipe
from tests.helpers.wheels_for_publish import job_wheel

ROOT = Path(__file__).resolve().parents[2]
REGEN = os.environ.get("BUILDKIT_REGEN_GOLDEN") == "1"

PYPROJECT = """\
[build-system]
requires = ["scikit-build-core>=0.10"]
build-backend = "scikit_build_core.build"

[project]
name = "my-hip-ext"
version = "0.3.1"
requires-python = ">=3.10"

[tool.cibuildwheel]
build = "cp311-* cp312-*"
before-all = "yum install -y rocblas-devel"
test-command = "python -c 'import my_hip_ext'"
test-requires = ["pytest"]
environment = { MAX_JOBS = "4", LDFLAGS = "$LDFLAGS -Wl,--as-needed" }
config-settings = { "cmake.build-type" = "Release" }
repair-wheel-command = "auditwheel repair -w {dest_dir} {wheel}"

[tool.cibuildwheel.linux]
before-build = "pip install ninja"
"""

SCM = """\
[build-system]
requires = ["setuptools>=64", "setuptools-scm>=8"]
build-backend = "setuptools.build_meta"

[project]
name = "scm-ext"
dynamic = ["version"]

[tool.setuptools_scm]
"""


@pytest.fixture(autouse=True)
def _every_builder_buildable(monkeypatch: pytest.MonkeyPatch) -> None:
    """init without --image probes the Docker engine and the registries (buildkit/builders.py):
    the unit tier has neither, so in-process runs see a machine that builds every candidate (the default
    stays manylinux_2_28-rocm); tests/unit/test_init_builder.py tests the choice itself."""
    everything = builders.Machine(
        None, frozenset(), frozenset({"quay.io", "repo.radeon.com", "deb.debian.org"})
    )
    monkeypatch.setattr(builders, "probe", lambda candidates, timeout=0: everything)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    if args[0] == "init" and "--image" not in args:  # no probe of an engine and registries in the unit tier
        args = (*args, "--image", "manylinux_2_28-rocm")
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        stdin=subprocess.DEVNULL,  # not a terminal: init asks nothing
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTORCH_ROCM_ARCH": ""},
        timeout=120,
    )


def _project(tmp_path: Path, pyproject: str = PYPROJECT) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text(pyproject)
    (project / "CMakeLists.txt").write_text("project(x LANGUAGES CXX HIP)\n")
    return project


# --------------------------------------------------------------------------- init
def test_init_translates_the_cibuildwheel_table_and_names_the_rest(tmp_path: Path) -> None:
    project = _project(tmp_path)
    proc = _cli("init", "proj", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    recipe_path = project / "rocm-buildkit.yaml"
    assert proc.stdout == f"{Path('proj') / 'rocm-buildkit.yaml'}\n"
    data = yaml.safe_load(recipe_path.read_text())
    assert data["name"] == "my-hip-ext" and data["source"] == {"path": "."}
    assert data["version"] == {"base": "0.3.1"}  # fixed in pyproject.toml: no local label fits
    assert data["python"] == ["3.11", "3.12"]  # cibuildwheel's build selectors
    assert data["before_all"] == ["yum install -y rocblas-devel"]
    assert data["before_build"] == ["pip install ninja"]  # the linux table
    assert data["test_command"] == ["python -c 'import my_hip_ext'"]
    assert data["test_requires"] == ["pytest"]
    assert data["env"] == {"MAX_JOBS": "4"}  # LDFLAGS expands $LDFLAGS: not literal
    assert data["config_settings"] == {"cmake.build-type": "Release"}
    assert data["repair"] == {"exclude": {"sets": ["rocm"]}}
    text = recipe_path.read_text()
    assert "#   environment LDFLAGS=$LDFLAGS -Wl,--as-needed (expands a variable" in text
    assert "#   repair-wheel-command (rocm-buildkit runs auditwheel repair itself" in text
    assert "export: [cmake.define.GPU_TARGETS]" in text  # a CMake project: how the archs reach it
    assert "buildkit init: not translated from [tool.cibuildwheel]: repair-wheel-command" in proc.stderr
    # what it wrote plans as it is
    plan = _cli("plan", str(recipe_path), "--json", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert [j["id"] for j in json.loads(plan.stdout)["jobs"]] == ["cp311-rocm7.2", "cp312-rocm7.2"]


def test_init_refuses_to_replace_a_recipe_without_force(tmp_path: Path) -> None:
    _project(tmp_path)
    assert _cli("init", "proj", cwd=tmp_path).returncode == 0
    again = _cli("init", "proj", cwd=tmp_path)
    assert again.returncode == 2
    assert "exists: give another --output, or --force to replace it" in again.stderr
    assert _cli("init", "proj", "--force", "--rocm", "6.4,7.2", cwd=tmp_path).returncode == 0


def test_a_version_from_the_build_gets_a_local_label_per_release(tmp_path: Path) -> None:
    _project(tmp_path, SCM)
    proc = _cli("init", "proj", "--rocm", "6.4,7.2", "-o", "scm.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = yaml.safe_load((tmp_path / "scm.yaml").read_text())
    assert data["source"] == {"path": "proj"}
    assert data["version"]["local"] == "rocm{rocm}" and data["rocm"] == ["6.4", "7.2"]
    plan = _cli("plan", "scm.yaml", "--json", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    versions = {j["version"] for j in json.loads(plan.stdout)["jobs"]}
    assert versions == {"0.0.0+rocm6.4", "0.0.0+rocm7.2"}


def test_init_asks_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path)
    monkeypatch.setattr(init_cli, "_interactive", lambda: True)
    monkeypatch.setattr("sys.stdin", io.StringIO("6.4\ngfx942\n"))
    main(["init", str(tmp_path / "proj")])
    err = capsys.readouterr().err
    assert "ROCm releases [7.2]:" in err and "GPU archs [gfx90a,gfx942]:" in err
    data = yaml.safe_load((tmp_path / "proj" / "rocm-buildkit.yaml").read_text())
    assert data["rocm"] == ["6.4"] and data["archs"]["list"] == ["gfx942"]


def test_init_without_a_project_is_a_usage_error(tmp_path: Path) -> None:
    proc = _cli("init", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert "no pyproject.toml or setup.py here" in proc.stderr


# --------------------------------------------------------------------------- plan notes
def test_plan_notes_each_cibuildwheel_setting_the_recipe_overrides(tmp_path: Path) -> None:
    project = _project(tmp_path)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        "name: my-hip-ext\nsource: {path: proj}\nversion: {base: '0.3.1'}\npython: ['3.12']\nrocm: ['6.4']\n"
        "archs: {list: [gfx90a]}\nmanylinux: {policy: manylinux_2_28}\nrepair: {exclude: {sets: [rocm]}}\n"
        "image: manylinux_2_28-rocm\ntest_command: pytest\n"
    )
    plan = check_source_version(expand(load_recipe(recipe), env={}), project)
    notes = [n for n in plan.notes if "[tool.cibuildwheel" in n]
    assert (
        "the project's [tool.cibuildwheel] test-command is not used: the recipe's test_command replaces it"
        in notes
    )
    assert (
        "the project's [tool.cibuildwheel] before-all is not used: the recipe has no before_all (run once in "
        "the build container (system packages: image.packages)); add it there"
    ) in notes
    assert (
        "the project's [tool.cibuildwheel.linux] before-build is not used: the recipe has no before_build"
        in "\n".join(notes)
    )
    assert len(notes) == 8
    shutil.rmtree(project)
    _project(tmp_path, SCM)
    assert not [
        n
        for n in check_source_version(expand(load_recipe(recipe), env={}), project).notes
        if "cibuildwheel" in n
    ]


# --------------------------------------------------------------------------- schema, rules, help texts
def test_schema_prints_the_shipped_schemas(tmp_path: Path) -> None:
    proc = _cli("schema", cwd=tmp_path)
    assert proc.returncode == 0
    shipped = resources.files("buildkit").joinpath("schema/recipe.schema.json").read_text()
    assert proc.stdout == shipped and json.loads(proc.stdout)["title"] == "rocm-buildkit recipe"
    assert json.loads(_cli("schema", "check-report", cwd=tmp_path).stdout)["title"] == "buildkit check --json"
    names = _cli("schema", "--list", cwd=tmp_path).stdout.split()
    assert {"recipe", "check-report", "image-ls", "publish", "verify", "error"} <= set(names)
    wrong = _cli("schema", "recipes", cwd=tmp_path)
    assert wrong.returncode == 2 and "no schema 'recipes'; known:" in wrong.stderr


def test_rules_prints_the_shipped_text_kept_equal_to_the_docs(tmp_path: Path) -> None:
    docs = (ROOT / "docs" / "GATE-RULES.md").read_text(encoding="utf-8")
    shipped = ROOT / "buildkit" / "gate" / "GATE-RULES.md"
    if REGEN:
        shipped.write_text(docs, encoding="utf-8")
    assert shipped.read_text(encoding="utf-8") == docs, "regenerate with BUILDKIT_REGEN_GOLDEN=1"
    proc = _cli("rules", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == docs
    one = _cli("rules", "ceiling", cwd=tmp_path)
    assert one.stdout.startswith("ceiling (error)\nchecks: No host ELF requires a numeric symbol version")
    wrong = _cli("rules", "celing", cwd=tmp_path)
    assert wrong.returncode == 2 and "no gate rule 'celing'; did you mean ceiling?" in wrong.stderr


def _helps(command: click.Command, ctx: click.Context) -> list[tuple[str, str]]:
    out = [(ctx.command_path, command.get_help(ctx))]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            out += _helps(sub, click.Context(sub, info_name=name, parent=ctx))
    return out


def test_no_help_text_points_at_a_repository_file() -> None:
    helps = _helps(cli, click.Context(cli, info_name="buildkit"))
    assert {path.split()[1] for path, _ in helps if len(path.split()) > 1} >= set(COMMANDS)
    for path, text in helps:
        flat = " ".join(text.split())
        for repo_only in ("docs/", "bench/", "buildkit/rocm/", "buildkit/schema/", ".md"):
            assert repo_only not in flat, f"{path} --help mentions {repo_only}: {flat}"


@pytest.mark.parametrize("image", builder_names())
def test_init_writes_a_smoke_entry_and_a_publish_section_that_plan(tmp_path: Path, image: str) -> None:
    """Issue 36: a recipe from init had neither, so the quick start's `publish --recipe` ended in `has no
    publish section: pass --to`; on debian-sid-rocm init wrote manylinux_2_43, unknown to auditwheel."""
    _project(tmp_path, SCM)
    proc = _cli("init", "proj", "--image", image, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    recipe = load_recipe(tmp_path / "proj" / "rocm-buildkit.yaml")
    assert recipe.publish is not None and recipe.publish.kind == "directory"
    (smoke,) = recipe.smoke
    runtime = PROFILES[smoke.image.removeprefix("rocm-buildkit/")]
    assert runtime.role == "runtime" and smoke.imports == ("scm_ext",)
    assert set(recipe.rocm) <= set(runtime.rocm_releases or recipe.rocm)
    assert set(recipe.python) <= set(runtime.pythons or recipe.python)  # each wheel can be smoke-tested
    sysroots = PROFILES[image].sysroots
    if recipe.manylinux.sysroot is not None:
        assert recipe.manylinux.policy == sysroots[recipe.manylinux.sysroot].policy
    plan = _cli("plan", str(tmp_path / "proj" / "rocm-buildkit.yaml"), cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr


def test_publish_dry_run_works_on_inits_recipe(tmp_path: Path) -> None:
    project = _project(tmp_path, SCM)
    assert _cli("init", ".", "--image", "debian-sid-rocm", cwd=project).returncode == 0
    recipe = project / "rocm-buildkit.yaml"
    assert "sysroot: glibc2.28" in recipe.read_text()  # the image's oldest sysroot: manylinux_2_28
    wheel = job_wheel(project / "dist", recipe, expand(load_recipe(recipe)).jobs[0].id)
    dry = _cli("publish", "dist", "--recipe", "rocm-buildkit.yaml", "--dry-run", cwd=project)
    assert dry.returncode == 0, dry.stderr
    real = _cli("publish", "dist", "--recipe", "rocm-buildkit.yaml", cwd=project)
    assert real.returncode == 0, real.stderr
    assert (project / "site" / "index" / "simple" / "scm-ext" / wheel.name).is_file()


# ----------------------------------------------------------------- init checks its choices (issue 36)
def test_init_checks_the_rocm_releases_and_archs_naming_the_flag(tmp_path: Path) -> None:
    """`init --rocm 7.9` wrote a recipe plan refused; `init --archs gfx9420` named rocm-buildkit.yaml:10:10,
    a file it never wrote."""
    project = _project(tmp_path)
    rocm = _cli("init", "proj", "--rocm", "7.9", cwd=tmp_path)
    assert rocm.returncode == 2
    assert rocm.stderr.startswith("--rocm 7.9: no data for ROCm 7.9 (known releases: ")
    archs = _cli("init", "proj", "--archs", "gfx90a,gfx9420", cwd=tmp_path)
    assert archs.returncode == 2
    assert archs.stderr.startswith("--archs: invalid GPU arch 'gfx9420': gfx9420 is not an AMDGPU processor")
    assert "rocm-buildkit.yaml" not in archs.stderr
    provided = _cli("init", "proj", "--image", "debian-sid-rocm", "--rocm", "5.7", cwd=tmp_path)
    assert (
        provided.returncode == 2
        and "--rocm 5.7: image debian-sid-rocm provides ROCm 6.4, 7.2" in provided.stderr
    )
    assert not (project / "rocm-buildkit.yaml").exists()


def test_a_fixed_version_gets_one_release_and_a_comment_why(tmp_path: Path) -> None:
    """Two releases of a project that fixes its version made two wheels of one file name: plan refused the
    recipe, and its two hints sent the user in a circle."""
    project = _project(tmp_path)  # version = "0.3.1" in pyproject.toml
    proc = _cli("init", "proj", "--rocm", "6.4,7.2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ROCm 7.2 only: the project fixes its version (pyproject.toml:" in proc.stderr
    text = (project / "rocm-buildkit.yaml").read_text()
    assert yaml.safe_load(text)["rocm"] == ["7.2"] and "# ROCm 7.2 only:" in text
    assert _cli("plan", str(project / "rocm-buildkit.yaml"), cwd=tmp_path).returncode == 0


def test_init_refuses_an_existing_file_before_asking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path)
    (project / "rocm-buildkit.yaml").write_text("mine\n")
    monkeypatch.setattr(init_cli, "_interactive", lambda: True)
    monkeypatch.setattr("sys.stdin", io.StringIO("6.4\ngfx942\n"))
    with pytest.raises(SystemExit) as exit_info:
        main(["init", str(project)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "exists: give another --output, or --force" in err and "ROCm releases" not in err
    assert (project / "rocm-buildkit.yaml").read_text() == "mine\n"


def test_a_bad_answer_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path)
    monkeypatch.setattr(init_cli, "_interactive", lambda: True)
    monkeypatch.setattr("sys.stdin", io.StringIO("7.9\n6.4\ngfx9420\ngfx942\n"))
    main(["init", str(tmp_path / "proj")])
    err = capsys.readouterr().err
    assert "Error: ROCm releases 7.9: no data for ROCm 7.9" in err
    assert "Error: GPU archs: invalid GPU arch 'gfx9420'" in err
    data = yaml.safe_load((tmp_path / "proj" / "rocm-buildkit.yaml").read_text())
    assert data["rocm"] == ["6.4"] and data["archs"]["list"] == ["gfx942"]


def test_init_warns_when_a_translated_hook_downloads(tmp_path: Path) -> None:
    """A before-all that downloads with curl became a hook of a build without network, silently."""
    fetching = PYPROJECT.replace(
        'before-all = "yum install -y rocblas-devel"',
        'before-all = "curl -L https://x.invalid/a.tgz | tar xz"',
    )
    project = _project(tmp_path, fetching)
    proc = _cli("init", "proj", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "buildkit init: warning: 'curl -L https://x.invalid/a.tgz | tar xz' downloads" in proc.stderr
    assert (
        "# before_all downloads: the build container has no network"
        in (project / "rocm-buildkit.yaml").read_text()
    )
