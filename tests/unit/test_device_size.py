"""Device code per gfx target (:mod:`buildkit.gate.device`): bytes per target and per member, each
offload bundle plain or compressed, the ``size-per-target`` budget and the ``offload-compress`` advice,
on real bundles: code objects compiled by clang-19 for gfx90a and gfx942, bundled by
clang-offload-bundler-19 (plain, and ``-compress``: a CCOB) and placed in the ``.hip_fatbin`` of a
gcc-built library. The recipe's ``offload_compress`` reaching the build's flags is a unit test below.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from buildkit.building.cibw import CibwSettings, container_environment
from buildkit.gate.config import GateConfig
from buildkit.gate.report import load_schema
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe
from buildkit.records import to_data
from buildkit.service.check import GateFlags, config_for_job
from tests.helpers.amdgpu_toolchain import LLVM_BIN, have_llvm
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_zip import write_wheel

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ("gfx90a", "gfx942")
#: a kernel file big enough for a code object of about 250 KiB per target (-O0: a third of -O2's compile time)
KERNELS = "\n".join(
    f"void k{i}(float *x, int n) {{ for (int j = 0; j < n; ++j) x[j] = x[j] * {i}.5f + x[j + {i}] / "
    f"(x[j] + {i}.25f); }}"
    for i in range(200)
)


class Bundles:
    def __init__(self, work: Path) -> None:
        work.mkdir(parents=True, exist_ok=True)
        (work / "k.c").write_text(KERNELS)
        (work / "host.o").write_bytes(b"")
        self.code_objects: dict[str, Path] = {}
        for target in TARGETS:
            obj, co = work / f"{target}.o", work / f"{target}.co"
            clang = [str(LLVM_BIN / "clang"), "--target=amdgcn-amd-amdhsa", f"-mcpu={target}", "-nogpulib"]
            subprocess.run([*clang, "-O0", "-c", str(work / "k.c"), "-o", str(obj)], check=True)
            subprocess.run([str(LLVM_BIN / "ld.lld"), "-shared", str(obj), "-o", str(co)], check=True)
            self.code_objects[target] = co
        ids = ["host-x86_64-unknown-linux-gnu-", *(f"hipv4-amdgcn-amd-amdhsa--{t}" for t in TARGETS)]
        inputs = [work / "host.o", *self.code_objects.values()]
        for name, extra in (("plain", []), ("ccob", ["-compress"])):
            cmd = [str(LLVM_BIN / "clang-offload-bundler"), "-type=o", f"-targets={','.join(ids)}"]
            cmd += [f"-input={i}" for i in inputs] + [f"-output={work / name}", *extra]
            subprocess.run(cmd, check=True, capture_output=True)
        self.plain = (work / "plain").read_bytes()
        self.ccob = (work / "ccob").read_bytes()

    def size(self, target: str) -> int:
        return self.code_objects[target].stat().st_size


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> Bundles:
    if not (have_llvm() and have_gcc()):
        pytest.skip("clang-19, lld-19, clang-tools-19 and gcc make the bundles (apt-get install ...)")
    return Bundles(tmp_path_factory.mktemp("bundles"))


def _fatbin(*parts: bytes) -> bytes:
    """Bundles one after the other, each at a 4096-byte boundary (as clang lays out .hip_fatbin)."""
    out = b""
    for part in parts:
        out += b"\0" * (-len(out) % 4096) + part
    return out


@pytest.fixture(scope="module")
def wheel(bundles: Bundles, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One member with three plain bundles (three translation units), one with a CCOB of the same."""
    work = tmp_path_factory.mktemp("wheel")
    plain = build_shared_library(
        work / "p.so", "int f(void){return 1;}\n", fatbin=_fatbin(*[bundles.plain] * 3)
    )
    packed = build_shared_library(work / "c.so", "int g(void){return 2;}\n", fatbin=_fatbin(bundles.ccob))
    path = work / "demo-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    members = {"demo/_plain.cpython-312-x86_64-linux-gnu.so": plain.read_bytes()}
    members["demo/_packed.cpython-312-x86_64-linux-gnu.so"] = packed.read_bytes()
    return write_wheel(path, members)


def check(wheel: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", "check", str(wheel), *flags],
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def test_bytes_per_target_member_and_bundle(wheel: Path, bundles: Bundles) -> None:
    result = check(wheel, "--json")
    data = json.loads(result.stdout)
    jsonschema.validate(data, load_schema())
    device = data["wheels"][0]["device_code"]
    plain, packed = (
        "demo/_plain.cpython-312-x86_64-linux-gnu.so",
        "demo/_packed.cpython-312-x86_64-linux-gnu.so",
    )
    rows = {(m["file"], m["target"]): m for m in device["members"]}
    for target in TARGETS:
        size = bundles.size(target)
        # plain bundles: the code objects as they are, three times (three bundles)
        assert rows[(plain, target)] == {
            "file": plain,
            "target": target,
            "bytes": 3 * size,
            "stored": 3 * size,
        }
        # the CCOB: the code objects' own size, and a share of the compressed bundle
        assert rows[(packed, target)]["bytes"] == size
        assert rows[(packed, target)]["stored"] < size / 5
    shares = sum(rows[(packed, t)]["stored"] for t in TARGETS)
    assert len(bundles.ccob) - len(TARGETS) <= shares <= len(bundles.ccob)  # the whole CCOB, shared out
    totals = {t["target"]: t for t in device["targets"]}
    assert list(totals) == list(TARGETS)
    assert totals["gfx942"]["bytes"] == 4 * bundles.size("gfx942")
    assert totals["gfx942"]["stored"] == 3 * bundles.size("gfx942") + rows[(packed, "gfx942")]["stored"]

    kinds = [(b["file"], b["index"], b["compression"]) for b in device["bundles"]]
    assert kinds == [(packed, 0, "zstd"), (plain, 0, None), (plain, 1, None), (plain, 2, None)]
    ccob = device["bundles"][0]
    assert ccob["stored"] <= len(bundles.ccob) and ccob["saving"] == 0 and ccob["estimate"] is None
    for b in device["bundles"][1:]:  # what compressing would save, against what clang's -compress made
        real = len(bundles.plain) - len(bundles.ccob)
        assert 0.8 * real <= b["saving"] <= 1.1 * real, (b, real)


def test_the_human_report_gives_mib_per_target_and_the_advice(wheel: Path, bundles: Bundles) -> None:
    result = check(wheel)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    [head] = [line for line in lines if line.startswith("  device code: ")]
    assert head.endswith("in 2 member(s), 4 offload bundle(s): 3 plain, 1 compressed (CCOB)")
    [row] = [line for line in lines if line.strip().startswith("gfx90a ")]
    assert "(code objects " in row  # stored differs from the code objects' size: one bundle is a CCOB
    [advice] = [line for line in lines if "[offload-compress]" in line]
    assert "demo/_plain.cpython-312-x86_64-linux-gnu.so: 3 uncompressed offload bundles hold" in advice
    assert "clang's --offload-compress (the recipe's offload_compress: true) would save about" in advice
    assert not [line for line in lines if "[offload-compress]" in line and "_packed" in line]
    verbose = check(wheel, "-v").stdout
    assert "demo/_packed.cpython-312-x86_64-linux-gnu.so bundle 0: compressed (zstd)" in verbose
    assert "demo/_plain.cpython-312-x86_64-linux-gnu.so bundle 2: plain" in verbose


def test_a_size_budget_per_target(wheel: Path) -> None:
    """``--size-per-target``: the target whose device code takes more fails, naming it and where."""
    totals = json.loads(check(wheel, "--json").stdout)["wheels"][0]["device_code"]["targets"]
    stored = sorted((t["stored"], t["target"]) for t in totals)
    assert stored[0][0] < stored[1][0]
    limit = (stored[0][0] + stored[1][0]) // 2  # one target above, one below
    result = check(wheel, "--size-per-target", str(limit), "--json")
    assert result.returncode == 7
    findings = json.loads(result.stdout)["wheels"][0]["findings"]
    errors = [f for f in findings if f["rule"] == "size-per-target"]
    assert [f["symbol"] for f in errors] == [stored[1][1]]
    assert errors[0]["severity"] == "error"
    members = "demo/_packed.cpython-312-x86_64-linux-gnu.so, demo/_plain.cpython-312-x86_64-linux-gnu.so"
    assert f"{stored[1][1]} device code takes " in errors[0]["message"] and members in errors[0]["message"]
    assert check(wheel, "--size-per-target", str(stored[1][0])).returncode == 0


def test_the_recipe_budget_per_target_and_the_check_flag_reach_the_configuration(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        "name: demo\nsource: {path: .}\nversion: {base: '1.0'}\npython: ['3.12']\nrocm: ['6.4']\n"
        "archs: {list: [gfx90a]}\nmanylinux: {policy: manylinux_2_28}\nimage: manylinux_2_28-rocm\n"
        "size_budget: {per_target: 40MiB}\n"
    )
    loaded = load_recipe(recipe)
    job = expand(loaded).jobs[0]
    assert GateConfig.from_job(job, loaded).size_per_target == 40 * 1024 * 1024
    assert config_for_job(loaded, job, GateFlags(size_per_target="2MiB")).size_per_target == 2 * 1024 * 1024
    config = GateConfig.from_job(job, loaded)
    assert GateConfig.from_json(to_data(config)) == config._replace(identity=config.identity)


def test_offload_compress_reaches_hipcc_and_cmake_flags(tmp_path: Path) -> None:
    """The recipe's ``offload_compress: true``: clang's --offload-compress after the recipe's own
    flags in HIPCC_COMPILE_FLAGS_APPEND / HIPCC_LINK_FLAGS_APPEND / HIPFLAGS, in the job's environment
    and in the container's (unit: no compile here)."""
    base = (
        "name: demo\nsource: {path: .}\nversion: {base: '1.0'}\npython: ['3.12']\nrocm: ['6.4']\n"
        "archs: {list: [gfx90a]}\nmanylinux: {policy: manylinux_2_28}\nimage: manylinux_2_28-rocm\n"
    )
    recipe = tmp_path / "r.yaml"
    recipe.write_text(base + "offload_compress: true\nenv: {HIPCC_COMPILE_FLAGS_APPEND: '-O3 -g0'}\n")
    job = expand(load_recipe(recipe)).jobs[0]
    assert job.env["HIPCC_COMPILE_FLAGS_APPEND"] == "-O3 -g0 --offload-compress"
    assert job.env["HIPCC_LINK_FLAGS_APPEND"] == "--offload-compress"
    assert job.env["HIPFLAGS"] == "--offload-compress"
    settings = CibwSettings(
        image="builder:tag", source_date_epoch=1, ccache_volume=None, with_ca_bundle=False
    )
    env = container_environment(job, settings)
    assert env["HIPCC_COMPILE_FLAGS_APPEND"] == "-O3 -g0 --offload-compress"
    assert env["HIPFLAGS"] == "--offload-compress"
    recipe.write_text(base)
    plain = expand(load_recipe(recipe)).jobs[0]
    assert not {"HIPCC_COMPILE_FLAGS_APPEND", "HIPCC_LINK_FLAGS_APPEND", "HIPFLAGS"} & set(plain.env)


def test_offload_compress_with_a_clang_too_old_is_noted_at_plan_time(tmp_path: Path) -> None:
    """Debian trixie's clang 17 refuses --offload-compress (measured: ``clang++-17: error: unsupported
    option '--offload-compress'`` in the reference build): the plan says so before any build."""
    recipe = tmp_path / "r.yaml"
    text = (
        (ROOT / "recipes" / "reference-trixie.yaml")
        .read_text()
        .replace("path: ../csrc", f"path: {ROOT / 'csrc'}")
    )
    recipe.write_text(text + "offload_compress: true\n")
    notes = expand(load_recipe(recipe)).notes
    [note] = [n for n in notes if n.startswith("offload_compress: true")]
    assert "needs LLVM 18 or later; toolchain debian-trixie has LLVM 17" in note
    recipe.write_text(text)
    assert not [n for n in expand(load_recipe(recipe)).notes if n.startswith("offload_compress")]
