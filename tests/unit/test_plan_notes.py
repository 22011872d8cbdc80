"""Plan notes (warnings about a plan): dropped archs, ignored arch variables, torch indexes buildkit's
ROCm data does not list for the pinned release, unverified release data; ``--strict`` (exit 5) on
``plan`` and ``build``; the ``rocm-system`` exclude set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit import rocm as rocm_data
from buildkit.building import cibw
from buildkit.errors import ArchError, ArchesDropped, RecipeError
from buildkit.plan.expansion import expand
from buildkit.plan.models import Plan, check_strict
from buildkit.plan.render import render_json, render_table
from buildkit.recipe import parse_recipe

ROOT = Path(__file__).resolve().parents[2]

BASE = """\
name: demo
source: {{path: ../csrc}}
version: {{base: "1.0", local: "rocm{{rocm}}"}}
python: ["3.12"]
rocm: [{rocm}]
archs: {{list: [{archs}]}}
manylinux: {{policy: manylinux_2_28}}
image: manylinux_2_28-rocm
"""
#: excluding the ROCm runtime at repair (without it the plan warns that repair would graft it)
EXCLUDE_ROCM = "repair: {exclude: {sets: [rocm]}}\n"


def _recipe(rocm: str = '"6.4"', archs: str = "gfx90a", extra: str = "") -> str:
    return BASE.format(rocm=rocm, archs=archs) + extra


def _expand(text: str, tmp_path: Path, env: dict[str, str] | None = None, **kwargs: str) -> Plan:
    recipe = parse_recipe(text, path=tmp_path / "r.yaml")
    return expand(recipe, env={} if env is None else env, enumerator=list, **kwargs)  # type: ignore[arg-type]


def _torch(version: str, index_url: str | None = None) -> str:
    url = f", index_url: {index_url}" if index_url else ""
    return f'torch: [{{version: "{version}"{url}}}]\n'


def _no_index_notes(plan: Plan) -> bool:
    return not [n for n in plan.notes if "index_url" in n]


# ---------------------------------------------------------------- torch index against the ROCm data


def test_explicit_index_the_data_lists_for_another_torch_is_noted(tmp_path: Path) -> None:
    """The reviewer's case: ROCm 7.0 + torch 2.9 with index_url whl/rocm7.0, which serves only 2.10."""
    text = _recipe('"7.0"', extra=_torch("2.9", "https://download.pytorch.org/whl/rocm7.0"))
    plan = _expand(text, tmp_path)
    (note,) = [n for n in plan.notes if "index_url" in n]
    assert note.startswith(
        "torch[0] 2.9 on ROCm 7.0: index_url https://download.pytorch.org/whl/rocm7.0 is, in buildkit's "
        "ROCm data, the index of ROCm 7.0 with torch 2.10, not one serving torch 2.9 for ROCm 7.0; "
    )
    # where torch 2.9 is, per the same data (6.3 and 6.4 list it)
    for release in ("6.3", "6.4"):
        url = rocm_data.get_release(release).torch_index_for("2.9")
        assert url is not None and f"{release} ({url})" in note
    # in every output format that carries notes
    assert f"\nnote: {note}\n" in render_table(plan)
    assert note in json.loads(render_json(plan))["notes"]


def test_explicit_index_of_another_release_is_noted(tmp_path: Path) -> None:
    text = _recipe('"7.0"', archs="gfx942", extra=_torch("2.9", "https://download.pytorch.org/whl/rocm6.4/"))
    (note,) = [n for n in _expand(text, tmp_path).notes if "index_url" in n]
    assert "the index of ROCm 6.4 with torch 2.8 and 2.9, not one serving torch 2.9 for ROCm 7.0" in note


@pytest.mark.parametrize(
    ("rocm", "version", "url"),
    [
        ('"6.4"', "2.9", "https://download.pytorch.org/whl/rocm6.4"),  # what the data lists
        ('"6.4"', "2.9.1", "https://download.pytorch.org/whl/rocm6.4/"),  # a patch pin, a trailing slash
        ('"7.0"', "2.9", "https://mirror.example.org/torch-rocm7.0"),  # an index the data does not know
        ('"7.2"', "2.10", "https://download.pytorch.org/whl/rocm7.2"),  # unknown to the data (7.2 row)
    ],
)
def test_index_the_data_agrees_with_or_does_not_know_is_not_noted(
    tmp_path: Path, rocm: str, version: str, url: str
) -> None:
    plan = _expand(_recipe(rocm, archs="gfx942", extra=_torch(version, url)), tmp_path)
    assert plan.jobs[0].torch_index_url == url
    assert _no_index_notes(plan)


def test_readme_pairing_without_index_url_names_the_releases_that_serve_it(tmp_path: Path) -> None:
    """Without index_url, ROCm 7.0 + torch 2.9 is an error whose hint names where torch 2.9 is and
    what 7.0's index serves, not "add index_url .../rocm7.0" (that index has no torch 2.9)."""
    with pytest.raises(RecipeError) as info:
        _expand(_recipe('"7.0"', extra=_torch("2.9")), tmp_path)
    err = info.value
    assert err.detail.endswith("knows no index serving torch 2.9 for ROCm 7.0")
    assert (err.line, err.column) == (9, 9)
    hint = err.hint or ""
    r70 = rocm_data.get_release("7.0")
    assert hint.startswith("torch 2.9 is on the index of ROCm 6.3 (")
    assert "and 6.4 (https://download.pytorch.org/whl/rocm6.4)" in hint
    assert f"ROCm 7.0's index ({r70.torch_index}) serves torch {' and '.join(r70.torch_versions)}" in hint
    assert "add index_url, e.g." not in hint


def test_missing_index_hint_for_a_release_without_a_known_index(tmp_path: Path) -> None:
    with pytest.raises(RecipeError) as info:
        _expand(_recipe('"7.2"', extra=_torch("2.10")), tmp_path)
    hint = info.value.hint or ""
    assert "torch 2.10 is on the index of ROCm 7.0 (https://download.pytorch.org/whl/rocm7.0) and 7.1" in hint
    assert "buildkit's ROCm data knows no download.pytorch.org index for ROCm 7.2" in hint


def test_torch_no_index_serves_at_all(tmp_path: Path) -> None:
    with pytest.raises(RecipeError) as info:
        _expand(_recipe(extra=_torch("1.12")), tmp_path)
    assert (info.value.hint or "").startswith(
        "no download.pytorch.org index in buildkit's ROCm data serves torch 1.12"
    )


# ---------------------------------------------------------------- unverified release data


def test_unverified_release_data_is_noted(tmp_path: Path) -> None:
    release = rocm_data.get_release("7.2")
    assert release.unverified  # the data marks 7.2 unverified (arch list, torch index)
    plan = _expand(_recipe('"7.2"', archs="gfx942", extra=EXCLUDE_ROCM), tmp_path)
    assert plan.notes == tuple(
        f"ROCm 7.2: buildkit's data for this release is marked unverified: {text}"
        for text in release.unverified
    )
    assert _expand(_recipe('"6.4"', extra=EXCLUDE_ROCM), tmp_path).notes == ()  # 6.4 has no unverified row


def test_unverified_release_data_not_used_is_not_noted(tmp_path: Path) -> None:
    """ROCm 5.7 is marked unverified (its official list), but a toolchain recipe without torch uses
    the toolchain's arch list, not the release's data."""
    assert rocm_data.get_release("5.7").unverified
    # ROCm 5.7 is built by debian-rocm (the install data of manylinux_2_28-rocm starts at 6.4)
    text = (
        _recipe('"5.7"', extra=EXCLUDE_ROCM)
        .replace("{list: [gfx90a]}", "{list: [gfx90a], toolchain: debian-trixie}")
        .replace("image: manylinux_2_28-rocm", "image: debian-rocm")
    )
    assert _expand(text, tmp_path).notes == ()
    amd_57 = _recipe('"5.7"').replace("image: manylinux_2_28-rocm", "image: debian-rocm")
    assert _expand(amd_57, tmp_path).notes != ()  # without the toolchain: AMD's 5.7 list


# ---------------------------------------------------------------- dropped archs, --strict


# the list and, after "], ", more keys of the archs mapping
ALLOW_942 = "gfx942, gfx1100], allow: [gfx942"
ALLOW_DROP = "ROCm 7.0: gfx1100: dropped: not in the recipe's allow-list (gfx942)"


@pytest.mark.parametrize(
    ("rocm", "archs", "drop"),
    [
        ('"6.4"', "gfx942, gfx950", "ROCm 6.4: gfx950: dropped: needs ROCm >= 7.0, pinned 6.4"),
        ('"7.0"', ALLOW_942, ALLOW_DROP),
    ],
)
def test_every_drop_is_a_note_and_fails_strict(tmp_path: Path, rocm: str, archs: str, drop: str) -> None:
    plan = _expand(_recipe(rocm, archs=archs), tmp_path)
    assert drop in plan.notes
    assert drop in json.loads(render_json(plan))["notes"]
    assert f"\nnote: {drop}\n" in render_table(plan)
    with pytest.raises(ArchesDropped) as info:
        check_strict(plan)
    assert info.value.exit_code == 5
    assert str(info.value) == f"--strict: 1 requested arch dropped: {drop}"


def test_strict_passes_without_drops_and_looks_only_at_the_jobs_asked(tmp_path: Path) -> None:
    plan = _expand(_recipe('"6.4", "7.0"', archs="gfx942, gfx950"), tmp_path)
    assert [(r, d.arch) for r, d in plan.dropped_archs()] == [("6.4", "gfx950")]
    check_strict(plan, ["cp312-rocm7.0"])  # the 7.0 job keeps both
    with pytest.raises(ArchesDropped):
        check_strict(plan, ["cp312-rocm6.4"])
    check_strict(_expand(_recipe('"7.0"', archs="gfx942, gfx950"), tmp_path))


def test_unknown_processor_from_the_command_line_is_an_arch_error(tmp_path: Path) -> None:
    with pytest.raises(ArchError) as info:
        _expand(_recipe('"7.0"'), tmp_path, cli_archs="gfx942;gfx905")
    assert info.value.exit_code == 4
    assert "gfx905 is not an AMDGPU processor; did you mean gfx950, gfx90a or gfx908?" in str(info.value)
    assert "(from --archs)" in str(info.value)


# ---------------------------------------------------------------- arch variables a recipe overrides


def test_recipe_list_overriding_arch_variables_is_noted(tmp_path: Path) -> None:
    env = {"PYTORCH_ROCM_ARCH": "gfx942", "GPU_ARCHS": "gfx90a"}
    plan = _expand(_recipe('"7.0"', archs="gfx90a", extra=EXCLUDE_ROCM), tmp_path, env=env)
    assert plan.notes == (
        "PYTORCH_ROCM_ARCH=gfx942: set but ignored (the recipe's archs.list takes precedence: gfx90a)",
    )
    # the job's build environment carries the resolved list in both variables
    assert plan.jobs[0].env["GPU_ARCHS"] == plan.jobs[0].env["PYTORCH_ROCM_ARCH"] == "gfx90a"


def test_one_note_per_variable_for_many_releases(tmp_path: Path) -> None:
    env = {"GPU_ARCHS": "gfx1100"}
    plan = _expand(_recipe('"6.4", "7.0"', archs="gfx942"), tmp_path, env=env)
    assert [n for n in plan.notes if n.startswith("GPU_ARCHS=")] == [
        "GPU_ARCHS=gfx1100: set but ignored (the recipe's archs.list takes precedence: gfx942)"
    ]


# ---------------------------------------------------------------- the rocm-system exclude set


def test_rocm_system_set_expands_into_the_repair_command(tmp_path: Path) -> None:
    text = _recipe(extra="repair: {exclude: {sets: [rocm, rocm-system]}}\n")
    (job,) = _expand(text, tmp_path).jobs
    system = rocm_data.exclude_globs(["rocm-system"], "6.4")
    assert system and "libnuma.so*" in system
    assert set(system) <= set(job.exclude_globs)
    assert set(rocm_data.exclude_globs(["rocm"], "6.4")) <= set(job.exclude_globs)
    repair = cibw.repair_command(job)
    for glob in system:
        assert glob in repair
    # without the set, none of the OS libraries is excluded
    (plain,) = _expand(_recipe(extra="repair: {exclude: {sets: [rocm]}}\n"), tmp_path).jobs
    assert not set(system) & set(plain.exclude_globs)


# ---------------------------------------------------------------- the commands


def _real_source(text: str) -> str:
    """``text`` with its source the real csrc/: ``buildkit plan`` reads the source's version rule."""
    return text.replace("{path: ../csrc}", f"{{path: {ROOT / 'csrc'}}}")


def _run(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_ROCM_ARCH", "GPU_ARCHS")}
    base["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), base.get("PYTHONPATH", "")) if p)
    base.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args],
        capture_output=True,
        text=True,
        env=base,
        cwd=cwd,
        check=False,
    )


@pytest.mark.parametrize("fmt", ["table", "json", "github"])
def test_plan_prints_drops_on_stderr_and_strict_exits_5(tmp_path: Path, fmt: str) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(_real_source(_recipe('"7.0"', archs=ALLOW_942)))
    drop = ALLOW_DROP
    out = _run("plan", str(recipe), "--format", fmt)
    assert out.returncode == 0, out.stderr
    assert f"buildkit plan: note: {drop}\n" in out.stderr
    strict = _run("plan", str(recipe), "--format", fmt, "--strict")
    assert strict.returncode == 5
    assert strict.stdout == out.stdout  # the plan is printed first
    assert f"--strict: 1 requested arch dropped: {drop}" in strict.stderr
    assert "Traceback" not in strict.stderr
    if fmt == "json":
        assert drop in json.loads(out.stdout)["notes"]


def test_plan_strict_without_drops_exits_0(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(_real_source(_recipe('"7.0"', archs="gfx942, gfx950", extra=EXCLUDE_ROCM)))
    out = _run("plan", str(recipe), "--strict", "--format", "github")
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert json.loads(out.stdout)["job_count"] == 1


def test_plan_unknown_processor_in_the_recipe_is_positioned(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(_real_source(_recipe('"7.0"', archs="gfx942, gfx905")))
    out = _run("plan", str(recipe))
    assert out.returncode == 3
    assert f"{recipe}:6:24: error: archs.list[1]: gfx905 is not an AMDGPU processor" in out.stderr
    assert "hint: did you mean gfx950, gfx90a or gfx908?" in out.stderr


def test_plan_unknown_processor_in_the_environment_exits_4(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(_real_source(_recipe('"7.0"').replace("{list: [gfx90a]}", "{from: env}")))
    out = _run("plan", str(recipe), env={"PYTORCH_ROCM_ARCH": "gfx942;gfx905"})
    assert out.returncode == 4
    assert "invalid GPU arch 'gfx905'" in out.stderr and "did you mean gfx950" in out.stderr
    assert "(from PYTORCH_ROCM_ARCH)" in out.stderr


def test_build_strict_exits_5_before_building(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(_real_source(_recipe('"6.4"', archs="gfx942, gfx950")))
    out_dir, logs = tmp_path / "dist", tmp_path / "logs"
    # no Docker engine answers at this socket: reaching the build would be exit 8, not 5
    env = {"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    args = ("build", str(recipe), "--out", str(out_dir), "--log-dir", str(logs))
    proc = _run(*args, "--strict", env=env)
    assert proc.returncode == 5, proc.stderr
    assert "--strict: 1 requested arch dropped: ROCm 6.4: gfx950: dropped: needs ROCm >= 7.0, pinned 6.4" in (
        proc.stderr
    )
    assert not out_dir.exists() and not logs.exists()
    plain = _run(*args, env=env)
    assert plain.returncode != 5  # without --strict the drop does not stop the build...
    # ...but is never silent
    assert "buildkit build: note: ROCm 6.4: gfx950: dropped: needs ROCm >= 7.0, pinned 6.4" in plain.stderr


def test_shipped_aiter_recipe_plan_notes() -> None:
    """recipes/aiter.yaml pairs torch with the ROCm releases buildkit's data lists for it."""
    out = _run("plan", "recipes/aiter.yaml", "--format", "json")
    assert out.returncode == 0, out.stderr
    notes = json.loads(out.stdout)["notes"]
    assert not [n for n in notes if "index_url" in n]
    assert "ROCm 6.4: gfx950: dropped: needs ROCm >= 7.0, pinned 6.4" in notes
    assert all(f"buildkit plan: note: {n}" in out.stderr for n in notes)
    assert _run("plan", "recipes/aiter.yaml", "--strict").returncode == 5
    github = json.loads(_run("plan", "recipes/aiter.yaml", "--format", "github").stdout)
    assert github["job_count"] == 8


def _on_a_terminal(args: list[str], cwd: Path) -> str:
    """What a person sees: stdout and stderr on one terminal (a pseudo-terminal)."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "buildkit", *args],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "NO_COLOR": "1"},
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the follower side closed
            break
        if not chunk:
            break
        seen += chunk
    proc.wait(timeout=120)
    os.close(leader)
    return seen.decode()


def test_a_note_is_shown_once_on_a_terminal(tmp_path: Path) -> None:
    """Issue 36: `plan` printed every note twice on a terminal, in the table and on stderr."""
    (tmp_path / "setup.py").write_text("")
    recipe = _recipe(rocm='"7.2"', extra=EXCLUDE_ROCM).replace("../csrc", ".")
    (tmp_path / "r.yaml").write_text(recipe)  # ROCm 7.2's data is marked unverified: a note
    shown = _on_a_terminal(["plan", "r.yaml"], tmp_path)
    assert shown.count("marked unverified") == 1, shown
    # into a pipe the table keeps it and stderr says it too: a person sees it once (on stderr)
    piped = subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", "r.yaml", "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        check=False,
    )
    assert piped.stderr.count("marked unverified") == 1 and "marked unverified" in piped.stdout
