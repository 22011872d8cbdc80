"""The ``duplicate-member`` rule (issue 30): identical members stored more than once, with the bytes
they waste and the fix; the size budget counts them. On a gcc-built SONAME chain and on real PyPI
wheels, pinned by sha256 and cached like the corpus (tests/corpus/fetch.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.gate.rules.duplicates import duplicate_groups, wasted
from buildkit.inspect import inspect_wheel
from tests.corpus.fetch import CorpusWheel, FetchError, fetch
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_zip import write_wheel

ROOT = Path(__file__).resolve().parents[2]

#: oneTBB's wheel: every library stored as its SONAME chain (libtbb.so, libtbb.so.12, libtbb.so.12.20)
TBB = CorpusWheel(
    name="tbb",
    version="2023.2.0",
    filename="tbb-2023.2.0-py2.py3-none-manylinux_2_28_x86_64.whl",
    sha256="7d80615b6e970f11671fa05b6eaa9483ac864fbfe525ac280271a78b37870b7c",
    size=6864088,
)
#: the issue's py3-none GPU wheel: 16 distinct libraries, no copies
BITSANDBYTES = CorpusWheel(
    name="bitsandbytes",
    version="0.50.2",
    filename="bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl",
    sha256="55348a9a4a21bfd99cf8c7b32fe67b4030ae5c2a05738e03c1747f65fa6ec283",
    size=43139553,
)


def _real(wheel: CorpusWheel) -> Path:
    try:
        return fetch(wheel)
    except FetchError as exc:
        pytest.skip(f"{wheel.filename} cannot be had here: {exc}")


def _chain_wheel(tmp_path: Path) -> Path:
    source = "".join(f"int f{i}(int x) {{ return x * {i}; }}\n" for i in range(400))
    lib = build_shared_library(tmp_path / "libdemo.so.0.25.3", source, soname="libdemo.so.0").read_bytes()
    return write_wheel(
        tmp_path / "demo-1.0-py3-none-linux_x86_64.whl",
        {
            "demo/__init__.py": b"",
            "demo/py.typed": b"",
            "demo/lib/libdemo.so": lib,
            "demo/lib/libdemo.so.0": lib,
            "demo/lib/libdemo.so.0.25.3": lib,
            "demo/data.bin": bytes(range(256)) * 64,
        },
    )


@pytest.mark.skipif(not have_gcc(), reason="needs gcc")
def test_a_soname_chain_stored_as_copies_is_named_with_its_waste_and_the_file_to_keep(tmp_path: Path) -> None:
    wheel = _chain_wheel(tmp_path)
    report = inspect_wheel(wheel)
    size = next(f.size for f in report.files if f.name == "demo/lib/libdemo.so")
    (group,) = duplicate_groups(report)  # empty __init__.py/py.typed are identical too, but not reported
    assert group.keep == "demo/lib/libdemo.so.0"  # the SONAME's file
    assert group.copies == ("demo/lib/libdemo.so", "demo/lib/libdemo.so.0.25.3")
    assert (group.size, group.wasted, group.soname) == (size, 2 * size, "libdemo.so.0")
    compressed = {s.name: s.compressed_size for s in report.stats}
    assert (
        group.wasted_compressed
        == compressed["demo/lib/libdemo.so"] + compressed["demo/lib/libdemo.so.0.25.3"]
    )
    found = [f for f in evaluate(report, GateConfig()).findings if f.rule == "duplicate-member"]
    assert len(found) == 1 and found[0].severity == "warning"
    assert (found[0].file, found[0].library) == ("demo/lib/libdemo.so.0", "libdemo.so.0")
    assert "demo/lib/libdemo.so.0 is stored 3 times" in found[0].message
    assert "ship one file, libdemo.so.0 (the one the SONAME names" in found[0].message
    assert "auditwheel repair keeps links as files" in found[0].message
    # without hashing (--no-verify-record), RECORD's hashes decide
    unverified = inspect_wheel(wheel, verify_record=False)
    assert all(f.hash is None for f in unverified.files)
    assert duplicate_groups(unverified) == (group,)


@pytest.mark.skipif(not have_gcc(), reason="needs gcc")
def test_the_size_budget_counts_the_copies(tmp_path: Path) -> None:
    wheel = _chain_wheel(tmp_path)
    report = inspect_wheel(wheel)
    installed, compressed = wasted(duplicate_groups(report))
    verdict = evaluate(report, GateConfig(size_limit=report.size - 1))
    (size,) = [f for f in verdict.findings if f.rule == "size"]
    assert size.severity == "error"
    assert "of it are identical copies of other members" in size.message
    from buildkit.units import format_size

    assert f"{format_size(compressed)} of it" in size.message
    assert f"({format_size(installed)} installed" in size.message
    assert f"{format_size(report.size - compressed)} without them" in size.message


def test_tbb_soname_chains_are_reported_with_their_bytes() -> None:
    path = _real(TBB)
    report = inspect_wheel(path)
    groups = duplicate_groups(report)
    assert [(g.keep.rsplit("/", 1)[1], len(g.copies)) for g in groups] == [
        ("libtbb.so.12", 2),
        ("libtbbmalloc.so.2", 2),
        ("libtbbbind.so.3", 2),
        ("libtbbbind_2_5.so.3", 2),
        ("libtbbbind_2_0.so.3", 2),
        ("libtbbmalloc_proxy.so.2", 2),
    ]
    installed, compressed = wasted(groups)
    # each library's two extra copies: 2 x (4,481,712 + 1,184,544 + 613,704 + 238,440 + 233,872 + 131,584)
    assert installed == 13_767_712
    assert compressed == sum(
        s.compressed_size for s in report.stats if any(s.name in g.copies for g in groups)
    )
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", "check", "--json", str(path)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    findings = json.loads(proc.stdout)["wheels"][0]["findings"]
    dup = [f for f in findings if f["rule"] == "duplicate-member"]
    assert [f["file"].rsplit("/", 1)[1] for f in dup] == [g.keep.rsplit("/", 1)[1] for g in groups]


def test_bitsandbytes_0_50_2_stores_no_copies() -> None:
    report = inspect_wheel(_real(BITSANDBYTES))
    assert duplicate_groups(report) == ()
    # the only identical members are its empty __init__.py files, below the reporting size
    assert sum(f.size == 0 for f in report.files) >= 10
