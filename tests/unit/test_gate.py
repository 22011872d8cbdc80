"""buildkit.gate: every rule on WheelReports built in memory (the inspection itself is tested elsewhere;
the real toolchain end-to-end is in tests/agreement)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from buildkit.errors import UsageError
from buildkit.gate import (
    GateConfig,
    JobIdentity,
    MiB,
    evaluate,
    format_size,
    torch_pin_problem,
    wheel_pythons,
)
from buildkit.inspect.models import CodeObject, ElfInfo, OffloadEntry, RecordEntry, WheelReport

EXT = "pkg/_ext.cpython-311-x86_64-linux-gnu.so"


def elf(
    member: str = EXT,
    *,
    needed: tuple[str, ...] = ("libc.so.6",),
    soname: str | None = None,
    needs: dict[str, tuple[str, ...]] | None = None,
    targets: tuple[str, ...] = (),
) -> ElfInfo:
    entries = tuple(
        OffloadEntry(f"hipv4-amdgcn-amd-amdhsa--{t}", "hipv4", "amdgcn-amd-amdhsa", t, 100) for t in targets
    )
    if targets:
        entries = (
            OffloadEntry("host-x86_64-unknown-linux-gnu-", "host", "x86_64-unknown-linux-gnu", None, 0),
            *entries,
        )
    return ElfInfo(
        member=member,
        machine="x86_64",
        elf_class=64,
        soname=soname,
        needed=needed,
        rpath=(),
        runpath=(),
        version_needs=needs if needs is not None else {"libc.so.6": ("GLIBC_2.2.5",)},
        offload_targets=entries,
        offload_bundles=1 if targets else 0,
    )


def report(
    *elves: ElfInfo,
    tag: str = "manylinux_2_28_x86_64",
    size: int = 1000,
    requires: tuple[str, ...] = (),
    code_objects: tuple[CodeObject, ...] = (),
) -> WheelReport:
    filename = f"pkg-1.0-cp311-cp311-{tag}.whl"
    # a consistent wheel: dist-info files present and every file listed in RECORD
    dist = ("pkg-1.0.dist-info/WHEEL", "pkg-1.0.dist-info/METADATA", "pkg-1.0.dist-info/RECORD")
    members = (*(e.member for e in elves), *(c.member for c in code_objects), *dist)
    record = tuple(RecordEntry(m, None if m.endswith("RECORD") else "sha256=x", None) for m in members)
    return WheelReport(
        path=filename,
        filename=filename,
        size=size,
        sha256="0" * 64,
        name="pkg",
        version="1.0",
        build_tag=None,
        tags=(f"cp311-cp311-{tag}",),
        wheel_tags=(f"cp311-cp311-{tag}",),
        root_is_purelib=False,
        metadata_requires=requires,
        record=record,
        uncompressed_size=size,
        members=members,
        elves=tuple(elves),
        code_objects=code_objects,
    )


def rules(v: Any, severity: str = "error") -> list[str]:
    return [f.rule for f in v.findings if f.severity == severity]


def test_clean_wheel_passes_with_its_tag() -> None:
    v = evaluate(report(elf(needs={"libc.so.6": ("GLIBC_2.2.5", "GLIBC_2.17")})), GateConfig())
    assert v.passed, v.findings
    assert v.overall_tag == "manylinux_2_17_x86_64"
    assert v.sym_tag == "manylinux_2_17_x86_64"
    assert [(s.library, s.version, s.file) for s in v.symbols] == [("libc.so.6", "GLIBC_2.17", EXT)]


def test_file_name_claiming_more_than_symbols_allow_fails_naming_file_library_symbol() -> None:
    v = evaluate(report(elf(needs={"libc.so.6": ("GLIBC_2.2.5", "GLIBC_2.34")})), GateConfig())
    assert not v.passed
    tag = [f for f in v.findings if f.rule == "platform-tag"]
    assert [(f.file, f.library, f.symbol) for f in tag] == [(EXT, "libc.so.6", "GLIBC_2.34")]
    # the default ceiling is the file name's policy: the same need breaks it too
    ceil = [f for f in v.findings if f.rule == "ceiling"]
    assert [(f.file, f.library, f.symbol) for f in ceil] == [(EXT, "libc.so.6", "GLIBC_2.34")]
    assert v.overall_tag == "manylinux_2_34_x86_64"


def test_flag_ceilings_override_and_gcc_counts() -> None:
    e = elf(
        needed=("libstdc++.so.6", "libgcc_s.so.1", "libc.so.6"),
        needs={
            "libstdc++.so.6": ("GLIBCXX_3.4.22", "CXXABI_1.3.11"),
            "libgcc_s.so.1": ("GCC_7.0.0",),
            "libc.so.6": ("GLIBC_2.17",),
        },
    )
    ok = evaluate(report(e, tag="linux_x86_64"), GateConfig.from_flags(max_glibcxx="3.4.24"))
    assert ok.passed, ok.findings
    bad = evaluate(
        report(e, tag="linux_x86_64"),
        GateConfig.from_flags(max_glibcxx="3.4.21", max_gcc="4.8.0", max_glibc="2.17"),
    )
    assert sorted((f.library, f.symbol) for f in bad.errors) == [
        ("libgcc_s.so.1", "GCC_7.0.0"),
        ("libstdc++.so.6", "GLIBCXX_3.4.22"),
    ]


def test_policy_ceilings_apply_when_the_file_name_says_nothing() -> None:
    e = elf(needs={"libc.so.6": ("GLIBC_2.29",)})
    v = evaluate(report(e, tag="linux_x86_64"), GateConfig(policy="manylinux_2_28"))
    assert [(f.rule, f.symbol) for f in v.errors] == [("ceiling", "GLIBC_2.29")]
    assert evaluate(report(e, tag="linux_x86_64"), GateConfig()).passed


def test_external_library_must_be_whitelisted_grafted_or_excluded() -> None:
    ext = elf(needed=("libc.so.6", "libamdhip64.so.6", "libfoo-1a2b3c4d.so.1", "librocblas.so.5"))
    grafted = elf(
        "pkg.libs/libfoo-1a2b3c4d.so.1",
        soname="libfoo-1a2b3c4d.so.1",
        needs={"libc.so.6": ("GLIBC_2.2.5", "GLIBC_2.27")},
    )
    v = evaluate(report(ext, grafted), GateConfig(exclude_globs=("librocblas.so*",)))
    errs = sorted((f.rule, f.file, f.library) for f in v.errors)
    assert errs == [("external-library", EXT, "libamdhip64.so.6"), ("platform-tag", EXT, "libamdhip64.so.6")]
    status = {u.library: u.status for u in v.libraries}
    assert status == {
        "libc.so.6": "whitelisted",
        "libamdhip64.so.6": "external",
        "libfoo-1a2b3c4d.so.1": "grafted",
        "librocblas.so.5": "excluded",
    }
    assert v.external_libraries() == ["libamdhip64.so.6"]
    assert v.overall_tag == "linux_x86_64"
    # the grafted library's own requirement counts
    assert v.sym_tag == "manylinux_2_27_x86_64"
    fixed = evaluate(report(ext, grafted), GateConfig(exclude_globs=("librocblas.so*", "libamdhip64.so*")))
    assert fixed.passed and fixed.overall_tag == "manylinux_2_27_x86_64"


def test_versioned_soname_is_not_matched_by_an_unversioned_glob() -> None:
    v = evaluate(report(elf(needed=("librocblas.so.5",))), GateConfig(exclude_globs=("librocblas.so",)))
    assert [f.library for f in v.errors if f.rule == "external-library"] == ["librocblas.so.5"]


def test_whitelist_depends_on_policy() -> None:
    e = elf(needed=("libc.so.6", "libexpat.so.1"))  # whitelisted from manylinux_2_12 on, not in manylinux1
    assert evaluate(report(e), GateConfig()).passed
    v = evaluate(report(e, tag="manylinux1_x86_64"), GateConfig())
    assert ("platform-tag", "libexpat.so.1") in [(f.rule, f.library) for f in v.errors]
    assert v.external_libraries() == ["libexpat.so.1"]


def test_gfx_archs_missing_fails_extra_warns() -> None:
    hip = elf(targets=("gfx908", "gfx90a:xnack-", "gfx942"))
    v = evaluate(report(hip), GateConfig(archs=("gfx90a", "gfx1100", "gfx908")))
    assert [(f.rule, f.symbol) for f in v.errors] == [("gfx-arch", "gfx1100")]
    # gfx90a is there only as gfx90a:xnack- (loads with xnack off only): a warning, not a miss
    assert [(f.rule, f.symbol) for f in v.warnings] == [("gfx-arch", "gfx90a"), ("gfx-arch", "gfx942")]
    assert v.gfx[0].targets == ("gfx908", "gfx90a:xnack-", "gfx942")


def test_gfx_feature_conflict_is_not_coverage() -> None:
    hip = elf(targets=("gfx90a:xnack-",))
    exact = evaluate(report(hip), GateConfig(archs=("gfx90a:xnack-",)))
    assert exact.passed and not exact.warnings
    plus = evaluate(report(hip), GateConfig(archs=("gfx90a:xnack+",)))  # xnack- code never loads there
    assert [(f.rule, f.symbol) for f in plus.errors] == [("gfx-arch", "gfx90a:xnack+")]
    strict = evaluate(report(hip), GateConfig(archs=("gfx90a:xnack+",), match_features=True))
    assert [(f.rule, f.symbol) for f in strict.errors] == [("gfx-arch", "gfx90a:xnack+")]


def test_every_hip_object_must_carry_every_arch() -> None:
    a = elf("pkg/a.so", targets=("gfx908", "gfx90a"))
    b = elf("pkg/b.so", targets=("gfx90a",))
    v = evaluate(report(a, b), GateConfig(archs=("gfx908", "gfx90a")))
    assert [(f.file, f.symbol) for f in v.errors] == [("pkg/b.so", "gfx908")]


def test_standalone_code_objects_cover_the_request_together() -> None:
    cos = tuple(CodeObject(f"pkg/kernels/k-{t}.hsaco", t, 5, 0) for t in ("gfx90a", "gfx942"))
    v = evaluate(report(elf(), code_objects=cos), GateConfig(archs=("gfx90a", "gfx942")))
    assert v.passed, v.findings
    v2 = evaluate(report(elf(), code_objects=cos), GateConfig(archs=("gfx90a", "gfx950")))
    assert [f.symbol for f in v2.errors] == ["gfx950"]


def test_archs_requested_but_no_gpu_code() -> None:
    v = evaluate(report(elf()), GateConfig(archs=("gfx90a",)))
    assert rules(v) == ["gfx-arch"]


def test_size_budget() -> None:
    assert rules(evaluate(report(elf(), size=101 * MiB), GateConfig()), "warning") == ["size"]
    assert evaluate(report(elf(), size=101 * MiB), GateConfig()).passed
    assert rules(evaluate(report(elf(), size=101 * MiB), GateConfig(size_limit=100 * MiB))) == ["size"]
    assert evaluate(report(elf(), size=99 * MiB), GateConfig()).findings == ()


@pytest.mark.parametrize(
    ("requirement", "ok"),
    [
        ("torch==2.10.*", True),
        ("torch>=2.10,<2.11", True),
        ("torch~=2.10.0", True),
        ("torch==2.10.1", True),
        ("torch>=2.10.0,<2.11.0; python_version >= '3.10'", True),
        ("torch>=2.9", False),
        ("torch~=2.10", False),
        ("torch", False),
        ("torch>=2.10,<=2.11", False),
        ("torch==2.9.*", False),
    ],
)
def test_torch_pin(requirement: str, ok: bool) -> None:
    assert (torch_pin_problem(Requirement(requirement), "2.10") is None) is ok
    v = evaluate(report(elf(), requires=("numpy>=1.24", requirement)), GateConfig(torch="2.10"))
    assert v.passed is ok, v.findings


def test_torch_pin_needs_a_torch_requirement() -> None:
    v = evaluate(report(elf(), requires=("numpy",)), GateConfig(torch="2.10"))
    assert [(f.rule, f.library) for f in v.errors] == [("torch-pin", "torch")]
    assert evaluate(report(elf(), requires=("numpy",)), GateConfig()).passed  # no pin: no rule


def test_pure_wheel_has_no_tag() -> None:
    v = evaluate(report(tag="any"), GateConfig())
    assert v.pure and v.overall_tag is None and v.passed


def test_machine_mismatch_with_file_tag() -> None:
    v = evaluate(report(elf(), tag="manylinux_2_28_aarch64"), GateConfig())
    assert "elf-machine" in rules(v)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"policy": "manylinux_9_9"},
        {"ceilings": {"GLIBC": "two"}},
        {"ceilings": {"FOO": "1.0"}},
        {"torch": "2"},
        {"size_limit": 0},
    ],
)
def test_bad_config_is_a_usage_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        GateConfig(**kwargs)


def test_from_job_uses_the_jobs_fields() -> None:
    from buildkit.plan import expand
    from buildkit.recipe import load_recipe

    job = expand(load_recipe(Path(__file__).parents[2] / "recipes" / "reference.yaml")).jobs[0]
    cfg = GateConfig.from_job(job)
    assert cfg.policy == job.policy and cfg.torch == job.torch
    assert cfg.archs == tuple(str(t) for t in job.archs.kept) and cfg.exclude_globs == job.exclude_globs
    assert dict(cfg.ceilings) == dict(job.ceilings)
    assert GateConfig.from_job(job, torch="2.10", size_limit=5).torch == "2.10"
    assert replace(cfg, size_limit=5).size_limit == 5


def test_rocm_soname_of_another_release_fails() -> None:
    """A ROCm 7.2 job whose extension links libamdhip64.so.6 was compiled against ROCm 6.x."""
    config = GateConfig(
        policy="manylinux_2_28",
        exclude_globs=("libamdhip64.so*",),
        rocm="7.2",
        rocm_sonames={"libamdhip64": "libamdhip64.so.7"},
    )
    wrong = evaluate(report(elf(needed=("libc.so.6", "libamdhip64.so.6"))), config)
    errors = [f for f in wrong.errors if f.rule == "rocm-soname"]
    assert (
        len(errors) == 1
        and errors[0].library == "libamdhip64.so.6"
        and "libamdhip64.so.7" in errors[0].message
    )
    right = evaluate(report(elf(needed=("libc.so.6", "libamdhip64.so.7"))), config)
    assert not [f for f in right.findings if f.rule == "rocm-soname"]


def test_from_job_takes_the_sonames_of_the_jobs_rocm_release() -> None:
    from buildkit.plan import expand
    from buildkit.recipe import load_recipe

    root = Path(__file__).resolve().parents[2]
    job = expand(load_recipe(root / "recipes" / "aiter.yaml"), env={}).job("cp312-rocm7.2-torch2.10")
    config = GateConfig.from_job(job)
    assert config.rocm == "7.2" and config.rocm_sonames["libamdhip64"] == "libamdhip64.so.7"


@pytest.mark.parametrize(
    ("requirement", "problem"),
    [
        # structurally bounded inside 2.10
        ("torch>=2.10,<2.10.99", None),
        ("torch>=2.10.0rc1,<2.11", None),
        ("torch==2.10.*,!=2.10.0,!=2.10.1", None),  # 2.10.2 is still admitted
        ("torch===2.10.1", None),
        # a hole (!=) never bounds: 2.12 is admitted
        ("torch>=2.10,!=2.11.*,<2.13", "also admits torch 2.11 (<2.13 is its tightest upper bound)"),
        ("torch>=2.10,<2.11.0rc1", "also admits torch 2.11"),  # 2.11.0a1 < 2.11.0rc1
        ("torch>=2.10,<2.11.1", "also admits torch 2.11"),
        ("torch>2.9.99,<2.11", "also admits torch below 2.10 (>2.9.99)"),
        ("torch<2.11", "also admits any older torch"),
        ("torch>=2.10", "also admits any newer torch"),
        ("torch==2.10.*,!=2.10.*", "does not admit any torch 2.10 release"),
        ("torch>=2.10.3,<2.11,!=2.10.3,!=2.10.4", None),  # 2.10.5: one past the highest patch named
        ("torch==2.10.0,!=2.10.0", "does not admit any torch 2.10 release"),
    ],
)
def test_torch_pin_is_decided_from_the_specifier_structure(requirement: str, problem: str | None) -> None:
    found = torch_pin_problem(Requirement(requirement), "2.10", python="==3.12.*")
    assert found is None if problem is None else (found is not None and problem in found), found


@pytest.mark.parametrize(
    ("requirement", "python", "problem"),
    [
        ('torch==2.10.*; python_version<"3.12"', "==3.12.*", "does not require torch on Python 3.12"),
        ('torch==2.10.*; python_version<"3.12"', "==3.11.*", None),  # always true for a cp311 wheel
        ('torch==2.10.*; python_version<"3.12"', ">=3.10", "does not require torch on Python 3.12"),  # abi3
        ('torch==2.10.*; python_full_version>="3.12.1"', "==3.12.*", "on Python 3.12.0"),
        ('torch==2.10.*; python_full_version>="3.12.0"', "==3.12.*", None),
        ('torch==2.10.*; extra=="gpu"', "==3.12.*", "(no extra)"),
        ('torch==2.10.*; sys_platform=="win32"', "==3.12.*", "does not require torch"),
        ('torch==2.10.*; sys_platform=="linux"', "", None),
    ],
)
def test_torch_pin_marker_false_for_a_python_of_the_wheel(
    requirement: str, python: str, problem: str | None
) -> None:
    found = torch_pin_problem(Requirement(requirement), "2.10", python=python)
    assert found is None if problem is None else (found is not None and problem in found), found


def test_torch_pin_marker_is_judged_for_the_wheels_own_python() -> None:
    """``evaluate`` takes the Pythons from the wheel's tags (the report helper's wheel is cp311)."""
    lt312 = ('torch==2.10.*; python_version<"3.12"',)
    assert evaluate(report(elf(), requires=lt312), GateConfig(torch="2.10")).passed
    lt311 = ('torch==2.10.*; python_version<"3.11"',)
    v = evaluate(report(elf(), requires=lt311), GateConfig(torch="2.10"))
    assert [f.rule for f in v.errors] == ["torch-pin"] and "Python 3.11" in v.errors[0].message


@pytest.mark.parametrize(
    ("filename", "spec"),
    [
        ("a-1.0-cp312-cp312-manylinux_2_28_x86_64.whl", "==3.12.*"),
        ("a-1.0-cp39-abi3-manylinux_2_28_x86_64.whl", ">=3.9"),
        ("a-1.0-py3-none-any.whl", ""),
        ("not-a-wheel.whl", ""),
    ],
)
def test_wheel_pythons(filename: str, spec: str) -> None:
    assert str(wheel_pythons(filename)) == spec


def test_from_recipe_job_adds_the_size_budget_to_the_jobs_fields() -> None:
    from buildkit.plan import expand
    from buildkit.recipe import load_recipe

    recipe = load_recipe(Path(__file__).parents[2] / "recipes" / "reference.yaml")
    job = expand(recipe).jobs[0]
    cfg = GateConfig.from_recipe_job(recipe, job)
    assert cfg.size_limit == recipe.size_budget["limit"] == 20 * MiB
    # the same rules as the job's; the identity gains the recipe's name, file and sha256
    bare = GateConfig.from_job(job)
    assert replace(cfg, size_limit=None, identity=None) == replace(bare, size_limit=None, identity=None)
    assert cfg.identity is not None and bare.identity is not None
    assert (cfg.identity.name, cfg.identity.recipe_sha256) == (recipe.name, recipe.sha256)
    assert replace(cfg.identity, name=None, recipe=None, recipe_sha256=None) == bare.identity
    assert GateConfig.from_recipe_job(recipe, job, size_limit=5).size_limit == 5  # overrides win
    assert "size" in rules(evaluate(report(elf(), size=21 * MiB), cfg))
    assert "size" not in rules(evaluate(report(elf(), size=19 * MiB), cfg))


# --------------------------------------------------------------------------- job identity
def named(r: WheelReport, filename: str) -> WheelReport:
    """``r`` under another file name (the rules read name, version and tags from it)."""
    return replace(r, filename=filename, path=filename)


def identity(**changes: str) -> JobIdentity:
    base = JobIdentity(
        job="cp311-rocm7.2",
        version="1.0",
        python="cp311",
        platform_tag="manylinux_2_28_x86_64",
        name="pkg",
    )
    return replace(base, **changes)


def job_findings(r: WheelReport, ident: JobIdentity | None) -> list[tuple[str, str]]:
    v = evaluate(r, GateConfig(identity=ident))
    return [(f.severity, f.message) for f in v.findings if f.rule == "job-identity"]


def test_job_identity_passes_the_jobs_own_wheel() -> None:
    assert job_findings(report(elf()), identity()) == []
    # auditwheel adds the more compatible tags the wheel also meets (the reference wheel's case)
    both = named(report(elf()), "pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl")
    assert job_findings(both, identity()) == []
    # a stable-ABI wheel the job's Python can load
    assert job_findings(named(report(elf()), "pkg-1.0-cp39-abi3-manylinux_2_28_x86_64.whl"), identity()) == []
    # the name compares normalised
    assert job_findings(report(elf()), identity(name="PKG")) == []


@pytest.mark.parametrize(
    ("filename", "changes", "expected"),
    [
        (
            "pkg-0.1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
            {"version": "0.2.0+rocm7.2"},
            "version: expected 0.2.0+rocm7.2 (the plan's for job cp311-rocm7.2), found 0.1.0",
        ),
        (
            "pkg-1.0-cp313-cp313-manylinux_2_28_x86_64.whl",
            {},
            "python tag: expected cp311-cp311 (job cp311-rocm7.2's Python), found cp313-cp313",
        ),
        (
            "pkg-1.0-cp312-abi3-manylinux_2_28_x86_64.whl",
            {},
            "python tag: expected cp311-cp311 (job cp311-rocm7.2's Python), found cp312-abi3",
        ),
        (
            "pkg-1.0-py3-none-any.whl",
            {},
            "python tag: expected cp311-cp311 (job cp311-rocm7.2's Python), found py3-none",
        ),
        (
            "pkg-1.0-py3-none-any.whl",
            {},
            "platform tag: expected manylinux_2_28_x86_64 (job cp311-rocm7.2's policy), found any",
        ),
        (
            "pkg-1.0-cp311-cp311-manylinux_2_34_x86_64.whl",
            {},
            "platform tag: expected manylinux_2_28_x86_64 (job cp311-rocm7.2's policy), found "
            "manylinux_2_34_x86_64; auditwheel tags a wheel it cannot repair",
        ),
        (
            "pkg-1.0-cp311-cp311-linux_x86_64.manylinux_2_28_x86_64.whl",
            {},
            "platform tag: expected manylinux_2_28_x86_64 (job cp311-rocm7.2's policy), found "
            "linux_x86_64, manylinux_2_28_x86_64",
        ),
    ],
)
def test_job_identity_names_expected_and_found(filename: str, changes: dict[str, str], expected: str) -> None:
    found = job_findings(named(report(elf()), filename), identity(**changes))
    assert [m for sev, m in found if sev == "error" and m.startswith(expected)], found


def test_job_identity_name_mismatch_is_an_error() -> None:
    # the recipe's name is the wheel's distribution name (schema): another project's wheel fails
    v = evaluate(report(elf()), GateConfig(identity=identity(name="amd-aiter")))
    assert not v.passed
    assert [(f.rule, f.severity, f.message.split(";")[0]) for f in v.findings] == [
        ("job-identity", "error", "distribution name: expected amd-aiter (the recipe's name), found pkg")
    ]


def test_no_job_identity_rule_without_a_job() -> None:
    other = named(report(elf()), "other-9.9-py3-none-any.whl")
    assert GateConfig.from_flags(policy="manylinux_2_28").identity is None
    assert job_findings(other, GateConfig.from_flags().identity) == []


def test_from_recipe_job_takes_the_identity_the_plan_gives() -> None:
    from buildkit.plan import expand
    from buildkit.recipe import load_recipe

    recipe = load_recipe(Path(__file__).resolve().parents[2] / "recipes" / "aiter.yaml")
    job = expand(recipe, env={}).job("cp312-rocm7.2-torch2.10")
    cfg = GateConfig.from_recipe_job(recipe, job)
    assert cfg.identity == JobIdentity(
        job=job.id,
        version=job.version,
        python="cp312",
        platform_tag="manylinux_2_28_x86_64",
        name="amd-aiter",
        recipe=recipe.display_path,
        recipe_sha256=recipe.sha256,
    )
    assert cfg.to_json()["job"] == job.id and cfg.to_json()["recipe_sha256"] == recipe.sha256
    pure = named(report(), "amd_aiter-0.1.12.post2-py3-none-any.whl")
    v = evaluate(pure, cfg)
    assert {f.message.split(":")[0] for f in v.errors if f.rule == "job-identity"} == {
        "version",
        "python tag",
        "platform tag",
    }


def test_reference_jobs_repaired_wheel_name_passes_the_identity_rule() -> None:
    """The reference build's wheel: auditwheel repaired to manylinux_2_41 and added manylinux_2_34."""
    from buildkit.plan import expand
    from buildkit.recipe import load_recipe

    recipe = load_recipe(Path(__file__).resolve().parents[2] / "recipes" / "reference.yaml")
    job = expand(recipe, env={}).job("cp313-rocm5.7")
    name = f"buildkit_refkernels-{job.version}-cp313-cp313-manylinux_2_34_x86_64.manylinux_2_41_x86_64.whl"
    v = evaluate(named(report(elf()), name), GateConfig.from_recipe_job(recipe, job))
    assert not [f for f in v.errors if f.rule == "job-identity"], v.findings


# --------------------------------------------------------------------------- ROCm pin from flags
def test_from_flags_rocm_pins_the_releases_sonames() -> None:
    cfg = GateConfig.from_flags(rocm="rocm7.2")
    assert cfg.rocm == "7.2" and cfg.rocm_sonames["libamdhip64"] == "libamdhip64.so.7"
    assert GateConfig.from_flags().rocm_sonames == {}
    v = evaluate(
        report(elf(needed=("libc.so.6", "libamdhip64.so.5"))), replace(cfg, exclude_globs=("libamdhip64*",))
    )
    assert [(f.rule, f.library) for f in v.errors] == [("rocm-soname", "libamdhip64.so.5")]
    with pytest.raises(UsageError, match="known releases"):
        GateConfig.from_flags(rocm="9.9")


# --------------------------------------------------------------------------- one finding per library
def test_a_missing_library_is_one_finding_per_rule_naming_every_tag_and_member() -> None:
    a = elf("pkg/a.so", needed=("libc.so.6", "libamdhip64.so.5"))
    b = elf("pkg/b.so", needed=("libc.so.6", "libamdhip64.so.5"))
    v = evaluate(report(a, b, tag="manylinux_2_17_x86_64.manylinux_2_28_x86_64"), GateConfig())
    found = [f for f in v.errors if f.rule in ("platform-tag", "external-library")]
    assert [(f.rule, f.library, f.file) for f in found] == [
        ("platform-tag", "libamdhip64.so.5", "pkg/a.so"),
        ("external-library", "libamdhip64.so.5", "pkg/a.so"),
    ]
    tag, ext = found
    assert "manylinux_2_17_x86_64, manylinux_2_28_x86_64" in tag.message
    assert "pkg/a.so and pkg/b.so need libamdhip64.so.5" in tag.message
    assert ext.message.startswith("pkg/a.so and pkg/b.so need libamdhip64.so.5: not on the manylinux_2_17")


def test_symbol_versions_above_several_tags_are_one_finding_per_library() -> None:
    a = elf("pkg/a.so", needs={"libc.so.6": ("GLIBC_2.2.5", "GLIBC_2.35")})
    b = elf("pkg/b.so", needs={"libc.so.6": ("GLIBC_2.2.5", "GLIBC_2.30")})
    v = evaluate(report(a, b, tag="manylinux_2_17_x86_64.manylinux_2_28_x86_64"), GateConfig())
    (tag,) = [f for f in v.errors if f.rule == "platform-tag"]
    assert (tag.file, tag.library, tag.symbol) == ("pkg/a.so", "libc.so.6", "GLIBC_2.35")
    assert tag.message == (
        "file name claims manylinux_2_17_x86_64, manylinux_2_28_x86_64 but pkg/a.so requires GLIBC_2.35 "
        "from libc.so.6 (+1 other member(s) requiring lower versions the tags do not allow)"
    )
    # the ceiling rule still names each member and version
    assert sorted((f.file, f.symbol) for f in v.errors if f.rule == "ceiling") == [
        ("pkg/a.so", "GLIBC_2.35"),
        ("pkg/b.so", "GLIBC_2.30"),
    ]


def test_many_members_are_counted_not_all_named() -> None:
    elves = [elf(f"pkg/m{i}.so", needed=("libc.so.6", "libfoo.so.1")) for i in range(5)]
    v = evaluate(report(*elves), GateConfig(policy="manylinux_2_28"))
    (ext,) = [f for f in v.errors if f.rule == "external-library"]
    assert ext.message.startswith("pkg/m0.so, pkg/m1.so, pkg/m2.so and 2 more need libfoo.so.1:")


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0 B"), (1023, "1023 B"), (31402, "30.7 KiB"), (MiB - 1, "1024.0 KiB"), (20 * MiB, "20.0 MiB")],
)
def test_format_size_never_says_zero_mib(size: int, text: str) -> None:
    assert format_size(size) == text


def test_size_messages_use_readable_units() -> None:
    v = evaluate(report(elf(), size=2048), GateConfig(size_limit=1024))
    assert [f.message for f in v.errors] == ["wheel is 2.0 KiB, above the limit of 1.0 KiB"]
