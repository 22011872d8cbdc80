"""Plan-time refusal of what cannot build (issue 27): a ROCm release, Python or policy the recipe's image
profile does not provide, two jobs making one wheel file name, an arch variable set by hand where a build
reads it (config_settings, CMAKE_ARGS, hooks); a warning for a recipe that excludes nothing at repair;
``archs.export`` reaching CMake (``cmake.define.X`` config settings, ``-DX`` in CMAKE_ARGS).

What a profile provides is what docker/profiles.toml declares; a fact it does not declare is unknown and
refuses nothing. Profiles declaring ``pythons``/``glibc``/``sysroots`` are stood in for with a subclass
of :class:`buildkit.profiles.Profile`, so the tests do not depend on which profiles this tree ships."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from buildkit import profiles
from buildkit.errors import RecipeError
from buildkit.plan.expansion import expand
from buildkit.recipe import parse_recipe

ROOT = Path(__file__).resolve().parents[2]


def _text(**keys: str) -> str:
    base = {
        "name": "demo",
        "source": "{path: .}",
        "version": '{base: "1.0", local: "rocm{rocm}"}',
        "python": '["3.12"]',
        "rocm": '["6.4"]',
        "archs": "{list: [gfx90a, gfx942]}",
        "manylinux": "{policy: manylinux_2_28}",
        "repair": "{exclude: {sets: [rocm]}}",
        "image": "manylinux_2_28-rocm",
    }
    base.update(keys)
    return "".join(f"{k}: {v}\n" for k, v in base.items() if v)


def _plan(tmp_path: Path, **keys: str) -> Any:
    (tmp_path / "setup.py").write_text("")
    recipe = parse_recipe(_text(**keys), path=tmp_path / "r.yaml")
    return expand(recipe, env={})


def _problems(tmp_path: Path, **keys: str) -> list[tuple[int | None, str, str | None]]:
    with pytest.raises(RecipeError) as info:
        _plan(tmp_path, **keys)
    return [(p.line, p.detail, p.hint) for p in info.value.problems]


@dataclass(frozen=True)
class _Sysroot:
    glibc: str


@dataclass(frozen=True)
class _Declared(profiles.Profile):
    pythons: tuple[str, ...] | None = None
    glibc: str | None = None
    sysroots: Mapping[str, Any] = field(default_factory=dict)


@pytest.fixture
def declared(monkeypatch: pytest.MonkeyPatch) -> None:
    """debian-rocm as a sid-like builder (ROCm 6.4/7.2, CPython 3.13-3.15, glibc 2.43 with a glibc 2.31
    sysroot); manylinux_2_28-rocm declaring glibc 2.28 and no sysroot (the install data's releases)."""
    made = {
        "debian-rocm": _Declared(
            name="debian-rocm",
            dockerfile="x.Dockerfile",
            rocm_releases=("6.4", "7.2"),
            pythons=("3.13", "3.14", "3.15"),
            glibc="2.43",
            sysroots={"glibc2.31": _Sysroot("2.31")},
        ),
        "manylinux_2_28-rocm": _Declared(
            name="manylinux_2_28-rocm", dockerfile="y.Dockerfile", rocm_build_arg="ROCM_VERSION", glibc="2.28"
        ),
    }
    real = profiles.get_profile
    monkeypatch.setattr(profiles, "get_profile", lambda name: made[name] if name in made else real(name))
    monkeypatch.setattr(profiles, "PROFILES", {**dict(profiles.PROFILES), **made})


# --------------------------------------------------------------------------- the image's releases
def test_a_rocm_release_the_profile_does_not_provide(tmp_path: Path) -> None:
    got = _problems(
        tmp_path, rocm='["7.1"]', python='["3.13"]', manylinux="{policy: manylinux_2_41}", image="debian-rocm"
    )
    assert got == [
        (5, "rocm[0]: image debian-rocm provides ROCm 5.7, not 7.1", "image manylinux_2_28-rocm provides it")
    ]


def test_a_release_the_install_data_does_not_cover(tmp_path: Path) -> None:
    got = _problems(tmp_path, rocm='["5.2", "6.4"]')
    assert len(got) == 1
    line, detail, hint = got[0]
    assert line == 5 and detail.startswith("rocm[0]: image manylinux_2_28-rocm provides ROCm 6.4, ")
    assert detail.endswith(", not 5.2") and hint == "image debian-bookworm-rocm provides it"


def test_the_cli_refuses_at_plan_with_exit_3(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        _text(rocm='["7.1"]', python='["3.12"]', manylinux="{policy: manylinux_2_41}", image="debian-rocm")
    )
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", str(recipe)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTORCH_ROCM_ARCH": ""},
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert f"{recipe}:5:8: error: rocm[0]: image debian-rocm provides ROCm 5.7, not 7.1" in proc.stderr
    assert proc.stdout == ""


# --------------------------------------------------------------------------- pythons and policy
def test_a_python_the_profile_does_not_provide(tmp_path: Path, declared: None) -> None:
    got = _problems(
        tmp_path,
        python='["3.12", "3.13"]',
        manylinux="{policy: manylinux_2_31, sysroot: glibc2.31}",
        image="debian-rocm",
    )
    assert got == [
        (
            4,
            "python[0]: image debian-rocm provides CPython 3.13, 3.14, 3.15, not 3.12",
            "build for 3.13, 3.14, 3.15, or give an image that provides 3.12",
        )
    ]


def test_an_undeclared_python_list_refuses_nothing(tmp_path: Path) -> None:
    # manylinux_2_28-rocm declares no pythons in this tree's profiles.toml, or declares 3.12
    declared = getattr(profiles.get_profile("manylinux_2_28-rocm"), "pythons", None)
    assert declared is None or "3.12" in declared
    assert [j.id for j in _plan(tmp_path).jobs] == ["cp312-rocm6.4"]


def test_a_policy_older_than_the_images_glibc(tmp_path: Path, declared: None) -> None:
    got = _problems(tmp_path, manylinux="{policy: manylinux_2_17}", image="manylinux_2_28-rocm")
    assert got == [
        (
            7,
            "manylinux.policy: image manylinux_2_28-rocm builds against glibc 2.28; a manylinux_2_17 wheel "
            "needs glibc 2.17 at most, and auditwheel repair cannot lower it",
            "choose the policy manylinux_2_28, or build on an image whose glibc is 2.17 or older",
        )
    ]
    assert _plan(tmp_path, manylinux="{policy: manylinux_2_28}", image="manylinux_2_28-rocm").jobs


def test_a_sysroot_old_enough_allows_the_policy(tmp_path: Path, declared: None) -> None:
    """A sysroot applies when the recipe selects it (manylinux.sysroot): then the policy is judged
    against the sysroot's glibc; without it, the refusal names the sysroot that would fit."""
    ok = _plan(
        tmp_path,
        python='["3.13"]',
        manylinux="{policy: manylinux_2_31, sysroot: glibc2.31}",
        image="debian-rocm",
    )
    assert [j.policy for j in ok.jobs] == ["manylinux_2_31"]
    got = _problems(tmp_path, python='["3.13"]', manylinux="{policy: manylinux_2_31}", image="debian-rocm")
    assert [(d, h.split(" (")[0]) for _, d, h in got] == [
        (
            "manylinux.policy: image debian-rocm builds against glibc 2.43; a manylinux_2_31 wheel needs "
            "glibc 2.31 at most, and auditwheel repair cannot lower it",
            "set manylinux.sysroot: glibc2.31",
        )
    ]
    got = _problems(
        tmp_path,
        python='["3.13"]',
        manylinux="{policy: manylinux_2_28, sysroot: glibc2.31}",
        image="debian-rocm",
    )
    assert [d for _, d, _ in got] == [
        "manylinux.policy: the sysroot glibc2.31 of image debian-rocm builds against glibc 2.31; a "
        "manylinux_2_28 wheel needs glibc 2.28 at most, and auditwheel repair cannot lower it"
    ]
    assert "the sysroot gives at most its glibc 2.31" in got[0][2]


def test_the_policy_hint_names_the_sysroot_that_fits_never_an_unknown_policy(tmp_path: Path) -> None:
    """Issue 36: debian-sid-rocm (glibc 2.43) for manylinux_2_28 hinted `choose a policy of glibc 2.43 or
    newer (manylinux_2_43)`, a policy auditwheel does not know, and never `manylinux.sysroot: glibc2.31`,
    which fixes it. The real profile, as this tree ships it."""
    sid = profiles.get_profile("debian-sid-rocm")
    assert sid.glibc == "2.43" and sid.sysroots["glibc2.31"].policy == "manylinux_2_31"
    ((_, detail, hint),) = _problems(tmp_path, python='["3.13"]', rocm='["7.2"]', image="debian-sid-rocm")
    assert "builds against glibc 2.43; a manylinux_2_28 wheel needs glibc 2.28 at most" in detail
    # the sysroot closest to the policy that is old enough (glibc2.28; glibc2.31 is too new for 2_28)
    assert hint == "set manylinux.sysroot: glibc2.28 (host code compiled against its older glibc)"
    assert "manylinux_2_43" not in hint  # auditwheel has no such policy
    # the fix the hint gives plans
    fixed = _plan(
        tmp_path,
        python='["3.13"]',
        rocm='["7.2"]',
        image="debian-sid-rocm",
        manylinux="{policy: manylinux_2_28, sysroot: glibc2.28}",
    )
    assert [j.policy for j in fixed.jobs] == ["manylinux_2_28"]


def test_every_recipe_mistake_in_one_plan_run(tmp_path: Path) -> None:
    """Issue 36: `locl:`, `gfx9420`, ROCm "6.9" and Python "3.10" on debian-sid-rocm took three plan runs
    (schema errors first, then the ROCm release, then the image's Pythons and policy); one run lists all."""
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "r.yaml").write_text(
        _text(
            version='{base: "1.0", locl: "rocm{rocm}"}',
            python='["3.10"]',
            rocm='["6.9"]',
            archs="{list: [gfx9420]}",
            image="debian-sid-rocm",
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", "r.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
        check=False,
    )
    assert proc.returncode == 3
    lines = proc.stderr.splitlines()
    assert lines[-1] == "r.yaml: 6 problems"
    errors = [line.split(": error: ")[1] for line in lines if ": error: " in line]
    assert errors == [
        "unknown key 'locl' in version",
        "python[0]: image debian-sid-rocm provides CPython 3.11, 3.13, 3.14, 3.15, not 3.10",
        "rocm[0]: no data for ROCm 6.9 (known releases: 5.2, 5.7, 6.0, 6.1, 6.2, 6.3, 6.4, 7.0, 7.1, 7.2, "
        "7.14, 10.0)",
        "rocm[0]: image debian-sid-rocm provides ROCm 6.4, 7.2, not 6.9",
        "archs.list[0]: gfx9420 is not an AMDGPU processor",
        "manylinux.policy: image debian-sid-rocm builds against glibc 2.43; a manylinux_2_28 wheel needs "
        "glibc 2.28 at most, and auditwheel repair cannot lower it",
    ]


def test_all_image_problems_at_once(tmp_path: Path, declared: None) -> None:
    got = _problems(
        tmp_path, python='["3.12"]', rocm='["7.1"]', manylinux="{policy: manylinux_2_17}", image="debian-rocm"
    )
    assert [line for line, _, _ in got] == [4, 5, 7]


# --------------------------------------------------------------------------- one wheel file name
def test_two_releases_without_a_local_label_make_one_file(tmp_path: Path) -> None:
    got = _problems(tmp_path, version='{base: "1.0"}', rocm='["6.4", "7.2"]')
    assert got == [
        (
            3,
            "jobs cp312-rocm6.4, cp312-rocm7.2 would make the same wheel file "
            "demo-1.0-cp312-cp312-manylinux_2_28_x86_64.whl: one would replace the other",
            'give each job its own local version label, e.g. version: {local: "rocm{rocm}"}',
        )
    ]


def test_a_fixed_local_label_is_extended(tmp_path: Path) -> None:
    text = '{base: "1.0", local: "manylinux"}'
    (_, detail, hint), *rest = _problems(
        tmp_path, version=text, rocm='["6.4", "7.2"]', python='["3.11", "3.12"]'
    )
    assert len(rest) == 1  # one per file name: cp311 and cp312
    assert "demo-1.0+manylinux-cp311-cp311-manylinux_2_28_x86_64.whl" in detail
    assert hint == 'give each job its own local version label, e.g. version.local: "manylinux.rocm{rocm}"'


def test_distinct_labels_pass(tmp_path: Path) -> None:
    plan = _plan(tmp_path, rocm='["6.4", "7.2"]')
    assert sorted(j.version for j in plan.jobs) == ["1.0+rocm6.4", "1.0+rocm7.2"]


# --------------------------------------------------------------------------- repair.exclude warning
def test_nothing_excluded_is_a_warning(tmp_path: Path) -> None:
    notes = _plan(tmp_path, repair="").notes
    assert any(n.startswith("warning: repair.exclude is empty: auditwheel repair would graft") for n in notes)
    assert not any("repair.exclude" in n for n in _plan(tmp_path).notes)


# --------------------------------------------------------------------------- arch variables reach CMake
def test_archs_export_reaches_cmake(tmp_path: Path) -> None:
    plan = _plan(
        tmp_path,
        archs="{list: [gfx90a, gfx942], export: [cmake.define.GPU_TARGETS, -DAMDGPU_TARGETS]}",
        env='{CMAKE_ARGS: "-DFOO=1"}',
        config_settings='{"cmake.build-type": Release}',
    )
    (job,) = plan.jobs
    assert job.hooks.config_settings == (
        ("cmake.build-type", ("Release",)),
        ("cmake.define.GPU_TARGETS", ("gfx90a;gfx942",)),
    )
    assert job.env["CMAKE_ARGS"] == "-DFOO=1 -DAMDGPU_TARGETS=gfx90a;gfx942"
    assert "cmake.define.GPU_TARGETS" not in job.env and "-DAMDGPU_TARGETS" not in job.env
    # --archs changes them in step
    (narrow,) = expand(plan.recipe, env={}, cli_archs="gfx942").jobs
    assert narrow.hooks.config_settings[-1] == ("cmake.define.GPU_TARGETS", ("gfx942",))
    assert narrow.env["CMAKE_ARGS"] == "-DFOO=1 -DAMDGPU_TARGETS=gfx942"


def test_archs_cli_prints_cmake_exports_in_json_only(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(_text(archs="{list: [gfx90a], export: [cmake.define.GPU_TARGETS, HCC_AMDGPU_TARGET]}"))

    def run(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "buildkit", "archs", "--recipe", str(recipe), *args],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTORCH_ROCM_ARCH": ""},
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert run().splitlines()[2:] == ["export HCC_AMDGPU_TARGET=gfx90a"]
    assert json.loads(run("--json"))["exported"]["cmake.define.GPU_TARGETS"] == "gfx90a"


@pytest.mark.parametrize(
    ("keys", "line", "detail", "hint"),
    [
        (
            {"config_settings": '{"cmake.define.GPU_TARGETS": gfx90a}'},
            10,
            "config_settings.cmake.define.GPU_TARGETS: GPU_TARGETS is an arch variable: set by hand it goes "
            "stale when --archs or PYTORCH_ROCM_ARCH changes the arch list",
            "add archs.export: [cmake.define.GPU_TARGETS]: buildkit passes the resolved list (a config "
            "setting), in step with --archs and PYTORCH_ROCM_ARCH",
        ),
        (
            {"config_settings": '{"cmake.args": "-DCMAKE_HIP_ARCHITECTURES=gfx90a"}'},
            10,
            "config_settings.cmake.args: -DCMAKE_HIP_ARCHITECTURES sets an arch variable by hand; it goes "
            "stale when --archs or PYTORCH_ROCM_ARCH changes the arch list",
            "add archs.export: [-DCMAKE_HIP_ARCHITECTURES]: buildkit passes the resolved list (appended to "
            "CMAKE_ARGS), in step with --archs and PYTORCH_ROCM_ARCH",
        ),
        (
            {"env": '{CMAKE_ARGS: "-DBAR=1 -DAMDGPU_TARGETS:STRING=gfx90a"}'},
            10,
            "env.CMAKE_ARGS: -DAMDGPU_TARGETS sets an arch variable by hand; it goes stale when --archs or "
            "PYTORCH_ROCM_ARCH changes the arch list",
            "add archs.export: [-DAMDGPU_TARGETS]: buildkit passes the resolved list (appended to "
            "CMAKE_ARGS), in step with --archs and PYTORCH_ROCM_ARCH",
        ),
        (
            {"before_build": '["pip install x", "cd x && GPU_TARGETS=gfx90a make"]'},
            10,
            "before_build: sets the arch variable GPU_TARGETS by hand; it goes stale when --archs or "
            "PYTORCH_ROCM_ARCH changes the arch list",
            "remove it and add archs.export: [GPU_TARGETS]: the build environment then has it, the "
            "resolved list",
        ),
        (
            {
                "archs": '{list: [gfx90a], export: {"-DMY_ARCHS": ";"}}',
                "config_settings": '{"cmake.define.MY_ARCHS": gfx90a}',
            },
            10,
            "config_settings.cmake.define.MY_ARCHS: MY_ARCHS is an arch variable: set by hand it goes stale "
            "when --archs or PYTORCH_ROCM_ARCH changes the arch list",
            "add archs.export: [cmake.define.MY_ARCHS]: buildkit passes the resolved list (a config "
            "setting), in step with --archs and PYTORCH_ROCM_ARCH",
        ),
    ],
    ids=["cmake-define", "dash-d-in-setting", "cmake-args", "hook", "exported-name"],
)
def test_an_arch_variable_set_by_hand_is_refused(
    tmp_path: Path, keys: dict[str, str], line: int, detail: str, hint: str
) -> None:
    with pytest.raises(RecipeError) as info:
        parse_recipe(_text(**keys), path=tmp_path / "r.yaml")
    assert [(p.line, p.detail, p.hint) for p in info.value.problems] == [(line, detail, hint)]


def test_other_definitions_and_reads_are_fine(tmp_path: Path) -> None:
    recipe = parse_recipe(
        _text(
            config_settings='{"cmake.define.BUILD_TESTS": "OFF", "cmake.args": "-DFOO=1"}',
            env='{CMAKE_ARGS: "-DBAR=2"}',
            before_build='["echo $GPU_TARGETS $PYTORCH_ROCM_ARCH", "echo GPU_TARGETS=$GPU_TARGETS"]',
        ),
        path=tmp_path / "r.yaml",
    )
    assert recipe.env["CMAKE_ARGS"] == "-DBAR=2"
