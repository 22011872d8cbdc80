"""The ``required-member`` rule: the recipe's ``gate.require`` globs (and ``check --require``) must
each match a wheel member, so a build that skipped its prebuilt kernels and still made a wheel is
refused. The wheel is the reference job's, built with the host's gcc (tests/unit/test_check_cli.py)
and gated through ``buildkit check``."""

from __future__ import annotations

from pathlib import Path

import pytest

from buildkit.errors import RecipeError
from buildkit.gate.config import GateConfig, gate_key
from buildkit.gate.rules import NEVER_WAIVED
from buildkit.recipe import load_recipe
from tests.unit.test_check_cli import REF_JOB, job_wheel, reference_job, run, run_json
from tests.unit.test_waivers import job_of, line_of, recipe_copy


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _recipe, job = reference_job()
    return job_wheel(tmp_path_factory.mktemp("required"), version=job.version)


def test_globs_that_match_pass_and_one_that_does_not_fails_naming_its_line(
    capsys: pytest.CaptureFixture[str], wheel: Path, tmp_path: Path
) -> None:
    recipe = recipe_copy(
        tmp_path,
        "gate:\n  require:\n    - refkernels/_C*.so\n    - 'refkernels/kernels/*/*.co'\n",
    )
    code, out, err = run(capsys, str(wheel), "--recipe", str(recipe), "--job", REF_JOB)
    assert code == 7, out + err
    line = line_of(recipe, "refkernels/kernels/")
    errors = [x for x in out.splitlines() if x.startswith("  ERROR [required-member]")]
    assert errors == [
        f"  ERROR [required-member] no wheel member matches 'refkernels/kernels/*/*.co' (gate.require[1] "
        f"({recipe}:{line}:7)): the build did not produce it; look in the build log for a step it skipped"
    ]
    assert "2 required member glob(s)" in out  # the gated-as line

    code, doc = run_json(capsys, str(wheel), "--recipe", str(recipe), "--job", REF_JOB)
    assert code == 7
    assert doc["wheels"][0]["config"]["required"] == ["refkernels/_C*.so", "refkernels/kernels/*/*.co"]
    assert [f["rule"] for f in doc["wheels"][0]["findings"]] == ["required-member"]

    matching = recipe_copy(tmp_path, "gate:\n  require: ['refkernels/*.so', 'refkernels/__init__.py']\n")
    code, out, err = run(capsys, str(wheel), "--recipe", str(matching), "--job", REF_JOB)
    assert code == 0, out + err


def test_check_require_by_hand_and_added_to_the_recipes(
    capsys: pytest.CaptureFixture[str], wheel: Path, tmp_path: Path
) -> None:
    rocm = ("--exclude", "libamdhip64.so*")
    code, out, _ = run(capsys, str(wheel), *rocm, "--require", "refkernels/_C.so")
    assert code == 0 and "1 required member glob(s)" in out
    code, out, _ = run(
        capsys, str(wheel), *rocm, "--require", "refkernels/_C.so", "--require", "aiter_meta/hsa/*"
    )
    assert code == 7
    assert [x for x in out.splitlines() if "ERROR" in x] == [
        "  ERROR [required-member] no wheel member matches 'aiter_meta/hsa/*' (--require): the build did not "
        "produce it; look in the build log for a step it skipped"
    ]
    recipe = recipe_copy(tmp_path, "gate:\n  require: ['refkernels/*.so']\n")
    code, doc = run_json(capsys, str(wheel), "--recipe", str(recipe), "--job", REF_JOB, "--require", "x/*.co")
    assert code == 7 and doc["wheels"][0]["config"]["required"] == ["refkernels/*.so", "x/*.co"]
    code, _, err = run(capsys, str(wheel), "--require", "/abs/*.so")
    assert code == 2 and "give a glob on wheel member paths" in err


@pytest.mark.parametrize(
    ("gate", "message"),
    [
        ("gate:\n  require: ['a/*.co', 'a/*.co']\n", "gate.require[1] repeats 'a/*.co'"),
        (
            "gate:\n  require: ['pkg/../x.so']\n",
            "gate.require[0]: 'pkg/../x.so' is not a path inside the wheel",
        ),
        ("gate:\n  require: ['/pkg/x.so']\n", "gate.require[0]"),
        ("gate:\n  require: []\n", "gate.require"),
    ],
)
def test_bad_globs_are_recipe_errors(tmp_path: Path, gate: str, message: str) -> None:
    with pytest.raises(RecipeError) as info:
        load_recipe(recipe_copy(tmp_path, gate))
    assert info.value.exit_code == 3 and message in str(info.value) and info.value.line is not None


def test_required_members_are_never_waived_and_change_the_gate_key(tmp_path: Path) -> None:
    assert "required-member" in NEVER_WAIVED
    with pytest.raises(RecipeError, match="required-member"):
        load_recipe(recipe_copy(tmp_path, "gate:\n  waive:\n    - {rule: required-member, reason: later}\n"))
    keys = []
    for gate in ("", "gate:\n  require: ['a/*.co']\n", "gate:\n  require: ['a/*.co', 'b/*.co']\n"):
        recipe = load_recipe(recipe_copy(tmp_path, gate))
        keys.append(repr(gate_key(GateConfig.from_job(job_of(recipe), recipe))))
    assert len(set(keys)) == 3
