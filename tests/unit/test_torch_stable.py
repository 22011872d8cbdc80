"""Torch extensions on the libtorch stable ABI (issue 40): the recipe mode and its plan, the build
flags and requirement it hands the build, the table of shim functions, the ``torch-stable-abi`` rule
(pure, over a wheel's needs and the table; then through ``check`` on a wheel gcc builds here, linking
a stand-in libtorch_cpu.so: no torch wheel in the unit tier) and the ``torch-pin`` rule's range."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.requirements import Requirement

from buildkit.building import cibw
from buildkit.cli.plan import plan
from buildkit.compare.torch_shim import declared
from buildkit.errors import RecipeError, UsageError
from buildkit.gate.config import GateConfig
from buildkit.gate.rules.torch import torch_range_problem
from buildkit.gate.torchabi import Needed, TorchNeeds
from buildkit.gate.torchshim import UNVERSIONED, judge_stable, shim_table, summary_line
from buildkit.judge import judge_wheels
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe
from buildkit.records import to_data
from tests.helpers.shared_library import have_gcc
from tests.helpers.wheel_zip import write_wheel

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "reference-torch-stable.yaml"
REFOPS = ROOT / "csrc" / "refops"
#: c10::Device::Device(std::string const&), the new C++ ABI: what the pinned reference needs
DEVICE = "_ZN3c106DeviceC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
MEMBER = "refops/_C.cpython-311-x86_64-linux-gnu.so"


def _needs(*names: str) -> TorchNeeds:
    links = ("libtorch_cpu.so",)
    return TorchNeeds((MEMBER,), tuple(Needed(n, MEMBER, links) for n in names))


# --------------------------------------------------------------------------- the table
def test_the_table_is_made_from_the_two_torch_wheels_and_knows_when_each_function_appeared() -> None:
    table = shim_table()
    wheels = table.source["wheels"]
    assert isinstance(wheels, list)
    assert [w["version"] for w in wheels] == ["2.13.0+cpu", "2.14.1+cu130"]
    assert all(len(w["sha256"]) == 64 and 0 < w["exported"] <= w["declared"] for w in wheels)
    f = table.functions
    # the release of each version block of torch/csrc/stable/c/shim.h (and pytorch's own list agrees)
    assert f["torch_call_dispatcher"] == f["torch_parallel_for"] == "2.10"
    assert f["torch_from_blob"] == "2.11"
    assert f["torch_library_def_with_tags"] == "2.12"
    assert f["torch_exception_get_what"] == "2.13"
    # outside any version block: in a torch before 2.10
    assert f["aoti_torch_abi_version"] == f["aoti_torch_get_dim"] == UNVERSIONED
    assert "2.14" in set(f.values())  # declared in 2.14.1's headers only


def test_the_header_parser_reads_version_blocks_and_multi_line_declarations() -> None:
    header = """
AOTI_TORCH_EXPORT int32_t aoti_torch_dtype_float32();
#if TORCH_FEATURE_VERSION >= TORCH_VERSION_2_11_0
AOTI_TORCH_EXPORT AOTITorchError
torch_from_blob(void* data, int64_t ndim);
#ifdef USE_CUDA
AOTI_TORCH_EXPORT AOTITorchError torch_cuda_thing(int x);
#endif
#else
AOTI_TORCH_EXPORT AOTITorchError torch_old_path(int x);
#endif
AOTI_TORCH_EXPORT AOTITorchError aoti_torch_get_dim(AtenTensorHandle t, int64_t* d);
"""
    assert declared(header) == {
        "aoti_torch_dtype_float32": UNVERSIONED,
        "torch_from_blob": "2.11",
        "torch_cuda_thing": "2.11",
        "torch_old_path": UNVERSIONED,
        "aoti_torch_get_dim": UNVERSIONED,
    }


# --------------------------------------------------------------------------- the judgement
def test_a_wheel_needing_the_shim_alone_serves_every_torch_from_its_lowest() -> None:
    needs = _needs("torch_call_dispatcher", "aoti_torch_get_dim", "torch_parallel_for", "PyModule_Create2")
    result = judge_stable(needs, "2.10", shim_table())
    assert not result.refused
    assert [n.name for n in result.others] == ["PyModule_Create2"]
    assert result.serves == "torch>=2.10"
    assert summary_line(result) == (
        "declared lowest torch 2.10: 3 shim function(s) needed, the newest from torch 2.10 "
        "(torch_parallel_for); serves torch>=2.10 (no upper bound)"
    )


def test_a_libtorch_cxx_symbol_is_refused_demangled_with_the_member() -> None:
    result = judge_stable(_needs("torch_call_dispatcher", DEVICE), "2.10", shim_table())
    (refused,) = result.refused
    assert refused.reason == "cxx" and refused.symbol.member == MEMBER
    assert refused.demangled.startswith("c10::Device::Device(std::__cxx11::basic_string<char")
    assert "-DTORCH_STABLE_ONLY" in refused.detail
    assert result.serves is None and "1 REFUSED" in summary_line(result)


def test_a_shim_function_newer_than_the_declared_lowest_torch_is_refused() -> None:
    """What a build targeting torch 2.13 (TORCH_TARGET_VERSION) gives: the stable headers' exception
    handling then calls torch_exception_get_what, which torch 2.10 does not have."""
    result = judge_stable(_needs("torch_call_dispatcher", "torch_exception_get_what"), "2.10", shim_table())
    (refused,) = result.refused
    assert refused.reason == "newer" and refused.symbol.name == "torch_exception_get_what"
    assert "appeared in torch 2.13, after the declared lowest torch 2.10" in refused.detail
    assert not judge_stable(_needs("torch_exception_get_what"), "2.13", shim_table()).refused


def test_a_torch_name_outside_the_shim_is_refused() -> None:
    result = judge_stable(_needs("torch_internal_helper", "THPVariable_Wrap"), "2.13", shim_table())
    assert [r.reason for r in result.refused] == ["not-shim", "cxx"]


def test_the_configuration_refuses_a_lowest_torch_before_the_versioned_shim() -> None:
    with pytest.raises(UsageError, match=r"2\.10"):
        GateConfig(torch_stable="2.9").validated()
    with pytest.raises(UsageError, match="not both"):
        GateConfig(torch="2.13", torch_stable="2.13").validated()
    assert GateConfig(torch_stable="2.13", torch_below="3.0").validated().torch_below == "3.0"


# --------------------------------------------------------------------------- through check
_FAKE_TORCH = """
extern "C" int torch_call_dispatcher(const char*, const char*, void*, unsigned long) { return 0; }
extern "C" const char* torch_exception_get_what() { return ""; }
namespace c10 { struct Device { Device(int); }; Device::Device(int) {} }
"""
_EXTENSION = """
extern "C" int torch_call_dispatcher(const char*, const char*, void*, unsigned long);
extern "C" const char* torch_exception_get_what();
namespace c10 { struct Device { Device(int); }; }
extern "C" int refops_call(int cxx) {
    if (cxx) { c10::Device d(cxx); }
    return torch_call_dispatcher("", "", 0, 0) + (torch_exception_get_what() != 0);
}
"""


@pytest.mark.skipif(not have_gcc(), reason="needs gcc")
def test_check_refuses_a_cxx_symbol_and_a_newer_shim_function_in_a_stable_wheel(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    for name, source in (("torch_cpu", _FAKE_TORCH), ("ext", _EXTENSION)):
        (tmp_path / f"{name}.cpp").write_text(source)
    subprocess.run(
        ["g++", "-shared", "-fPIC", "-o", lib / "libtorch_cpu.so", tmp_path / "torch_cpu.cpp",
         "-Wl,-soname,libtorch_cpu.so"],
        check=True,
    )  # fmt: skip
    ext = tmp_path / "_C.so"
    subprocess.run(
        ["g++", "-shared", "-fPIC", "-o", ext, tmp_path / "ext.cpp", f"-L{lib}", "-ltorch_cpu"], check=True
    )
    wheel = write_wheel(
        tmp_path / "refops-0.1.0-cp311-cp311-linux_x86_64.whl",
        {MEMBER: ext.read_bytes()},
        requires=["torch>=2.10"],
    )
    config = GateConfig(torch_stable="2.10", exclude_globs=("libtorch*.so*",))
    (verdict,), failures = judge_wheels([wheel], config)
    assert not failures
    errors = {f.symbol: f.message for f in verdict.errors if f.rule == "torch-stable-abi"}
    assert set(errors) == {"_ZN3c106DeviceC1Ei", "torch_exception_get_what"}
    assert errors["_ZN3c106DeviceC1Ei"].startswith(f"{MEMBER} needs c10::Device::Device(int) from torch")
    assert "appeared in torch 2.13" in errors["torch_exception_get_what"]
    assert not any(f.rule == "torch-pin" for f in verdict.findings)  # torch>=2.10 is the range
    assert verdict.torch_stable is not None and verdict.torch_stable.serves is None
    # the same wheel declared from 2.13: the newer function is in range, the C++ symbol is not
    (again,), _ = judge_wheels([wheel], config._replace(torch_stable="2.13"))
    assert {f.symbol for f in again.errors if f.rule == "torch-stable-abi"} == {"_ZN3c106DeviceC1Ei"}


# --------------------------------------------------------------------------- torch-pin's range
@pytest.mark.parametrize(
    ("requirement", "below", "problem"),
    [
        ("torch>=2.10", None, None),
        ("torch>=2.10.0", None, None),
        ("torch>=2.10,<3", "3.0", None),
        ("torch", None, "also admits any older torch"),
        ("torch>=2.9", None, "also admits torch below 2.10"),
        ("torch>=2.11", None, "does not admit torch 2.10.0"),
        ("torch==2.10.*", None, "bounds torch from above"),
        ("torch>=2.10", "3.0", "admits torch 3.0 or later"),
        ("torch>=2.10,<=3.0", "3.0", "admits torch 3.0 or later"),
    ],
)
def test_the_torch_requirement_of_a_stable_wheel_is_its_range(
    requirement: str, below: str | None, problem: str | None
) -> None:
    found = torch_range_problem(Requirement(requirement), "2.10", below, python="==3.11.*")
    assert (found is None) if problem is None else (found is not None and problem in found), found


# --------------------------------------------------------------------------- the recipe and the plan
def test_the_stable_reference_plans_one_job_without_torch_with_the_stable_only_flags() -> None:
    recipe = load_recipe(RECIPE)
    (job,) = expand(recipe, env={}).jobs
    assert (job.id, job.torch, job.version) == ("cp311-rocm7.2", None, "0.1.0+rocm7.2.manylinux.2.31")
    assert job.torch_requirement == "torch==2.13.*"  # built against the lowest torch served
    flags = "-DTORCH_STABLE_ONLY -DTORCH_TARGET_VERSION=0x020d000000000000"
    for var in ("CPPFLAGS", "CXXFLAGS", "HIPFLAGS", "HIPCC_COMPILE_FLAGS_APPEND"):
        assert job.env[var] == flags, var
    settings = cibw.CibwSettings(
        image="rocm-buildkit/debian-sid-rocm:0123456789ab",
        source_date_epoch=1700000000,
        ccache_volume=None,
        with_ca_bundle=False,
        network=False,
    )
    env = cibw.container_environment(job, settings)  # what the build container gets
    assert env["BUILDKIT_TORCH_REQUIREMENT"] == "torch>=2.13"
    assert env["CXXFLAGS"] == env["CPPFLAGS"] == flags
    assert env["HIPCC_COMPILE_FLAGS_APPEND"].startswith("--sysroot=")  # the sysroot's, then torch's
    assert env["HIPCC_COMPILE_FLAGS_APPEND"].endswith(flags)
    config = GateConfig.from_job(job, recipe)
    assert (config.torch, config.torch_stable, config.torch_below) == (None, "2.13", None)
    assert to_data(job)["torch_stable"] == {"from": "2.13", "requirement": "torch>=2.13"}


_MATRIX = """
name: demo
source: {{path: .}}
version: {{base: "1.0", local: "{local}"}}
python: ["3.13", "3.14"]
rocm: ["7.2"]
torch: {torch}
archs: {{list: [gfx942]}}
manylinux: {{policy: manylinux_2_31, sysroot: glibc2.31}}
image: debian-sid-rocm
"""
PINNED = "[" + ", ".join(f'{{version: "2.{m}", pip_config: true}}' for m in (10, 11, 12)) + "]"


def test_plan_prints_the_job_counts_of_three_torch_minors_pinned_and_stable(
    tmp_path: Path,
) -> None:
    (tmp_path / "pinned.yaml").write_text(_MATRIX.format(local="rocm{rocm}.torch{torch}", torch=PINNED))
    stable = '{abi: stable, from: "2.10", pip_config: true}'
    (tmp_path / "stable.yaml").write_text(_MATRIX.format(local="rocm{rocm}", torch=stable))
    abi3 = _MATRIX.format(local="rocm{rocm}", torch=stable) + 'wheel: {abi: abi3, from: "3.13"}\n'
    (tmp_path / "abi3.yaml").write_text(abi3)
    heads = {}
    for name in ("pinned", "stable", "abi3"):
        out = CliRunner().invoke(plan, [str(tmp_path / f"{name}.yaml")])
        assert out.exit_code == 0, out.output
        heads[name] = out.output.splitlines()[0]
    assert ": 6 jobs, 0 skipped" in heads["pinned"]  # 2 Pythons x 3 torch minors
    assert ": 2 jobs, 0 skipped" in heads["stable"]  # 2 Pythons, every torch from 2.10
    assert ": 1 job, 0 skipped" in heads["abi3"]  # one cp313-abi3 wheel for both Pythons and every torch


@pytest.mark.parametrize(
    ("torch", "local", "message"),
    [
        ('{abi: stable, from: "2.9"}', "rocm{rocm}", "older than 2.10"),
        ('{abi: stable, from: "2.10", below: "2.10"}', "rocm{rocm}", "is not above from"),
        ('{abi: stable, from: "2.10"}', "rocm{rocm}.torch{torch}", "names none"),
        ('{abi: stable, from: "2.10", pip_config: true, index_url: "https://x/y"}', "", "both index_url"),
    ],
)
def test_stable_recipe_mistakes(tmp_path: Path, torch: str, local: str, message: str) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_text(_MATRIX.format(local=local, torch=torch))
    with pytest.raises(RecipeError, match=message):
        load_recipe(path)


# --------------------------------------------------------------------------- the reference's build
def test_the_reference_builds_the_stable_source_and_its_range(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sys.path.insert(0, str(REFOPS))
    import torchbuild

    sources = ["src/ops.cpp", "src/ops_stable.cpp", "src/rms_norm.hip"]
    assert torchbuild.torch_sources(sources, {}) == ["src/ops.cpp", "src/rms_norm.hip"]
    stable = {"REFOPS_TORCH_ABI": "stable"}
    assert torchbuild.torch_sources(sources, stable) == ["src/ops_stable.cpp", "src/rms_norm.hip"]
    assert torchbuild.TORCH_LIBRARIES["stable"] == ("torch_cpu",)
    monkeypatch.setenv("REFOPS_TORCH_ABI", "stable")
    monkeypatch.setenv("BUILDKIT_TORCH_REQUIREMENT", "torch>=2.13")
    assert torchbuild.torch_requirement() == "torch>=2.13"


def test_check_options_replace_the_jobs_torch_mode() -> None:
    """``check --recipe --job --torch-stable F`` over a pinned job judges its wheel as stable-ABI (the
    pinned reference refused by the stable gate), and ``--torch X.Y`` over a stable-ABI job the other way."""
    from buildkit.gate.options import apply_options

    pinned = GateConfig(torch="2.13")
    stable = apply_options(pinned, {"torch_stable": "2.13"})
    assert (stable.torch, stable.torch_stable) == (None, "2.13")
    back = apply_options(stable._replace(torch_below="3.0"), {"torch": "2.13"})
    assert (back.torch, back.torch_stable, back.torch_below) == ("2.13", None, None)


def test_the_stable_range_and_flags_as_torch_spells_them() -> None:
    """TORCH_TARGET_VERSION as torch/csrc/stable/version.h and torchaudio write it (0x020a... for 2.10)."""
    from buildkit.recipe import TorchStable

    assert TorchStable("2.10").target_version == "0x020a000000000000"
    assert TorchStable("2.13").flags == "-DTORCH_STABLE_ONLY -DTORCH_TARGET_VERSION=0x020d000000000000"
    assert TorchStable("2.10", below="3.0").requirement == "torch>=2.10,<3.0"
    assert TorchStable("2.10", below="3.0").build_requirement == "torch==2.10.*"
