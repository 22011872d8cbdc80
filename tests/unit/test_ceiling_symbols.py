"""A ceiling finding names the symbols that need the version above the ceiling, demangled, and the
member that needs them (issue 39: pywhispercpp refused at manylinux_2_28 for GLIBCXX_3.4.26 was named
by version and library only). Real ELFs compiled here with g++; the expected names are read from the
same file by pyelftools (.dynsym + .gnu.version), not by the reader under test."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerSymSection
from elftools.elf.sections import SymbolTableSection

from buildkit.gate.config import GateConfig
from buildkit.gate.demangle import demangle
from buildkit.gate.evaluate import evaluate
from buildkit.gate.rules.ceilings import SHOWN
from buildkit.inspect import inspect_wheel
from buildkit.judge import judge_wheel
from buildkit.policy import split_symbol_version
from tests.helpers.wheel_zip import write_wheel

# std::string (the C++11 ABI's std::__cxx11::basic_string) and std::to_string: GLIBCXX_3.4.21 symbols;
# with GCC >= 9 the default std::ostringstream constructor needs GLIBCXX_3.4.26 (pywhispercpp's version)
SOURCE = """
#include <sstream>
#include <string>
std::string demo_text(int n) {
    std::ostringstream out;
    out << n;
    return out.str() + std::to_string(n);
}
"""
CEILING = "3.4.20"  # below GLIBCXX_3.4.21, where the C++11 std::string symbols came


def _gxx() -> str:
    path = shutil.which("g++")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("g++ is needed (./dev installs it)")
        pytest.skip("g++ is needed (./dev installs it)")
    return path


def _imports_by_version(data: bytes) -> dict[str, set[str]]:
    """pyelftools' reading: each undefined .dynsym name under the version .gnu.version gives it."""
    elf = ELFFile(io.BytesIO(data))
    dynsym = elf.get_section_by_name(".dynsym")
    versym = elf.get_section_by_name(".gnu.version")
    assert isinstance(dynsym, SymbolTableSection) and isinstance(versym, GNUVerSymSection)
    names: dict[int, str] = {}
    verneed = elf.get_section_by_name(".gnu.version_r")
    assert verneed is not None
    for _need, auxes in verneed.iter_versions():  # type: ignore[attr-defined]
        for aux in auxes:
            names[aux["vna_other"]] = aux.name
    out: dict[str, set[str]] = {}
    for index, sym in enumerate(dynsym.iter_symbols()):
        if sym["st_shndx"] != "SHN_UNDEF" or not sym.name:
            continue
        ver = versym.get_symbol(index)["ndx"]
        if isinstance(ver, int) and (ver & 0x7FFF) in names:
            out.setdefault(names[ver & 0x7FFF], set()).add(sym.name)
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    work = tmp_path_factory.mktemp("ceiling-symbols")
    src = work / "demo.cpp"
    src.write_text(SOURCE)
    lib = work / "libdemo.so"
    subprocess.run([_gxx(), "-O1", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    data = lib.read_bytes()
    path = write_wheel(work / "demo-1.0-cp311-cp311-linux_x86_64.whl", {"demo/libdemo.so": data})
    return path, data


def _ceiling_errors(path: Path) -> list[str]:
    """The ceiling errors of the judgement every command makes (the wheel read once, names included)."""
    verdict = judge_wheel(path, GateConfig(ceilings={"GLIBCXX": CEILING})).verdict
    return [f.message for f in verdict.findings if f.rule == "ceiling" and f.severity == "error"]


def test_the_finding_names_the_member_and_the_demangled_symbols(wheel: tuple[Path, bytes]) -> None:
    path, data = wheel
    by_version = _imports_by_version(data)
    above = {
        sv: sorted(names)
        for sv, names in by_version.items()
        if split_symbol_version(sv)[0] == "GLIBCXX" and sv > f"GLIBCXX_{CEILING}"
    }
    assert "GLIBCXX_3.4.21" in above, by_version  # what the source was written to need
    messages = _ceiling_errors(path)
    assert len(messages) == len(above), messages
    for sv, names in above.items():
        (message,) = [m for m in messages if f" {sv} " in m]
        assert message.startswith(f"demo/libdemo.so requires {sv} from libstdc++.so.6 for "), message
        for name in names[:SHOWN]:
            assert demangle(name) in message, (name, message)
        if len(names) > SHOWN:
            tail = f"and {len(names) - SHOWN} more, above the GLIBCXX ceiling {CEILING} (flag)"
            assert message.endswith(tail), message
    # the C++11 string's symbols read as a person writes them, not mangled
    assert any("std::__cxx11::basic_string" in m for m in messages), messages
    assert not any("_ZNSt7__cxx11" in m for m in messages), messages


def test_a_report_without_its_wheel_names_the_version_alone(
    wheel: tuple[Path, bytes], tmp_path: Path
) -> None:
    """A stored report judged without its wheel (no reader given) names the version alone: still true."""
    path, _ = wheel
    moved = tmp_path / path.name
    shutil.copy(path, moved)
    report = inspect_wheel(moved)
    moved.unlink()
    verdict = evaluate(report, GateConfig(ceilings={"GLIBCXX": CEILING}))
    message = next(f.message for f in verdict.findings if "GLIBCXX_3.4.21" in f.message)
    assert message == (
        "demo/libdemo.so requires GLIBCXX_3.4.21 from libstdc++.so.6, "
        f"above the GLIBCXX ceiling {CEILING} (flag)"
    )
