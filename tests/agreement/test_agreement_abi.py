"""Agreement with ``auditwheel show --json`` on the rules buildkit.gate.rules.abi adds: blacklisted
symbols (``uncompress2`` of libz.so.1), ``PyFPE_jbuf`` (auditwheel's ``pyfpe``) and the x86-64 ISA
level (``unsupported_isa``), on extensions built here with gcc. The overall tag is the minimum of
the symbol policy and the ABI rules' policy (no external library is in play: libz.so.1 and libc.so.6
are whitelisted), which is what auditwheel's ``overall_tag`` says."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import testwheels

from buildkit.gate.rules.abi import check_abi
from buildkit.inspect import inspect_wheel
from buildkit.policy import best_symbol_policy, get_policy, is_dynamic_loader, policies

UNCOMPRESS2 = (
    "int uncompress2(unsigned char *, unsigned long *, const unsigned char *, unsigned long *);\n"
    "int use_z(unsigned char *d, unsigned long *n) { return uncompress2(d, n, d, n); }\n"
)
PYFPE = "extern double PyFPE_jbuf[];\ndouble use_fpe(void) { return PyFPE_jbuf[0]; }\n"
WEAK_UNCOMPRESS2 = (
    "int uncompress2(unsigned char *, unsigned long *, const unsigned char *, unsigned long *)"
    " __attribute__((weak));\n"
    "int use_z(unsigned char *d, unsigned long *n) { return uncompress2 ? uncompress2(d, n, d, n) : 0; }\n"
)
CASES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    # name: (source, compiler flags, libraries)
    "clean": ("int f(int x) { return x + 1; }\n", (), ()),
    "blacklist": (UNCOMPRESS2, (), ("-lz",)),
    "weak-blacklisted": (WEAK_UNCOMPRESS2, (), ("-lz",)),
    "pyfpe": (PYFPE, (), ()),
    "isa-v3": ("int f(int x) { return x * 3; }\n", ("-march=x86-64-v3", "-mneeded"), ()),
    "isa-v2-linker": ("int f(int x) { return x * 3; }\n", ("-Wl,-z,x86-64-v2",), ()),
    "blacklist-and-pyfpe": (UNCOMPRESS2 + PYFPE, (), ("-lz",)),
}
EXPECTED_OVERALL = {  # pinned, so a silent change in either tool shows up here
    "clean": "manylinux_2_5_x86_64",
    "blacklist": "manylinux_2_34_x86_64",
    "weak-blacklisted": "manylinux_2_5_x86_64",
    "pyfpe": "linux_x86_64",
    "isa-v3": "linux_x86_64",
    "isa-v2-linker": "linux_x86_64",
    "blacklist-and-pyfpe": "linux_x86_64",
}


@pytest.fixture(scope="module")
def abi_wheels(tmp_path_factory: pytest.TempPathFactory, toolchain: None) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for name, (source, flags, libs) in CASES.items():
        work = tmp_path_factory.mktemp(name)
        module = "ext"  # a Python extension to auditwheel: it defines PyInit_<module>
        so = testwheels.compile_shared(
            source + f"void *PyInit_{module}(void) {{ return 0; }}\n",
            work / f"{module}.cpython-311-x86_64-linux-gnu.so",
            flags=flags,
            libs=libs,
        )
        out[name] = testwheels.pack_wheel(
            work, f"abi{name.replace('-', '')}", "cp311-cp311-manylinux_2_17_x86_64", {f"pkg/{so.name}": so}
        )
    return out


def auditwheel_show(wheel: Path) -> dict[str, Any]:
    proc = subprocess.run(["auditwheel", "show", "--json", str(wheel)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


@pytest.mark.parametrize("case", sorted(CASES))
def test_overall_tag_pyfpe_and_isa_agree(case: str, abi_wheels: dict[str, Path]) -> None:
    aw = auditwheel_show(abi_wheels[case])
    assert aw["external_libs"] == {}  # the premise: only whitelisted libraries in play
    host = inspect_wheel(abi_wheels[case]).elves
    versions = {
        v for e in host for lib, vs in e.version_needs.items() if not is_dynamic_loader(lib) for v in vs
    }
    sym = best_symbol_policy(versions, "x86_64")
    assert sym.tag == aw["sym_tag"]
    abi = check_abi(host, "x86_64", held=(), candidates=policies("x86_64"))
    overall = min(sym, abi.policies.overall, key=lambda p: p.priority)
    assert overall.tag == aw["overall_tag"] == EXPECTED_OVERALL[case]
    assert aw["pyfpe"] == (abi.policies.pyfpe.name == "linux")
    assert aw["unsupported_isa"] == (abi.policies.isa.name == "linux")


@pytest.mark.parametrize("case", sorted(CASES))
def test_findings_against_the_claimed_tag(case: str, abi_wheels: dict[str, Path]) -> None:
    """The wheels claim manylinux_2_17: every rule that lowers the tag below it is an error naming
    the extension, and none is raised for the clean and weak cases."""
    host = inspect_wheel(abi_wheels[case]).elves
    abi = check_abi(host, "x86_64", held=[get_policy("manylinux_2_17")])
    assert sorted({f.rule for f in abi.findings}) == sorted(abi.policies.lowered_by())
    assert all(
        f.severity == "error" and f.file is not None and f.file.startswith("pkg/") for f in abi.findings
    )
    assert bool(abi.findings) == (EXPECTED_OVERALL[case] != "manylinux_2_5_x86_64")
