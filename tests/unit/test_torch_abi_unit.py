"""The ``torch-abi`` rule's parts that need no torch wheel: the name tests, the ABI-neutral spelling,
the demanglers, the streamed symbol table of libraries gcc builds here (checked against readelf), the
job hook, the configuration, and the image reader over a stand-in container (no engine here: the
shared engine is busy; the real image run is left to a docker test)."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from buildkit.compare.torch_exports import load_torch_exports
from buildkit.errors import UsageError
from buildkit.gate.config import GateConfig, gate_key
from buildkit.gate.demangle import cxa_demangle, demangle
from buildkit.gate.torchabi import (
    Needed,
    TorchExports,
    TorchLibrary,
    TorchNeeds,
    abi_neutral,
    judge,
    qualified_name,
    torch_owned,
)
from buildkit.image import torch as image_torch
from buildkit.inspect.symtab import read_symbol_table, wheel_symbol_tables
from buildkit.records import to_data
from buildkit.service.check import GateFlags, gate_config
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_zip import write_wheel

DEVICE_OLD = "_ZN3c106DeviceC1ERKSs"
DEVICE_NEW = "_ZN3c106DeviceC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"


@pytest.mark.parametrize(
    ("name", "owned"),
    [
        (DEVICE_OLD, True),
        ("_ZNK2at10TensorBase4sizeEl", True),
        ("_ZTVN5torch8autograd4NodeE", True),  # vtable for torch::autograd::Node
        ("_ZN6caffe29serialize14IStreamAdapterC1EPSi", True),
        ("_Z16THPVariable_WrapRKN2at10TensorBaseE", True),
        ("THPVariableClass", True),
        ("PyModule_Create2", False),
        ("_ZNSt6vectorIiSaIiEE9push_backERKi", False),  # std::
        ("_ZN3atx3fooEv", False),  # the scope "atx" is not "at"
        ("rocblas_sgemm", False),
    ],
)
def test_torch_owned(name: str, owned: bool) -> None:
    assert torch_owned(name) is owned


def test_both_abis_spell_alike_once_neutral() -> None:
    for fn in (demangle, cxa_demangle()):
        assert fn is not None
        old, new = fn(DEVICE_OLD), fn(DEVICE_NEW)
        assert old == "c10::Device::Device(std::string const&)"
        assert "std::__cxx11::basic_string" in new
        assert abi_neutral(old) == abi_neutral(new)


def test_qualified_name() -> None:
    assert qualified_name("at::toDLPackNonOwning(at::Tensor const&, DLTensor*)") == "at::toDLPackNonOwning"
    assert qualified_name("void c10::foo<int (int)>(int) const") == "c10::foo<int (int)>"
    assert qualified_name("c10::UndefinedTensorImpl::_singleton") == "c10::UndefinedTensorImpl::_singleton"


def test_demangle_leaves_c_names_and_garbage() -> None:
    assert demangle("PyModule_Create2") == "PyModule_Create2"
    assert (
        demangle("_ZTVN3c1011VariableVersion14VersionCounterE")
        == "_ZTVN3c1011VariableVersion14VersionCounterE"
    )


def _exports(*libs: TorchLibrary) -> TorchExports:
    return TorchExports("torch-x.whl", "wheel", "9.9", libs, filename="torch-x.whl")


def test_judge_attributes_each_symbol() -> None:
    """The judgement's bookkeeping on named data (the real cases are tests/integration/test_torch_abi.py)."""
    c10 = TorchLibrary("libc10.so", "libc10.so", (), frozenset({DEVICE_NEW}))
    cpu = TorchLibrary("libtorch_cpu.so", "libtorch_cpu.so", ("libc10.so",), frozenset({"_ZN2at3fooEv"}))
    needs = TorchNeeds(
        ("m.so",),
        (
            Needed(DEVICE_NEW, "m.so", ("libtorch_cpu.so",)),  # found through libtorch_cpu's DT_NEEDED
            Needed(DEVICE_OLD, "m.so", ("libtorch_cpu.so",)),  # the other ABI
            Needed("_ZN2at3fooEv", "m.so", ("libc10.so",)),  # exported, not linked
            Needed("_ZN2at3barEv", "m.so", ("libc10.so",)),  # absent
            Needed("PyModule_Create2", "m.so", ("libc10.so",)),  # libpython's
        ),
    )
    result = judge(needs, _exports(c10, cpu))
    assert result.found == 1 and len(result.needed) == 4
    assert [n.name for n in result.others] == ["PyModule_Create2"]
    assert [(m.symbol.name, m.reason) for m in result.missing] == [
        (DEVICE_OLD, "abi"),
        ("_ZN2at3fooEv", "unlinked"),
        ("_ZN2at3barEv", "absent"),
    ]
    assert "_GLIBCXX_USE_CXX11_ABI=0" in result.missing[0].detail


def test_a_path_that_is_not_there_and_an_image_without_a_reader() -> None:
    with pytest.raises(UsageError, match="no such file"):
        load_torch_exports("./nope/torch-2.13.0-cp311-cp311-linux_x86_64.whl")
    with pytest.raises(UsageError, match="as an image it needs a Docker engine"):
        load_torch_exports("rocm/vllm:latest")
    seen = []
    load_torch_exports("rocm/vllm:latest", image_reader=lambda ref: seen.append(ref) or _exports())  # type: ignore[func-returns-value]
    assert seen == ["rocm/vllm:latest"]


def test_the_flag_reaches_the_config_and_the_build_key_keeps_old_keys() -> None:
    config = gate_config(GateFlags(torch_abi="torch.whl"))
    assert config.torch_abi == "torch.whl" and to_data(config)["torch_abi"] == "torch.whl"
    assert "torch_abi" not in gate_key(GateConfig())
    assert gate_key(config)["torch_abi"] == "torch.whl"


LIB = """
#include <string>
#include <math.h>
namespace c10 { void need_me(const std::string&); }
extern "C" double uses_libm(double x) { return cos(x); }
extern "C" void __attribute__((weak)) maybe_there(void);
int exported_int = 3;
static int hidden_local(void) { return 1; }
__attribute__((visibility("hidden"))) int hidden_global(void) { return hidden_local(); }
void calls(const std::string& s) { c10::need_me(s); if (maybe_there) maybe_there(); }
"""


def _readelf_syms(path: Path) -> list[list[str]]:
    out = subprocess.run(["readelf", "-W", "--dyn-syms", str(path)], capture_output=True, text=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]


@pytest.mark.skipif(not have_gcc(), reason="needs gcc")
def test_symbol_table_agrees_with_readelf(tmp_path: Path) -> None:
    lib = build_shared_library(tmp_path / "libdemo.so", LIB, soname="libdemo.so", libs=("m",), cplusplus=True)
    table = read_symbol_table("libdemo.so", lambda: lib.open("rb"), lib.stat().st_size)
    rows = _readelf_syms(lib)
    undefined = {r[7].split("@")[0] for r in rows if r[6] == "UND" and len(r) > 7}
    exported = {
        r[7].split("@")[0] for r in rows if r[6] != "UND" and r[4] in ("GLOBAL", "WEAK") and r[5] == "DEFAULT"
    }
    assert {i.name for i in table.imported} == undefined
    assert table.exported == exported
    assert "exported_int" in table.exported and "hidden_global" not in table.exported
    imports = {i.name: i for i in table.imported}
    assert imports["_ZN3c107need_meERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"].version is None
    assert imports["maybe_there"].weak
    cos = imports["cos"]
    assert cos.library == "libm.so.6" and cos.version is not None and cos.version.startswith("GLIBC_")
    assert table.soname == "libdemo.so" and "libm.so.6" in table.needed


@pytest.mark.skipif(not have_gcc(), reason="needs gcc")
def test_patchelf_layout_and_a_wheel(tmp_path: Path) -> None:
    """patchelf (as auditwheel repair runs it) moves the tables next to .dynamic: still read."""
    lib = build_shared_library(tmp_path / "libdemo.so", LIB, soname="libdemo.so", libs=("m",), cplusplus=True)
    before = read_symbol_table("a", lambda: lib.open("rb"), lib.stat().st_size)
    subprocess.run(["patchelf", "--set-rpath", "$ORIGIN/" + "x" * 3000, str(lib)], check=True)
    after = read_symbol_table("a", lambda: lib.open("rb"), lib.stat().st_size)
    assert (after.exported, after.imported) == (before.exported, before.imported)
    wheel = write_wheel(
        tmp_path / "demo-1.0-cp311-cp311-linux_x86_64.whl", {"demo/libdemo.so": lib.read_bytes()}
    )
    got = wheel_symbol_tables(wheel, lambda n: n.endswith(".so"), sha256=True)
    assert got.tables["demo/libdemo.so"].exported == before.exported and got.sha256 is not None


class _Box:
    """A stand-in for a throwaway container: get_archive serves tar streams of real files (the
    engine's API, which test_throwaway.py and the docker tests cover, is not what is tested here)."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.asked: list[str] = []

    def get_archive(self, path: str) -> tuple[Any, Any]:
        self.asked.append(path)
        buf = io.BytesIO()
        base = path.rstrip("/").rsplit("/", 1)[-1]
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for name, data in self.files.items():
                if name == path or name.startswith(path + "/"):
                    info = tarfile.TarInfo(base + name[len(path) :])
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        if not self.asked or not buf.getvalue():
            raise FileNotFoundError(path)
        data = buf.getvalue()
        return iter([data[i : i + 1000] for i in range(0, len(data), 1000)]), {}


@pytest.mark.skipif(not have_gcc(), reason="needs gcc")
def test_image_reader_over_a_stand_in_container(tmp_path: Path) -> None:
    lib = build_shared_library(tmp_path / "libc10.so", LIB, soname="libc10.so", libs=("m",), cplusplus=True)
    folder = "/usr/lib/python3/dist-packages/torch"
    box = _Box(
        {
            f"{folder}/version.py": b"__version__ = '2.13.0+rocm7.1'\n",
            f"{folder}/lib/libc10.so": lib.read_bytes(),
            f"{folder}/lib/README.txt": b"not a library",
        }
    )
    assert image_torch.torch_folder("img", 0, f"{folder}\n".encode()) == folder
    with pytest.raises(UsageError, match="finds no torch"):
        image_torch.torch_folder("img", 3, b"")
    found = image_torch.read_torch_tables(box, "img", folder)  # type: ignore[arg-type]
    assert found.version == "2.13.0+rocm7.1" and list(found.tables) == ["libc10.so"]
    assert (
        found.tables["libc10.so"].exported
        == read_symbol_table("x", lambda: lib.open("rb"), lib.stat().st_size).exported
    )
    assert image_torch.locate_command()[0] == "sh"


def test_remembered_hashes_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build's staged wheelhouse is a new path each time: the stat/ memory keeps the newest
    STAT_ENTRIES, and a remembered file is not hashed again."""
    import os

    from buildkit.compare import torch_exports as torchabi

    stat = tmp_path / "stat"
    stat.mkdir()
    for i in range(torchabi.STAT_ENTRIES + 40):
        entry = stat / f"{i:064x}"
        entry.write_text("0" * 64 + "\n")
        os.utime(entry, ns=(i * 10**9, i * 10**9))
    wheel = tmp_path / "torch-0-py3-none-any.whl"
    wheel.write_bytes(b"not a wheel, only bytes to hash")
    digest = torchabi._known_sha256(wheel, tmp_path)
    kept = sorted(p.name for p in stat.iterdir())
    assert len(kept) == torchabi.STAT_ENTRIES
    assert f"{0:064x}" not in kept and torchabi._stat_key(wheel) in kept  # the oldest went, the new one stays

    def no_hashing(path: Path) -> str:
        raise AssertionError(f"{path} hashed again")

    monkeypatch.setattr(torchabi, "sha256_file", no_hashing)
    assert torchabi._known_sha256(wheel, tmp_path) == digest
