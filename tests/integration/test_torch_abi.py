"""The ``torch-abi`` rule on real artifacts: torch 2.13.0+cpu and torch 2.14.1 (CUDA) wheels as pip
serves them (pinned sha256, cached), and a torch extension compiled here against torch 2.13's headers
(tests/helpers/torch_ext.py). It passes against the torch it was built with, and fails for the right
reason: the other ``_GLIBCXX_USE_CXX11_ABI``, an op torch 2.14 removed, a signature it changed, a
library not linked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from buildkit.compare.diff import diff_wheels, render_human
from buildkit.compare.torch_exports import load_torch_exports, torch_wheel_exports
from buildkit.gate.report import load_schema, to_json
from buildkit.gate.report import render_human as render_verdict
from buildkit.judge import judge_wheels
from buildkit.service.check import GateFlags, gate_config
from tests.helpers.torch_ext import MEMBER, TORCH_2_14_1, Subjects, build_subjects, torch_wheel

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
NEEDED = {
    "at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar const&)",
    "at::_ops::mul_Scalar::call(at::Tensor const&, c10::Scalar const&)",
    "c10::UndefinedTensorImpl::_singleton",
    "c10::TensorImpl::decref_pyobject() const",
}


@pytest.fixture(scope="session")
def subjects(tmp_path_factory: pytest.TempPathFactory) -> Subjects:
    return build_subjects(tmp_path_factory.mktemp("torchabi"))


@pytest.fixture(scope="session")
def torch_2_14(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return torch_wheel(TORCH_2_14_1)


def gate(wheel: Path, torch: Path):  # type: ignore[no-untyped-def]
    config = gate_config(GateFlags(exclude_sets=("torch",), torch_abi=str(torch)))
    verdicts, failures = judge_wheels([wheel], config, torch=load_torch_exports(str(torch)))
    assert not failures, failures
    return verdicts[0]


def torch_errors(verdict) -> list[str]:  # type: ignore[no-untyped-def]
    return [f.message for f in verdict.errors if f.rule == "torch-abi"]


def test_the_extension_passes_against_the_torch_it_was_built_with(subjects: Subjects) -> None:
    v = gate(subjects.base, subjects.torch)
    assert v.passed, render_verdict(v, verbose=True)
    result = v.torch_abi
    assert result is not None
    assert result.linking == (MEMBER,)
    assert len(result.needed) == result.found == 9
    assert [n.name for n in result.others] == ["PyModule_Create2"]  # libpython's: left to it
    assert result.torch.version == "2.13.0+cpu" and result.torch.cxx11_abi is True
    text = render_verdict(v, verbose=True)
    assert "torch ABI: checked against torch 2.13.0+cpu (torch-2.13.0+cpu-cp311" in text
    assert "9 symbol(s) needed from torch, 9 exported" in text
    for name in NEEDED:
        assert f"found   {name}" in text
    jsonschema.validate(to_json([v]), load_schema())


def test_the_other_cxx11_abi_fails_and_is_named_as_such(subjects: Subjects) -> None:
    v = gate(subjects.abi0, subjects.torch)
    assert not v.passed
    errors = torch_errors(v)
    assert len(errors) == 2, errors  # the two functions taking a std::string
    device = next(e for e in errors if "c10::Device::Device(std::string const&)" in e)
    assert device.startswith(
        f"{MEMBER} needs c10::Device::Device(std::string const&) from torch, which torch"
    )
    assert (
        "torch 2.13.0+cpu (torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl) does not export" in device
    )
    assert (
        "a _GLIBCXX_USE_CXX11_ABI mismatch: libc10.so exports it as c10::Device::Device(std::__cxx11::"
        in device
    )
    assert "was compiled with _GLIBCXX_USE_CXX11_ABI=0" in device
    assert any(
        "c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&)" in e
        for e in errors
    )
    assert {f.symbol for f in v.errors if f.rule == "torch-abi"} == {
        "_ZN3c106DeviceC1ERKSs",
        "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs",
    }
    assert v.torch_abi is not None and v.torch_abi.abi_mismatch
    assert {m.reason for m in v.torch_abi.missing} == {"abi"}
    assert "(a _GLIBCXX_USE_CXX11_ABI mismatch)" in render_verdict(v)


def test_a_library_the_member_does_not_link_is_named(subjects: Subjects) -> None:
    v = gate(subjects.unlinked, subjects.torch)
    assert v.torch_abi is not None
    reasons = {m.demangled: m for m in v.torch_abi.missing}
    add = reasons["at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar const&)"]
    assert add.reason == "unlinked" and add.library == "libtorch_cpu.so"
    assert "which " + MEMBER + " does not link (it links libc10.so): add -ltorch_cpu" in add.detail
    assert all(m.reason == "unlinked" for m in v.torch_abi.missing)


def test_the_old_api_subject_loads_with_2_13(subjects: Subjects) -> None:
    v = gate(subjects.old_api, subjects.torch)
    assert v.passed, render_verdict(v, verbose=True)
    assert v.torch_abi is not None and v.torch_abi.found == 11


def test_against_torch_2_14_1(subjects: Subjects, torch_2_14: Path) -> None:
    """torch 2.14.1 (cu130) exports every symbol of the base extension; the one using at::qr and
    at::toDLPackNonOwning fails: qr is gone, toDLPackNonOwning gained a parameter."""
    base = gate(subjects.base, torch_2_14)
    assert base.passed, render_verdict(base, verbose=True)
    assert base.torch_abi is not None and base.torch_abi.found == 9
    assert base.torch_abi.torch.version == "2.14.1+cu130"
    old = gate(subjects.old_api, torch_2_14)
    assert not old.passed
    assert old.torch_abi is not None
    reasons = {m.demangled: m for m in old.torch_abi.missing}
    assert set(reasons) == {
        "at::_ops::qr::call(at::Tensor const&, bool)",
        "at::toDLPackNonOwning(at::Tensor const&, DLTensor*)",
    }
    assert reasons["at::_ops::qr::call(at::Tensor const&, bool)"].reason == "absent"
    dl = reasons["at::toDLPackNonOwning(at::Tensor const&, DLTensor*)"]
    assert dl.reason == "signature"
    assert "at::toDLPackNonOwning(at::Tensor const&, DLTensor*, bool)" in dl.detail
    assert all("torch 2.14.1+cu130 (torch-2.14.1-cp311" in e for e in torch_errors(old))


def test_check_cli_exit_codes(subjects: Subjects, tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        cmd = [sys.executable, "-m", "buildkit", "check", *args, "--exclude-set", "torch"]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path)

    ok = run(str(subjects.base), "--torch-abi", str(subjects.torch))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = run(str(subjects.abi0), "--torch-abi", str(subjects.torch), "--json")
    assert bad.returncode == 7, bad.stderr
    doc = json.loads(bad.stdout)
    missing = doc["wheels"][0]["torch_abi"]["missing"]
    assert {m["reason"] for m in missing} == {"abi"} and doc["wheels"][0]["config"]["torch_abi"] == str(
        subjects.torch
    )
    not_torch = run(str(subjects.base), "--torch-abi", str(subjects.base))
    assert (
        not_torch.returncode == 2
        and "not a torch wheel (its distribution is torchabi-demo)" in not_torch.stderr
    )
    assert "Traceback" not in not_torch.stderr
    broken = tmp_path / "torch-2.13.0-cp311-cp311-linux_x86_64.whl"
    broken.write_bytes(subjects.torch.read_bytes()[:4096])
    unreadable = run(str(subjects.base), "--torch-abi", str(broken))
    assert unreadable.returncode == 6, unreadable.stderr
    assert (
        "--torch-abi torch-2.13.0-cp311-cp311-linux_x86_64.whl: the torch wheel cannot be read"
        in unreadable.stderr
    )
    absent = run(str(subjects.base), "--torch-abi", str(tmp_path / "nope.whl"))
    assert absent.returncode == 2 and "no such file" in absent.stderr


def test_exports_are_cached_per_sha256(subjects: Subjects, tmp_path: Path) -> None:
    start = time.perf_counter()
    cold = torch_wheel_exports(subjects.torch, cache=tmp_path)
    cold_s = time.perf_counter() - start
    assert (
        not cold.cached and cold.sha256 == "6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{cold.sha256}.json.zst", "stat"]
    assert [p.read_text() for p in (tmp_path / "stat").iterdir()] == [cold.sha256 + "\n"]
    start = time.perf_counter()
    warm = torch_wheel_exports(subjects.torch, cache=tmp_path)
    warm_s = time.perf_counter() - start
    assert warm.cached and warm.exports == cold.exports and warm.version == cold.version
    assert warm_s < cold_s
    libtorch = next(lib for lib in cold.libraries if lib.name == "libtorch_cpu.so")
    assert len(libtorch.exported) == 74264 and libtorch.needed[0] == "libc10.so"
    (tmp_path / f"{cold.sha256}.json.zst").write_bytes(b"damaged")
    assert not torch_wheel_exports(subjects.torch, cache=tmp_path).cached  # read again, rewritten
    assert torch_wheel_exports(subjects.torch, cache=tmp_path).cached


def test_reading_the_190mb_torch_wheel_stays_small(subjects: Subjects, tmp_path: Path) -> None:
    """The rule reads only the dynamic symbol tables: peak RSS stays under 100 MiB (a separate
    process, so the figure is the rule's own); the time is bench/torch_abi.py's business."""
    code = (
        "import sys; from pathlib import Path\n"
        "from buildkit.compare.torch_exports import torch_wheel_exports\n"
        "e = torch_wheel_exports(Path(sys.argv[1]), cache=Path(sys.argv[2]))\n"
        # VmHWM: this process's own peak (ru_maxrss would count the forked pytest before exec)
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]\n"
        "print(len(e.exports), hwm)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", code, str(subjects.torch), str(tmp_path)],
        capture_output=True, text=True, env=env, check=True,
    ).stdout.split()  # fmt: skip
    exports, rss_kib = int(out[0]), int(out[1])
    assert exports == 77699  # distinct names over the 11 libraries of torch/lib
    assert rss_kib < 100 * 1024, f"peak RSS {rss_kib / 1024:.0f} MiB"


def test_diff_reports_the_symbols_needed_from_torch(subjects: Subjects) -> None:
    d = diff_wheels(subjects.base, subjects.old_api)
    assert d.torch_added == (
        "at::_ops::qr::call(at::Tensor const&, bool)",
        "at::toDLPackNonOwning(at::Tensor const&, DLTensor*)",
    )
    assert d.torch_removed == ()
    text = render_human(d)
    assert "symbols needed from torch: +2 -0" in text
    assert "  + at::_ops::qr::call(at::Tensor const&, bool)" in text
    back = diff_wheels(subjects.old_api, subjects.base)
    assert back.torch_removed == d.torch_added and back.torch_added == ()


def test_an_installed_torch_folder(subjects: Subjects, tmp_path: Path) -> None:
    """``--torch-abi DIR``: the torch package of a site-packages (here: unpacked from the wheel)."""
    import zipfile

    with zipfile.ZipFile(subjects.torch) as zf:
        zf.extractall(tmp_path, members=["torch/version.py", "torch/__init__.py", "torch/lib/libc10.so"])
    exports = load_torch_exports(tmp_path)
    assert exports.kind == "folder" and exports.version == "2.13.0+cpu"
    assert [lib.name for lib in exports.libraries] == ["libc10.so"]
    assert "_ZN3c106DeviceC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE" in exports.exports
