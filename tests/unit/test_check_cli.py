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
from buildkit.gate.report import load_schema
from buildkit.records import to_data

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
    code, doc = run_json(capsys, str(wheel), "--exclude-set", "rocm", "--rocm", "6.4")
    assert code == 0, doc
    assert doc["wheels"][0]["libraries"][0]["status"] == "excluded"
    # excluded, but linking 6.x's SONAME: not a ROCm 7.2 wheel
    code, doc = run_json(capsys, str(wheel), "--exclude-set", "rocm", "--rocm", "7.2")
    assert code == 7
    assert [(f["rule"], f["library"]) for f in doc["wheels"][0]["findings"]] == [
        ("rocm-soname", "libamdhip64.so.6")
    ]


def test_recipe_job(capsys: pytest.CaptureFixture[str], built: dict[str, Path]) -> None:
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    recipe = REPO / "recipes" / "reference-trixie.yaml"
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
    code, out, _ = run(capsys, str(tampered), "--policy", "manylinux_2_35", "--no-verify-record")
    assert (
        "RECORD: 4 entries for 5 files, names and sizes: 1 problem(s); hashes not verified "
        "(--no-verify-record)" in out
    )
    code, out, _ = run(capsys, str(tampered), "--policy", "manylinux_2_35")  # the default: hashed
    assert code == 7 and "RECORD: 4 entries for 5 files, hashes verified: 1 problem(s)" in out


def test_extension_module_that_is_not_elf_fails_the_check(
    capsys: pytest.CaptureFixture[str], built: dict[str, Path], tmp_path: Path
) -> None:
    from tests.helpers.wheel_edit import edit_wheel

    clean = built["glibcxx_new"]
    member = "cxxnew/_shim.cpython-311-x86_64-linux-gnu.so"
    put = {member: b"#!/bin/sh\nexec true\n", "cxxnew/lib/libcxx.so": b"/* GNU ld script */\nINPUT(x)\n"}
    broken = edit_wheel(clean, put=put, rerecord=True, out=tmp_path / clean.name)
    code, out, err = run(capsys, str(broken), "--policy", "manylinux_2_35")
    assert code == 7 and "gate failed" in err
    assert (
        f"ERROR [inspect:not-elf-library] {member} is named like a shared library but is not ELF "
        "(starts with b'#!/bin/sh\\nexec t'): `import cxxnew._shim` loads it as an extension module, "
        "which fails" in out
    )
    assert "WARNING [inspect:not-elf-library] cxxnew/lib/libcxx.so" in out  # a linker script: not loaded
    code, doc = run_json(capsys, str(broken), "--policy", "manylinux_2_35")
    assert sorted((f["severity"], f["file"]) for f in doc["wheels"][0]["findings"]) == [
        ("error", member),
        ("warning", "cxxnew/lib/libcxx.so"),
    ]


def test_record_hashes_are_verified_by_default_and_no_verify_record_skips_them(
    capsys: pytest.CaptureFixture[str], built: dict[str, Path], tmp_path: Path
) -> None:
    from tests.helpers.wheel_edit import edit_wheel, read_members

    clean = built["glibcxx_new"]
    meta = read_members(clean)["cxxnew-1.0.dist-info/METADATA"]
    # a same-size edit the core-metadata rule accepts (a Version edit it refuses: test_core_metadata.py)
    assert b"Metadata-Version: 2.1" in meta
    edited = edit_wheel(
        clean,
        put={"cxxnew-1.0.dist-info/METADATA": meta.replace(b"Version: 2.1", b"Version: 2.2")},
        out=tmp_path / clean.name,
    )
    for flag in ((), ("--verify-record",)):  # a same-size edit: only the hash shows it
        code, doc = run_json(capsys, str(edited), "--policy", "manylinux_2_35", *flag)
        assert code == 7
        assert doc["wheels"][0]["integrity"]["hashes_verified"] is True
        assert [(f["rule"], f["file"]) for f in doc["wheels"][0]["findings"]] == [
            ("record", "cxxnew-1.0.dist-info/METADATA")
        ]
    code, out, _ = run(capsys, str(edited), "--policy", "manylinux_2_35")
    assert "hashes verified: 1 problem(s)" in out
    code, out, _ = run(capsys, str(edited), "--policy", "manylinux_2_35", "--no-verify-record")
    assert code == 0 and "names and sizes: consistent; hashes not verified (--no-verify-record)" in out


# --------------------------------------------------------------------------- --recipe/--job = build's gate
def budget_recipe(tmp_path: Path, budget: str) -> Path:
    """The reference recipe with another size_budget (its source path made absolute)."""
    text = (REPO / "recipes" / "reference-trixie.yaml").read_text()
    text = text.replace("path: ../csrc", f"path: {REPO / 'csrc'}")
    text = text.replace("size_budget:\n  limit: 20MiB\n", f"size_budget:\n{budget}")
    assert budget in text
    path = tmp_path / "budget.yaml"
    path.write_text(text)
    return path


def test_recipe_job_applies_the_size_budget_exactly_as_build(
    capsys: pytest.CaptureFixture[str], built: dict[str, Path], tmp_path: Path
) -> None:
    """``build`` gates with GateConfig.from_job(job, recipe); ``check --recipe --job`` must give the same
    configuration and the same findings, including the recipe's size limit (1 KiB < the wheel)."""
    from buildkit.gate.config import GateConfig
    from buildkit.gate.evaluate import evaluate
    from buildkit.inspect import inspect_wheel
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    path = budget_recipe(tmp_path, "  limit: 1KiB\n  warn: 512B\n")
    recipe = load_recipe(path)
    job = expand(recipe).jobs[0]
    wheel = built["hip_like"]
    as_build = GateConfig.from_job(job, recipe)
    assert as_build.size_limit == 1024 and as_build.size_warn == 512
    expected = evaluate(inspect_wheel(wheel), as_build)

    code, doc = run_json(capsys, str(wheel), "--recipe", str(path), "--job", job.id)
    (w,) = doc["wheels"]
    assert code == 7
    assert w["config"] == to_data(as_build)
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
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    recipe = REPO / "recipes" / "reference-trixie.yaml"
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


# --------------------------------------------------------------------------- the job's own wheel
REFERENCE = REPO / "recipes" / "reference-trixie.yaml"
REF_JOB = "cp313-rocm5.7"


def reference_job() -> Any:
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    recipe = load_recipe(REFERENCE)
    return recipe, expand(recipe, env={}).job(REF_JOB)


def job_wheel(out: Path, *, version: str, python: str = "cp313", name: str = "buildkit_refkernels") -> Path:
    """A wheel like the reference job's: a HIP-like extension with code for the job's archs, linking
    libamdhip64.so.5 (a stub: no ROCm here), plus a Python module."""
    out.mkdir(parents=True, exist_ok=True)
    stub = testwheels.compile_shared(
        "int hipInit(int f) { return f; }\n", out / "libamdhip64.so.5", flags=["-Wl,-soname,libamdhip64.so.5"]
    )
    src = testwheels._fatbin_c(testwheels.offload_bundle(["gfx908", "gfx90a", "gfx942"]), "__hip_fatbin")
    src += "int hipInit(int);\nint go(void) { return hipInit(0); }\n"
    so = testwheels.compile_shared(src, out / "ext.so", libs=[str(stub)])
    module = b"".join(b"def f%d(x):\n    return x * %d\n" % (i, i) for i in range(40))
    tag = f"{python}-{python}-manylinux_2_41_x86_64"
    files = {"refkernels/_C.so": so, "refkernels/__init__.py": module}
    wheel: Path = testwheels.pack_wheel(out, name, tag, files, version=version)
    return wheel


@pytest.fixture(scope="module")
def ref_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _recipe, job = reference_job()
    return job_wheel(tmp_path_factory.mktemp("job"), version=job.version)


def test_recipe_job_passes_the_jobs_own_wheel_and_says_what_it_gated_against(
    capsys: pytest.CaptureFixture[str], ref_wheel: Path
) -> None:
    recipe, job = reference_job()
    code, out, err = run(capsys, str(ref_wheel), "--recipe", str(REFERENCE), "--job", REF_JOB)
    assert code == 0, out + err
    assert "  verdict: PASS (0 error(s), 0 warning(s))" in out
    assert (
        f"  gated as: job {REF_JOB} of {REFERENCE} (build sha256 {recipe.build_sha256[:12]}); "
        "policy manylinux_2_41, "
        "GLIBC<=2.41 GLIBCXX<=3.4.33 CXXABI<=1.3.15 GCC<=14.0.0, archs gfx908 gfx90a gfx942, "
        "ROCm 5.7 as debian-trixie packages it, "
        f"{len(job.exclude_globs)} exclude glob(s), size warn 100.0 MiB limit 20.0 MiB"
    ) in out
    assert f"({ref_wheel.stat().st_size / 1024:.1f} KiB, sha256 " in out  # not "(0.0 MiB"
    _, doc = run_json(capsys, str(ref_wheel), "--recipe", str(REFERENCE), "--job", REF_JOB)
    cfg = doc["wheels"][0]["config"]
    assert (cfg["job"], cfg["recipe"], cfg["recipe_sha256"]) == (REF_JOB, str(REFERENCE), recipe.build_sha256)
    assert cfg["identity"] == {
        "name": "buildkit-refkernels",
        "version": job.version,
        "python_tag": "cp313",
        "platform_tag": "manylinux_2_41_x86_64",
    }


def test_flags_report_says_it_gated_with_flags(
    capsys: pytest.CaptureFixture[str], built: dict[str, Path]
) -> None:
    code, out, _ = run(capsys, str(built["glibc_new"]), "--rocm", "7.2", "--torch", "2.10")
    assert code == 7
    assert (
        "  gated as: flags; policy manylinux_2_28 (the file name's), GLIBC<=2.28 GLIBCXX<=3.4.24 "
        "CXXABI<=1.3.11 GCC<=7.0.0, no archs, ROCm 7.2, torch 2.10, size warn 100.0 MiB no limit"
    ) in out
    _, doc = run_json(capsys, str(built["glibc_new"]))
    cfg = doc["wheels"][0]["config"]
    assert (cfg["job"], cfg["recipe_sha256"], cfg["identity"]) == (None, None, None)


def test_recipe_job_refuses_another_jobs_wheel(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Right archs, libraries and symbols, but another version and Python: not this job's wheel."""
    _recipe, job = reference_job()
    other = job_wheel(tmp_path, version="0.0.9", python="cp312")
    code, doc = run_json(capsys, str(other), "--recipe", str(REFERENCE), "--job", REF_JOB)
    assert code == 7
    errors = [f["message"] for f in doc["wheels"][0]["findings"] if f["severity"] == "error"]
    assert errors == [
        f"version: expected {job.version} (the plan's for job {REF_JOB}), found 0.0.9; make the build "
        "read BUILDKIT_VERSION or SETUPTOOLS_SCM_PRETEND_VERSION",
        f"python tag: expected cp313-cp313 (job {REF_JOB}'s Python), found cp312-cp312",
    ]
    # the same wheel checked with flags only: no job, no identity rule
    assert run(capsys, str(other), "--exclude-set", "rocm", "--rocm", "5.7")[0] == 0


def test_recipe_job_refuses_a_pure_wheel_for_a_platform_job(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    aiter = REPO / "recipes" / "aiter.yaml"
    job = expand(load_recipe(aiter), env={}).job("cp312-rocm7.2-torch2.10")
    pure = testwheels.pack_wheel(
        tmp_path, "amd_aiter", "py3-none-any", {"aiter/__init__.py": b""}, version=job.version
    )
    code, doc = run_json(capsys, str(pure), "--recipe", str(aiter), "--job", job.id)
    assert code == 7
    identity = [f["message"] for f in doc["wheels"][0]["findings"] if f["rule"] == "job-identity"]
    assert [m.split(",")[0] for m in identity] == [
        "python tag: expected cp312-cp312 (job cp312-rocm7.2-torch2.10's Python)",
        "platform tag: expected manylinux_2_28_x86_64 (job cp312-rocm7.2-torch2.10's policy)",
    ]
    assert "found py3-none" in identity[0] and identity[1].endswith("found any")


def test_policy_flag_moves_the_expected_platform_tag(
    capsys: pytest.CaptureFixture[str], ref_wheel: Path
) -> None:
    _, doc = run_json(
        capsys, str(ref_wheel), "--recipe", str(REFERENCE), "--job", REF_JOB, "--policy", "manylinux_2_39"
    )
    w = doc["wheels"][0]
    assert w["config"]["identity"]["platform_tag"] == "manylinux_2_39_x86_64"
    assert [f["rule"] for f in w["findings"] if f["rule"] == "job-identity"] == ["job-identity"]


# --------------------------------------------------------------------------- --rocm alone
def test_rocm_flag_alone_pins_the_runtime_sonames(
    capsys: pytest.CaptureFixture[str], ref_wheel: Path
) -> None:
    """--rocm V without --exclude-set: config.rocm and rocm_sonames are V's, so linking
    libamdhip64.so.5 fails a 7.2 check (the rocm-soname rule), with flags and with a job."""
    code, doc = run_json(capsys, str(ref_wheel), "--rocm", "7.2", "--exclude", "libamdhip64.so*")
    cfg = doc["wheels"][0]["config"]
    assert code == 7 and cfg["rocm"] == "7.2" and cfg["rocm_sonames"]["libamdhip64"] == "libamdhip64.so.7"
    assert [(f["rule"], f["library"]) for f in doc["wheels"][0]["findings"]] == [
        ("rocm-soname", "libamdhip64.so.5")
    ]
    code, doc = run_json(
        capsys, str(ref_wheel), "--recipe", str(REFERENCE), "--job", REF_JOB, "--rocm", "7.2"
    )
    cfg = doc["wheels"][0]["config"]
    assert code == 7 and cfg["rocm"] == "7.2" and cfg["rocm_sonames"]["libamdhip64"] == "libamdhip64.so.7"
    assert [f["rule"] for f in doc["wheels"][0]["findings"]] == ["rocm-soname"]
    code, doc = run_json(
        capsys, str(ref_wheel), "--recipe", str(REFERENCE), "--job", REF_JOB, "--rocm", "5.7"
    )
    assert code == 0 and doc["wheels"][0]["config"]["rocm"] == "5.7"
    code, _, err = run(capsys, str(ref_wheel), "--rocm", "9.9")
    assert code == 2 and "no data for ROCm 9.9" in err and "Traceback" not in err


# --------------------------------------------------------------------------- RECORD hashes with a job
def flip_byte(wheel: Path, member: str, out: Path) -> Path:
    """``wheel`` with one byte of ``member``'s compressed data flipped (the zip's CRC no longer holds)."""
    import struct
    import zipfile

    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo(member)
    data = bytearray(wheel.read_bytes())
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26 : info.header_offset + 30])
    data[info.header_offset + 30 + name_len + extra_len + info.compress_size // 2] ^= 0x01
    out.write_bytes(bytes(data))
    return out


def test_recipe_job_verifies_record_hashes_by_default(
    capsys: pytest.CaptureFixture[str], ref_wheel: Path, tmp_path: Path
) -> None:
    bad = flip_byte(ref_wheel, "refkernels/__init__.py", tmp_path / ref_wheel.name)
    code, out, err = run(capsys, str(bad), "--recipe", str(REFERENCE), "--job", REF_JOB)
    assert code == 6 and "refkernels/__init__.py" in err, out + err
    assert "PASS" not in out
    # a plain check verifies them too; --no-verify-record skips them and says so plainly
    code, _, err = run(capsys, str(bad), "--exclude-set", "rocm", "--rocm", "5.7")
    assert code == 6 and "refkernels/__init__.py" in err
    code, out, _ = run(capsys, str(bad), "--exclude-set", "rocm", "--rocm", "5.7", "--no-verify-record")
    assert code == 0
    assert "names and sizes: consistent; hashes not verified (--no-verify-record)" in out
    code, out, _ = run(capsys, str(bad), "--recipe", str(REFERENCE), "--job", REF_JOB, "--no-verify-record")
    assert code == 0 and "hashes not verified" in out
    code, _, err = run(capsys, str(bad), "--exclude-set", "rocm", "--rocm", "5.7", "--verify-record")
    assert code == 6 and "refkernels/__init__.py" in err


def test_toolchain_flag_pins_a_distributions_sonames(
    capsys: pytest.CaptureFixture[str], ref_wheel: Path
) -> None:
    """--toolchain debian-trixie: the release and SONAMEs of Debian's packaging (the wheel links
    Debian's libamdhip64.so.5); an unknown toolchain is a usage error naming the known ones."""
    code, doc = run_json(
        capsys, str(ref_wheel), "--toolchain", "debian-trixie", "--exclude", "libamdhip64.so*"
    )
    cfg = doc["wheels"][0]["config"]
    assert code == 0 and cfg["rocm"] == "5.7" and cfg["toolchain"] == "debian-trixie"
    assert cfg["rocm_sonames"]["libhipblas"] == "libhipblas.so.0"
    code, _out, err = run(capsys, str(ref_wheel), "--toolchain", "debian-jessie")
    assert code == 2 and "unknown toolchain 'debian-jessie'" in err and "debian-trixie" in err
