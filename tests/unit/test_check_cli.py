"""``buildkit check``: exit codes, human report, JSON validated against the shipped schema.

Wheels are built with the host's real gcc (tests/agreement/testwheels.py; ~0.1 s each)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from buildkit.cli import main
from buildkit.report import load_schema

_spec = importlib.util.spec_from_file_location(
    "testwheels", Path(__file__).parents[1] / "agreement" / "testwheels.py"
)
assert _spec is not None and _spec.loader is not None
testwheels = importlib.util.module_from_spec(_spec)
sys.modules["testwheels"] = testwheels
_spec.loader.exec_module(testwheels)

REPO = Path(__file__).parents[2]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(["check", *args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run(capsys, "--json", *args)
    doc: dict[str, Any] = json.loads(out)
    jsonschema.validate(doc, load_schema())
    return code, doc


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cli")
    dirs = {n: root / n for n in ("glibc", "cxx", "ext", "hip", "torch")}
    for d in dirs.values():
        d.mkdir()
    so = testwheels.compile_shared("int f(void) { return 1; }\n", dirs["torch"] / "t.so")
    return {
        "glibc_new": testwheels.glibc_new(dirs["glibc"]),
        "glibcxx_new": testwheels.glibcxx_new(dirs["cxx"]),
        "external_lib": testwheels.external_lib(dirs["ext"])[0],
        "hip_like": testwheels.hip_like(dirs["hip"], ["gfx908", "gfx90a"]),
        "torch_loose": testwheels.pack_wheel(
            dirs["torch"],
            "tpin",
            "cp311-cp311-manylinux_2_28_x86_64",
            {"tpin/t.so": so},
            requires=["torch>=2.9"],
        ),
    }


def test_pass_exits_0_and_json_matches_schema(
    capsys: pytest.CaptureFixture[str], built: dict[str, Path]
) -> None:
    code, doc = run_json(capsys, str(built["glibcxx_new"]), "--policy", "manylinux_2_35")
    assert code == 0
    assert doc["schema_version"] == 1 and doc["passed"] is True
    (w,) = doc["wheels"]
    assert w["platform"]["sym_tag"] == "manylinux_2_35_x86_64"
    assert {"library": "libstdc++.so.6", "prefix": "GLIBCXX", "max": "GLIBCXX_3.4.30"}.items() <= {
        **next(s for s in w["symbols"] if s["prefix"] == "GLIBCXX")
    }.items()


def test_gate_failure_exits_7_naming_file_library_symbol(
    capsys: pytest.CaptureFixture[str], built: dict[str, Path]
) -> None:
    code, out, err = run(capsys, str(built["glibc_new"]))
    assert code == 7
    assert "platform tag: manylinux_2_36_x86_64" in out
    assert "glibcnew/_ext.so requires GLIBC_2.36 from libc.so.6" in out
    assert "(library libc.so.6, symbol GLIBC_2.36)" in out
    assert "gate failed" in err and "Traceback" not in err


def test_ceiling_flags(capsys: pytest.CaptureFixture[str], built: dict[str, Path]) -> None:
    code, doc = run_json(capsys, str(built["glibcxx_new"]), "--max-glibcxx", "3.4.24")
    assert code == 7
    assert [(f["rule"], f["symbol"]) for f in doc["wheels"][0]["findings"]] == [("ceiling", "GLIBCXX_3.4.30")]


def test_unreadable_wheel_exits_6_and_others_are_reported(
    capsys: pytest.CaptureFixture[str], built: dict[str, Path], tmp_path: Path
) -> None:
    bad = tmp_path / "broken-1.0-cp311-cp311-linux_x86_64.whl"
    bad.write_bytes(b"this is not a zip file")
    code, doc = run_json(capsys, str(built["glibcxx_new"]), str(bad))
    assert code == 6
    assert doc["passed"] is False
    assert doc["wheels"][1]["wheel"] == bad.name and doc["wheels"][1]["error"]
    assert doc["wheels"][0]["passed"] is True


def test_unreadable_wheels_are_named_once_each(
    capsys: pytest.CaptureFixture[str], built: dict[str, Path], tmp_path: Path
) -> None:
    """Two wheels without a dist-info: the summary on stderr says which wheel each message is about;
    the report (which names the wheel itself) does not repeat the name inside the error."""
    import zipfile

    bad = []
    for name in ("one-1.0-cp311-cp311-linux_x86_64.whl", "two-1.0-cp311-cp311-linux_x86_64.whl"):
        with zipfile.ZipFile(tmp_path / name, "w") as zf:
            zf.writestr("x/__init__.py", "")
        bad.append(tmp_path / name)
    code, out, err = run(capsys, str(built["glibcxx_new"]), *map(str, bad))
    assert code == 6
    for path in bad:
        assert f"{path.name}: not a wheel: expected one top-level *.dist-info/WHEEL" in err
        assert f"{path.name}\n  verdict: UNREADABLE: not a wheel: expected one" in out


def test_exclude_glob(capsys: pytest.CaptureFixture[str], built: dict[str, Path]) -> None:
    code, out, _ = run(capsys, str(built["external_lib"]), "--policy", "manylinux_2_28")
    assert code == 7 and "library libtiny.so.1" in out
    code, doc = run_json(
        capsys, str(built["external_lib"]), "--policy", "manylinux_2_28", "--exclude", "libtiny.so*"
    )
    assert code == 0
    assert doc["wheels"][0]["libraries"][0] == {
        "library": "libtiny.so.1",
        "status": "excluded",
        "needed_by": ["usetiny/_ext.so"],
        "detail": "libtiny.so*",
    }


def test_archs(capsys: pytest.CaptureFixture[str], built: dict[str, Path]) -> None:
    code, out, _ = run(capsys, str(built["hip_like"]), "--archs", "gfx908,gfx90a")
    assert code == 0 and "hipk/_ext.so [bundle]: gfx908 gfx90a" in out
    code, doc = run_json(capsys, str(built["hip_like"]), "--archs", "gfx90a,gfx942")
    assert code == 7
    assert [(f["severity"], f["symbol"]) for f in doc["wheels"][0]["findings"]] == [
        ("error", "gfx942"),
        ("warning", "gfx908"),
    ]


@pytest.mark.parametrize(
    ("archs", "message"),
    [
        ("gfx@@,;;", "invalid GPU arch 'gfx@@'"),
        ("gfx90a,sm_80", "invalid GPU arch 'sm_80'"),
        ("gfx90a:xnack", "feature 'xnack' must look like xnack+ or xnack-"),
        ("gfx90a:xnack+:xnack-", "feature xnack given twice"),
        (",;;", "names no GPU arch"),
    ],
)
def test_invalid_archs_exit_4_before_any_wheel_is_judged(
    capsys: pytest.CaptureFixture[str], built: dict[str, Path], archs: str, message: str
) -> None:
    """An invalid target id is ArchError (exit 4) as in ``plan``/``archs``, not a gate failure (7)
    claiming the wheel "lacks code for requested arch gfx@@"."""
    code, out, err = run(capsys, str(built["hip_like"]), "--archs", archs)
    assert code == 4 and message in err and "Traceback" not in err
    assert "lacks code" not in out and out == ""


def test_archs_are_canonicalised(capsys: pytest.CaptureFixture[str], built: dict[str, Path]) -> None:
    code, out, _ = run(capsys, str(built["hip_like"]), "--archs", " GFX908 ; gfx90a gfx90a")
    assert code == 0 and "hipk/_ext.so [bundle]: gfx908 gfx90a" in out
    assert run(capsys, str(built["hip_like"]), "--archs", "")[0] == 0  # blank: no arch rule


def test_torch_pin_and_size_limit(capsys: pytest.CaptureFixture[str], built: dict[str, Path]) -> None:
    assert run(capsys, str(built["torch_loose"]))[0] == 0
    code, out, _ = run(capsys, str(built["torch_loose"]), "--torch", "2.10")
    assert code == 7 and "torch-pin" in out
    code, out, _ = run(capsys, str(built["torch_loose"]), "--size-limit", "1KiB")
    assert code == 7 and "[size]" in out


def test_exclude_set_from_rocm_data(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # an extension needing libamdhip64.so.6: built against a stub with that SONAME (no ROCm here)
    stub = testwheels.compile_shared(
        "int hipInit(int f) { return f; }\n",
        tmp_path / "libamdhip64.so.6",
        flags=["-Wl,-soname,libamdhip64.so.6"],
    )
    so = testwheels.compile_shared(
        "int hipInit(int);\nint go(void) { return hipInit(0); }\n", tmp_path / "ext.so", libs=[str(stub)]
    )
    wheel = testwheels.pack_wheel(
        tmp_path, "usehip", "cp311-cp311-manylinux_2_28_x86_64", {"usehip/ext.so": so}
    )
    assert run(capsys, str(wheel))[0] == 7
    code, doc = run_json(capsys, str(wheel), "--exclude-set", "rocm", "--rocm", "7.2")
    assert code == 0, doc
    assert doc["wheels"][0]["libraries"][0]["status"] == "excluded"


def test_recipe_job(capsys: pytest.CaptureFixture[str], built: dict[str, Path]) -> None:
    from buildkit.plan import expand
    from buildkit.recipe import load_recipe

    recipe = REPO / "recipes" / "reference.yaml"
    job = expand(load_recipe(recipe)).jobs[0]
    code, doc = run_json(capsys, str(built["hip_like"]), "--recipe", str(recipe), "--job", job.id)
    cfg = doc["wheels"][0]["config"]
    assert cfg["policy"] == job.policy and cfg["archs"] == [str(t) for t in job.archs.kept]
    assert cfg["exclude_globs"] == list(job.exclude_globs)
    assert code == (0 if {str(t) for t in job.archs.kept} <= {"gfx908", "gfx90a"} else 7)
    code, _, err = run(capsys, str(built["hip_like"]), "--recipe", str(recipe), "--job", "nope")
    assert code == 2 and "no job 'nope'" in err
    code, _, err = run(capsys, str(built["hip_like"]), "--job", job.id)
    assert code == 2 and "--recipe and --job go together" in err


def test_integrity_findings_in_human_and_json_reports(
    capsys: pytest.CaptureFixture[str], built: dict[str, Path], tmp_path: Path
) -> None:
    from tests.helpers.wheel_edit import edit_wheel

    clean = built["glibcxx_new"]
    code, out, _ = run(capsys, str(clean), "--policy", "manylinux_2_35", "--verify-record")
    assert code == 0 and "RECORD: 4 entries for 4 files, hashes verified: consistent" in out
    tampered = edit_wheel(clean, put={"cxxnew/extra.txt": b"not listed\n"}, out=tmp_path / clean.name)
    code, out, _ = run(capsys, str(tampered), "--policy", "manylinux_2_35", "--verify-record")
    assert code == 7
    assert "ERROR [record] cxxnew/extra.txt is in the archive but not in RECORD" in out
    assert "RECORD: 4 entries for 5 files, hashes verified: 1 problem(s)" in out
    code, doc = run_json(capsys, str(tampered), "--policy", "manylinux_2_35", "--no-verify-record")
    (w,) = doc["wheels"]
    assert code == 7 and w["integrity"] == {"record_entries": 4, "files": 5, "hashes_verified": False}
    assert [(f["rule"], f["file"]) for f in w["findings"]] == [("record", "cxxnew/extra.txt")]
    code, out, _ = run(capsys, str(tampered), "--policy", "manylinux_2_35")  # the default
    assert "names and sizes only (--verify-record hashes them)" in out


def test_verify_record_catches_a_same_size_edit_the_default_does_not(
    capsys: pytest.CaptureFixture[str], built: dict[str, Path], tmp_path: Path
) -> None:
    from tests.helpers.wheel_edit import edit_wheel, read_members

    clean = built["glibcxx_new"]
    meta = read_members(clean)["cxxnew-1.0.dist-info/METADATA"]
    edited = edit_wheel(
        clean, put={"cxxnew-1.0.dist-info/METADATA": meta.replace(b"1.0", b"9.9")}, out=tmp_path / clean.name
    )
    assert run(capsys, str(edited), "--policy", "manylinux_2_35")[0] == 0
    code, doc = run_json(capsys, str(edited), "--policy", "manylinux_2_35", "--verify-record")
    assert code == 7
    assert [(f["rule"], f["file"]) for f in doc["wheels"][0]["findings"]] == [
        ("record", "cxxnew-1.0.dist-info/METADATA")
    ]


# --------------------------------------------------------------------------- --recipe/--job = build's gate
def budget_recipe(tmp_path: Path, budget: str) -> Path:
    """The reference recipe with another size_budget (its source path made absolute)."""
    text = (REPO / "recipes" / "reference.yaml").read_text()
    text = text.replace("path: ../csrc", f"path: {REPO / 'csrc'}")
    text = text.replace("size_budget:\n  limit: 20MiB\n", f"size_budget:\n{budget}")
    assert budget in text
    path = tmp_path / "budget.yaml"
    path.write_text(text)
    return path


def test_recipe_job_applies_the_size_budget_exactly_as_build(
    capsys: pytest.CaptureFixture[str], built: dict[str, Path], tmp_path: Path
) -> None:
    """``build`` gates with GateConfig.from_recipe_job; ``check --recipe --job`` must give the same
    configuration and the same findings, including the recipe's size limit (1 KiB < the wheel)."""
    from buildkit.gate import GateConfig, evaluate
    from buildkit.inspect import inspect_wheel
    from buildkit.plan import expand
    from buildkit.recipe import load_recipe

    path = budget_recipe(tmp_path, "  limit: 1KiB\n  warn: 512B\n")
    recipe = load_recipe(path)
    job = expand(recipe).jobs[0]
    wheel = built["hip_like"]
    as_build = GateConfig.from_recipe_job(recipe, job)
    assert as_build.size_limit == 1024 and as_build.size_warn == 512
    expected = evaluate(inspect_wheel(wheel), as_build)

    code, doc = run_json(capsys, str(wheel), "--recipe", str(path), "--job", job.id)
    (w,) = doc["wheels"]
    assert code == 7
    assert w["config"] == as_build.to_json()
    assert [(f["rule"], f["severity"]) for f in w["findings"]] == [
        (f.rule, f.severity) for f in expected.findings
    ]
    assert ("size", "error") in [(f["rule"], f["severity"]) for f in w["findings"]]
    # an explicit flag overrides the recipe's limit: no size finding any more
    code, doc = run_json(
        capsys,
        str(wheel),
        "--recipe",
        str(path),
        "--job",
        job.id,
        "--size-limit",
        "1GiB",
        "--size-warn",
        "1GiB",
    )
    assert "size" not in [f["rule"] for f in doc["wheels"][0]["findings"]]


def test_recipe_job_flags_add_excludes_and_override_ceilings_and_archs(
    capsys: pytest.CaptureFixture[str], built: dict[str, Path]
) -> None:
    from buildkit.plan import expand
    from buildkit.recipe import load_recipe

    recipe = REPO / "recipes" / "reference.yaml"
    job = expand(load_recipe(recipe)).jobs[0]
    assert job.exclude_globs  # the reference recipe excludes the ROCm set
    _, doc = run_json(
        capsys,
        str(built["external_lib"]),
        *("--recipe", str(recipe), "--job", job.id),
        *("--exclude", "libtiny.so*", "--max-glibcxx", "3.4.24", "--archs", "gfx90a"),
    )
    cfg = doc["wheels"][0]["config"]
    assert cfg["exclude_globs"] == [*job.exclude_globs, "libtiny.so*"]  # added, the job's kept
    assert cfg["ceilings"] == {**job.ceilings, "GLIBCXX": "3.4.24"}  # one ceiling overridden
    assert cfg["archs"] == ["gfx90a"]  # replaced
    assert doc["wheels"][0]["libraries"][0]["status"] == "excluded"
    # --exclude-set without --rocm expands for the job's ROCm release (5.7), not for every release
    _, doc = run_json(
        capsys, str(built["external_lib"]), "--recipe", str(recipe), "--job", job.id, "--exclude-set", "rocm"
    )
    assert sorted(doc["wheels"][0]["config"]["exclude_globs"]) == sorted(job.exclude_globs)
