"""The builder contract's ROCm pieces (buildkit/image/contract.py): the manylinux_2_28-rocm profile and
the Debian profiles are held to one SONAME table, the one the gate judges wheels by, and the probe
names a missing piece with the package that provides it. The probe runs here on a fake image
filesystem: probe.sh itself, with /bin/sh, its library folders pointed at folders of this test (the
folders are the probe's inputs, as in an image)."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

from buildkit.gate.options import rocm_pin
from buildkit.image.contract import ImageContract, debian_package, image_contract, spec_contract
from buildkit.image.probe import Contract, parse_probe, probe_environment, probe_script, problems
from buildkit.profiles import get_profile
from buildkit.recipe.sections.image import ImageSpec
from buildkit.rocm import data as rocmdata

MANYLINUX = "manylinux_2_28-rocm"
DEBIAN = ("debian-sid-rocm", "7.2"), ("debian-sid-rocm", "6.4"), ("debian-rocm", "5.7")


def _libraries(contract: ImageContract) -> dict[str, str]:
    return {p.name: p.package for p in contract.pieces if p.kind == "library"}


@pytest.mark.parametrize(("profile", "rocm"), [(MANYLINUX, "7.2"), (MANYLINUX, "6.4"), *DEBIAN])
def test_every_profile_holds_the_hip_runtime_of_the_gates_table(profile: str, rocm: str) -> None:
    """The SONAME the probe looks for is the one the gate's rocm-soname rule expects of a wheel built
    in that image (GateConfig's rocm_sonames, for the profile's toolchain)."""
    toolchain = get_profile(profile).toolchain_of(rocm)
    gate = rocm_pin(rocm, toolchain)["rocm_sonames"]
    libraries = _libraries(image_contract(get_profile(profile), rocm))
    assert gate["libamdhip64"] in libraries
    assert set(libraries) <= set(gate.values())


def test_the_manylinux_and_debian_contracts_come_from_one_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Change the table and both contracts change: neither holds a copy."""
    real = rocmdata.expected_sonames

    def moved(rocm: str, sets: tuple[str, ...] = ("rocm",), toolchain: str | None = None) -> dict[str, str]:
        return {
            **real(rocm, sets, toolchain),
            "libamdhip64": "libamdhip64.so.99",
            "librocblas": "librocblas.so.42",
        }

    monkeypatch.setattr(rocmdata, "expected_sonames", moved)
    many = _libraries(image_contract(get_profile(MANYLINUX), "7.2"))
    deb = _libraries(image_contract(get_profile("debian-sid-rocm"), "7.2"))
    assert many["libamdhip64.so.99"] == "hip-runtime-amd" and many["librocblas.so.42"] == "rocblas"
    assert deb["libamdhip64.so.99"] == "libamdhip64-99"
    assert "libamdhip64.so.7" not in many and "libamdhip64.so.7" not in deb


def test_the_manylinux_contract_follows_the_installed_devel_packages() -> None:
    full = _libraries(image_contract(get_profile(MANYLINUX), "7.2"))
    assert full["librocblas.so.5"] == "rocblas" and full["libhipblaslt.so.1"] == "hipblaslt"
    assert full["librccl.so.1"] == "rccl" and full["libamdhip64.so.7"] == "hip-runtime-amd"
    few = _libraries(image_contract(get_profile(MANYLINUX), "7.2", ["hip-devel", "hipcc", "rocblas-devel"]))
    assert few == {"libamdhip64.so.7": "hip-runtime-amd", "librocblas.so.5": "rocblas"}
    spec = ImageSpec(profile=MANYLINUX, build_args={"ROCM_PACKAGES": "hip-devel hipcc rocblas-devel"})
    found = spec_contract(spec, "7.2")
    assert found is not None and _libraries(found) == few
    assert spec_contract(ImageSpec(ref="example/builder:1"), "7.2") is None


@pytest.mark.parametrize(
    ("soname", "package"),
    # Debian's package names, as trixie and experimental name them (toolchains.yaml sonames_source,
    # docker/debian-sid-rocm-runtime's RUNTIME_PACKAGES libamdhip64-7)
    [
        ("libamdhip64.so.7", "libamdhip64-7"),
        ("libamdhip64.so.5", "libamdhip64-5"),
        ("libhsa-runtime64.so.1", "libhsa-runtime64-1"),
        ("libamd_comgr.so.2", "libamd-comgr2"),
        ("librocblas.so.0", "librocblas0"),
        ("libhipblas.so.0", "libhipblas0"),
        ("libroctx64.so.4", "libroctx64-4"),
    ],
)
def test_debian_names_a_library_package_after_its_soname(soname: str, package: str) -> None:
    assert debian_package(soname) == package


def test_the_runtime_image_package_is_the_contracts() -> None:
    runtime = get_profile("debian-sid-rocm-runtime").releases["7.2"].build_args["RUNTIME_PACKAGES"]
    assert _libraries(image_contract(get_profile("debian-sid-rocm"), "7.2"))["libamdhip64.so.7"] == runtime


def _fake_image(root: Path, contract: ImageContract, present: set[str]) -> ImageContract:
    """The contract's library folders under ``root``, holding the SONAMEs of ``present`` only."""
    libdirs = tuple(str(root / d.lstrip("/")) for d in contract.libdirs)
    for d in libdirs:
        Path(d).mkdir(parents=True, exist_ok=True)
    for soname in present:
        (Path(libdirs[0]) / soname).write_bytes(b"\x7fELF")
    return dataclasses.replace(contract, libdirs=libdirs)


def _probe(contract: Contract, root: Path) -> dict[str, tuple[str, str]]:
    env = {"PATH": str(root / "bin"), "ROCM_PATH": str(root / "opt/rocm"), **probe_environment(contract)}
    (root / "bin").mkdir(exist_ok=True)
    for tool in ("mktemp", "tr", "sed", "head", "tail"):  # what probe.sh runs besides the shell
        found = shutil.which(tool, path="/usr/bin:/bin")
        if found and not (root / "bin" / tool).exists():
            (root / "bin" / tool).symlink_to(found)
    done = subprocess.run(
        ["/bin/sh", "-c", probe_script()], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return parse_probe(done.stdout)


def test_the_probe_names_each_missing_library_and_its_package(tmp_path: Path) -> None:
    image = image_contract(
        get_profile(MANYLINUX), "7.2", ["hip-devel", "hipcc", "rocblas-devel", "rccl-devel"]
    )
    fake = _fake_image(tmp_path, image, present={"libamdhip64.so.7", "librccl.so.1"})
    contract = Contract.of(["cp312"], ["gfx942"], image=fake)
    found = _probe(contract, tmp_path)
    assert found["lib:libamdhip64.so.7"][0] == "ok" and found["lib:librocblas.so.5"][0] == "missing"
    gaps = problems(found, contract)
    folders = " or ".join(fake.libdirs)
    assert f"librocblas.so.5 (librocblas of ROCm 7.2) in {folders}: install rocblas" in gaps
    assert not any("libamdhip64" in g or "librccl" in g for g in gaps), gaps
    # no hipcc in the fake image: the gap names where the profile has it and its package
    assert "a HIP compiler: hipcc on PATH or in $ROCM_PATH/bin (/opt/rocm/bin/hipcc: install hipcc)" in gaps


def test_a_debian_image_without_its_hip_runtime_names_the_debian_package(tmp_path: Path) -> None:
    image = image_contract(get_profile("debian-sid-rocm"), "7.2")
    fake = _fake_image(tmp_path, image, present=set())
    contract = Contract.of(["cp313"], ["gfx942"], image=fake)
    gaps = problems(_probe(contract, tmp_path), contract)
    assert any(
        g.startswith("libamdhip64.so.7 (libamdhip64 of ROCm 7.2) in ")
        and g.endswith(": install libamdhip64-7")
        for g in gaps
    ), gaps
    assert "a HIP compiler: hipcc on PATH or in $ROCM_PATH/bin (/usr/bin/hipcc: install hipcc)" in gaps


def test_the_pieces_are_part_of_the_cached_contract() -> None:
    plain = Contract.of(["cp312"], ["gfx942"])
    held = Contract.of(["cp312"], ["gfx942"], image=image_contract(get_profile(MANYLINUX), "7.2"))
    assert plain.digest() != held.digest()
    assert probe_environment(plain)["PROBE_LIBS"] == ""
    assert "libamdhip64.so.7" in probe_environment(held)["PROBE_LIBS"].split()
