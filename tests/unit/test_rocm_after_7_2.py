"""ROCm past 7.2 (issue 39, part 4): TheRock's 7.14 and 10.0 in the data, TheRock's system libraries
in the ``rocm`` exclude set, ``rocm ls --since``, and the data refresh's parsing on stored copies of
its sources (tests/data/rocm-sources/: PyPI's JSON API answers for AMD's projects, saved 2026-12-04,
and excerpts of AMD's wheels: version modules and a window of the LLVM library around its version
strings, cut from the real files)."""

from __future__ import annotations

import datetime
import io
import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from buildkit import rocm
from buildkit.cli import cli as cli_main
from buildkit.service import rocm as rocm_refresh

pytestmark = pytest.mark.unit

SOURCES = Path(__file__).resolve().parents[1] / "data" / "rocm-sources"


def test_releases_after_7_2_carry_their_facts_and_sources() -> None:
    fourteen, ten = rocm.get_release("7.14"), rocm.get_release("10.0")
    assert [r.version for r in rocm.releases()][-3:] == ["7.2", "7.14", "10.0"]  # 7.14 after 7.2, numerically
    assert (fourteen.released, ten.released) == ("2026-07-16", "2026-08-26")
    assert (fourteen.stream, ten.stream, rocm.get_release("7.2").stream) == ("therock", "therock", "legacy")
    assert "legacy-rocm-build" in (fourteen.released_source or "") and "therock-10.0" in (
        ten.released_source or ""
    )
    # read from AMD's wheels on PyPI, each fact saying which wheel
    assert ten.llvm.startswith("23.0.0git") and ten.hip == "7.15.26333"
    assert any("rocm-bindings-compiler 10.0.0.0.1.2" in v for v in ten.verified)
    assert rocm.get_release("7.2").llvm.startswith("22.0.0git")
    assert any("rocm-llvm-python 7.2.2.562.46" in v for v in rocm.get_release("7.2").verified)
    # what no artifact here shows is marked
    assert fourteen.llvm == "unverified" and fourteen.unverified
    assert {"gfx942", "gfx950", "gfx1151"} <= set(ten.archs)
    # the SONAMEs stay 7.x's: HIP 7.15 in ROCm 10.0
    assert rocm.expected_sonames("10.0")["libamdhip64"] == "libamdhip64.so.7"
    assert rocm.expected_sonames("7.14")["librocblas"] == "librocblas.so.5"


def test_therock_system_libraries_are_in_the_rocm_set_from_7_14() -> None:
    """AMD's rocm-bindings-compiler 10.0 needs librocm_sysdeps_z.so.1 and librocm_sysdeps_zstd.so.1:
    part of the ROCm install (RUNPATH /opt/rocm/lib/rocm_sysdeps/lib), excluded like libamdhip64."""
    ten = rocm.exclude_globs(["rocm"], "10.0")
    assert rocm.matches("librocm_sysdeps_z.so.1", ten) and rocm.matches("librocm_sysdeps_zstd.so.1", ten)
    assert not rocm.matches("librocm_sysdeps_z.so.1", rocm.exclude_globs(["rocm"], "7.2"))  # legacy 7.2


def test_rocm_ls_since_a_day() -> None:
    runner = CliRunner()
    out = runner.invoke(cli_main, ["rocm", "ls", "--since", "2026-07-01"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert any(line.startswith("7.14 ") and "2026-07-16" in line for line in lines), out.output
    assert any(line.startswith("10.0 ") and "23.0.0git" in line for line in lines), out.output
    assert not any(line.startswith("7.2 ") for line in lines)
    assert "ROCm 10.0.0: rocm-bindings-compiler 10.0.0.0.1.2 (uploaded 2026-09-24)" in out.output
    data = json.loads(runner.invoke(cli_main, ["rocm", "ls", "--since", "2026-09-01", "--json"]).output)
    assert [r["version"] for r in data["releases"]] == []  # nothing published since
    assert {o["rocm"] for o in data["observed"]} == {"10.0.0"}  # but AMD's 10.0 wheels came then
    bad = runner.invoke(cli_main, ["rocm", "ls", "--since", "last week"])
    assert bad.exit_code == 2 and "is not a day (YYYY-MM-DD)" in bad.output


def test_pypi_json_parsing_on_stored_copies() -> None:
    """PyPI's answers for AMD's projects: the ROCm release of each version (AMD's placeholder 0.0.2
    left out), and the one file read per release: the newest version's CPython 3.12 Linux wheel."""
    files = rocm_refresh.parse_pypi_json(
        "rocm-llvm-python", (SOURCES / "pypi-rocm-llvm-python.json").read_bytes()
    )
    chosen = rocm_refresh.newest_per_release(files)
    assert "7.2.2" in chosen and "0.0.2" not in chosen and all(k.count(".") == 2 for k in chosen)
    assert chosen["7.2.2"].filename == (
        "rocm_llvm_python-7.2.2.562.46-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
    )
    assert chosen["7.2.2"].uploaded == "2026-04-24" and len(chosen["7.2.2"].sha256) == 64
    hip = rocm_refresh.newest_per_release(
        rocm_refresh.parse_pypi_json("hip-python", (SOURCES / "pypi-hip-python.json").read_bytes())
    )
    assert hip["10.0.0"].version == "10.0.0.0.1.2" and hip["10.0.0"].filename.endswith("-py3-none-any.whl")
    assert rocm_refresh.rocm_release_of("10.0.0.0.1.2") == "10.0.0"
    assert rocm_refresh.rocm_release_of("0.0.2") is None


def test_version_modules_and_the_llvm_library_on_stored_excerpts() -> None:
    ten = rocm_refresh.parse_version_module(
        (SOURCES / "rocm-bindings-core-10.0.0.0.1.2-version.py").read_text()
    )
    assert ten == {"ROCM_VERSION_NAME": "10.0.0", "HIP_VERSION_NAME": "7.15.26333-0000000"}
    seven = rocm_refresh.parse_version_module((SOURCES / "hip-python-7.2.2.562.43-init.py").read_text())
    assert seven["HIP_VERSION_NAME"] == "7.2.53211-671d39a71e"
    window = (SOURCES / "libLLVM-10.0.0-excerpt.bin").read_bytes()
    # in chunks cut anywhere, as a 134 MB library is read
    for size in (7, 64, 1 << 20):
        chunks = [window[i : i + size] for i in range(0, len(window), size)]
        assert rocm_refresh.scan_llvm(chunks) == ("23.0.0git", "8f497e0992fb7513f7f78a6f6b6f1056c375e961")


def test_refresh_reads_new_wheels_and_says_what_changed(tmp_path: Path) -> None:
    """The refresh against the stored observations: a new ROCm release on PyPI (a copy of the stored
    JSON with a 10.1.0 version added) is read and reported, with the missing releases.yaml row."""
    doc = json.loads((SOURCES / "pypi-rocm-bindings-core.json").read_text())
    doc["releases"]["10.1.0.0.1.0"] = [
        {
            "filename": "rocm_bindings_core-10.1.0.0.1.0-cp312-abi3-manylinux_2_28_x86_64.whl",
            "packagetype": "bdist_wheel",
            "yanked": False,
            "upload_time_iso_8601": "2026-12-01T10:00:00Z",
            "url": "https://files.example/rocm_bindings_core-10.1.0.0.1.0-cp312-abi3-manylinux_2_28_x86_64.whl",
            "digests": {"sha256": "0" * 64},
        }
    ]
    version_py = (SOURCES / "rocm-bindings-core-10.0.0.0.1.2-version.py").read_text()
    version_py = version_py.replace('"10.0.0"', '"10.1.0"').replace("7.15.26333", "7.16.26400")

    def fetch_json(project: str) -> bytes:
        return json.dumps(doc).encode()

    def fetch_wheel(wheel: rocm_refresh.WheelFile, folder: Path) -> Path:
        assert wheel.version == "10.1.0.0.1.0"  # the stored 10.0.0 reading is not read again
        buffer = io.BytesIO()
        info = "rocm_bindings_core-10.1.0.0.1.0.dist-info"
        with zipfile.ZipFile(buffer, "w") as archive:  # a wheel as AMD's is laid out, its files AMD's own
            archive.writestr("rocm/version.py", version_py)
            archive.writestr(
                f"{info}/METADATA", "Metadata-Version: 2.4\nName: rocm-bindings-core\nVersion: 10.1.0.0.1.0\n"
            )
            archive.writestr(
                f"{info}/WHEEL",
                "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp312-abi3-manylinux_2_28_x86_64\n",
            )
            archive.writestr(
                f"{info}/RECORD", f"rocm/version.py,,\n{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n"
            )
        path = folder / wheel.filename
        path.write_bytes(buffer.getvalue())
        return path

    observations, lines = rocm_refresh.refresh(
        fetch_json, fetch_wheel, projects={"rocm-bindings-core": "hip"}
    )
    new = [o for o in observations if o.rocm == "10.1.0"]
    assert new and new[0].hip == "7.16.26400-0000000" and new[0].uploaded == "2026-12-01"
    assert (
        "- new: ROCm 10.1.0: rocm-bindings-core 10.1.0.0.1.0 (uploaded 2026-12-01): HIP 7.16.26400-0000000"
        in lines
    )
    assert any("releases.yaml has no row for ROCm 10.1" in line for line in lines)
    text = rocm_refresh.dump(observations, datetime.date(2026, 12, 4))
    assert "checked: '2026-12-04'" in text and "10.1.0.0.1.0" in text
