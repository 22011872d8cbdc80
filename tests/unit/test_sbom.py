"""PEP 770 SBOM (:mod:`buildkit.building.sbom`): ``.dist-info/sboms/rocm-buildkit.cdx.json`` lists the
runtime libraries the wheel needs and does not carry, validated and read back with the real CycloneDX
library (cyclonedx-python-lib, a dev dependency).

The wheel is real: a gcc-built extension linking stand-in ``libamdhip64.so.6``, ``librocblas.so.4``
and ``libtorch_cpu.so`` (built with those SONAMEs) and ``libc.so.6``; the build's step is tested
through the build harness of tests/unit/test_build_job.py (cibuildwheel and the engine stood in).
"""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pytest
from cyclonedx.model.bom import Bom
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from buildkit import rocm as rocm_data
from buildkit.building import sbom
from buildkit.gate.config import GateConfig
from buildkit.judge import judge_wheels
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_zip import write_wheel
from tests.unit.test_build_job import Harness, h  # noqa: F401  (the build harness fixture)

MEMBER = "demo/_ext.cpython-312-x86_64-linux-gnu.so"
SBOM = "demo-1.0.dist-info/sboms/rocm-buildkit.cdx.json"


@pytest.fixture(scope="module")
def extension(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    if not have_gcc():
        pytest.skip("gcc builds the libraries")
    work = tmp_path_factory.mktemp("libs")
    for soname in ("libamdhip64.so.6", "librocblas.so.4", "libtorch_cpu.so"):
        stem = soname.split(".so")[0]
        build_shared_library(work / f"{stem}.so", f"int {stem}_f(void) {{ return 1; }}\n", soname=soname)
    source = "int libamdhip64_f(void); int librocblas_f(void); int libtorch_cpu_f(void);\n"
    source += "int g(void) { return libamdhip64_f() + librocblas_f() + libtorch_cpu_f(); }\n"
    (work / "ext.c").write_text(source)
    out = work / "ext.so"
    cmd = ["gcc", "-shared", "-fPIC", "-O1", "-o", str(out), str(work / "ext.c"), f"-L{work}"]
    subprocess.run([*cmd, "-lamdhip64", "-lrocblas", "-ltorch_cpu"], check=True, capture_output=True)
    return out.read_bytes()


def _wheel(folder: Path, extension: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "demo-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    return write_wheel(path, {"demo/__init__.py": b"", MEMBER: extension}, fixed_time=True)


GLOBS = [*rocm_data.exclude_globs(["rocm"], "6.4"), *rocm_data.exclude_globs(["torch"])]


def test_the_sbom_lists_the_excluded_libraries_and_validates(tmp_path: Path, extension: bytes) -> None:
    wheel = _wheel(tmp_path / "a", extension)
    listed = sbom.attach(wheel, GLOBS, rocm="6.4", torch_version="2.13.0", epoch=1_700_000_000)
    assert [(lib.soname, lib.provided_by, lib.version) for lib in listed] == [
        ("libamdhip64.so.6", "rocm", "6.4"),
        ("librocblas.so.4", "rocm", "6.4"),
        ("libtorch_cpu.so", "torch", "2.13.0"),
    ]
    with zipfile.ZipFile(wheel) as zf:
        text = zf.read(SBOM).decode()
        names = zf.namelist()
    assert names[-1] == "demo-1.0.dist-info/RECORD" and SBOM in names
    # the real CycloneDX library: the JSON schema of 1.6 (strict), then the document read back
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    bom = Bom.from_json(json.loads(text))  # type: ignore[attr-defined]
    assert bom.metadata.component is not None and bom.metadata.component.name == "demo"
    assert str(bom.metadata.component.purl) == "pkg:pypi/demo@1.0"
    components = {c.name: c for c in bom.components}
    assert set(components) == {"libamdhip64.so.6", "librocblas.so.4", "libtorch_cpu.so"}  # not libc
    hip = components["libamdhip64.so.6"]
    assert hip.version == "6.4" and str(hip.purl) == "pkg:generic/rocm/libamdhip64@6.4"
    properties = {p.name: p.value for p in hip.properties}
    assert properties == {
        "rocm-buildkit:soname": "libamdhip64.so.6",
        "rocm-buildkit:provided-by": "rocm",
        "rocm-buildkit:needed-by": MEMBER,
    }
    assert str(components["libtorch_cpu.so"].purl) == "pkg:pypi/torch@2.13.0"
    [root] = [d for d in bom.dependencies if str(d.ref) == "pkg:pypi/demo@1.0"]
    assert {str(d.ref) for d in root.dependencies} == {f"runtime:{n}" for n in components}

    # RECORD covers it: the gate, hashing every member, finds nothing wrong with RECORD
    verdicts, failures = judge_wheels([wheel], GateConfig(exclude_globs=tuple(GLOBS)))
    assert not failures
    assert not [f for f in verdicts[0].findings if f.rule == "record"], verdicts[0].findings


def test_the_sbom_is_reproducible_and_the_rest_of_the_wheel_unchanged(
    tmp_path: Path, extension: bytes
) -> None:
    one, two = _wheel(tmp_path / "one", extension), _wheel(tmp_path / "two", extension)
    before = {i.filename: (i.CRC, i.date_time, i.external_attr) for i in zipfile.ZipFile(one).infolist()}
    for wheel in (one, two):
        sbom.attach(wheel, GLOBS, rocm="6.4", torch_version="2.13.0", epoch=1_700_000_000)
    assert one.read_bytes() == two.read_bytes()
    after = {i.filename: (i.CRC, i.date_time, i.external_attr) for i in zipfile.ZipFile(one).infolist()}
    record = "demo-1.0.dist-info/RECORD"
    assert {k: v for k, v in after.items() if k not in (SBOM, record)} == {
        k: v for k, v in before.items() if k != record
    }
    # attaching again replaces it (one SBOM, one RECORD line)
    sbom.attach(one, GLOBS, rocm="6.4", torch_version="2.13.1", epoch=1_700_000_000)
    with zipfile.ZipFile(one) as zf:
        assert zf.namelist().count(SBOM) == 1
        assert zf.read(record).decode().count(SBOM + ",") == 1
        assert '"version": "2.13.1"' in zf.read(SBOM).decode()


def test_a_wheel_that_needs_nothing_excluded_gets_an_empty_list(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path / "pure-1.0-py3-none-any.whl", {"pure/__init__.py": b""})
    assert sbom.attach(wheel, GLOBS, rocm="6.4", torch_version=None, epoch=0) == []
    with zipfile.ZipFile(wheel) as zf:
        text = zf.read("pure-1.0.dist-info/sboms/rocm-buildkit.cdx.json").decode()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    assert json.loads(text)["components"] == []


def test_build_writes_the_sbom_before_the_gate(h: Harness) -> None:  # noqa: F811
    """A job's wheel carries the SBOM, RECORD lists it, and its manifest's sha256 is of those bytes."""
    recipe, job = h.recipe()
    assert h.build(recipe, job).status == "passed"
    wheel = h.wheel_of()
    assert wheel is not None
    dist_info = wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"
    with zipfile.ZipFile(wheel) as zf:
        text = zf.read(f"{dist_info}/sboms/rocm-buildkit.cdx.json").decode()
        assert f"{dist_info}/sboms/rocm-buildkit.cdx.json," in zf.read(f"{dist_info}/RECORD").decode()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
