"""The ``rocm-pip-*`` rules on real ELFs: an SDK release laid out as TheRock's (``_rocm_sdk_core/lib``,
``_rocm_sdk_libraries/lib``; libraries compiled here with AMD's SONAMEs, standing in for the SDK's,
which AMD's unreachable index serves) and an extension wheel linking them through its RUNPATH. The
three failures the issue names: an RPATH that misses, an unpinned Requires-Dist, a missing device
package; and the report saying which dependency provides each library."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from buildkit.errors import UsageError
from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.inspect.wheel import inspect_wheel
from buildkit.judge.rocm_pip import gather
from buildkit.records import to_data
from tests.helpers.shared_library import have_gcc
from tests.helpers.wheel_zip import write_wheel

pytestmark = pytest.mark.skipif(not have_gcc(), reason="needs gcc")

PIN = "rocm[libraries]==7.2.*"
TAG = "py3-none-linux_x86_64"


def _so(out: Path, soname: str, body: str, link: tuple[str, ...] = (), runpath: str | None = None) -> bytes:
    src = out.with_suffix(".c")
    src.write_text(body)
    cmd = ["gcc", "-shared", "-fPIC", "-O1", "-o", str(out), str(src), f"-Wl,-soname,{soname}"]
    if runpath:
        cmd += ["-Wl,--enable-new-dtags", f"-Wl,-rpath,{runpath}"]
    cmd += [f"-L{out.parent}", *(f"-l:{lib}" for lib in link)]
    subprocess.run(cmd, check=True, capture_output=True)
    return out.read_bytes()


@pytest.fixture(scope="module")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A release 7.2.4: rocm (extras libraries, devel, device-gfx942, device-all), rocm-sdk-core
    (libamdhip64.so.7), rocm-sdk-libraries (libhipfft.so.0 needing libamdhip64), rocm-sdk-device-gfx942."""
    work = tmp_path_factory.mktemp("sdk")
    hip = _so(
        work / "libamdhip64.so.7", "libamdhip64.so.7", "int hipGetDeviceCount(int *n) { *n = 0; return 100; }"
    )
    fft = _so(
        work / "libhipfft.so.0",
        "libhipfft.so.0",
        "int hipGetDeviceCount(int *); int hipfftCreate(void) { int n; return hipGetDeviceCount(&n); }",
        link=("libamdhip64.so.7",),
        runpath="$ORIGIN:$ORIGIN/../../_rocm_sdk_core/lib",
    )
    wheels = work / "index"
    wheels.mkdir()
    v = "7.2.4"
    write_wheel(wheels / f"rocm_sdk_core-{v}-{TAG}.whl", {"_rocm_sdk_core/lib/libamdhip64.so.7": hip})
    write_wheel(
        wheels / f"rocm_sdk_libraries-{v}-{TAG}.whl",
        {"_rocm_sdk_libraries/lib/libhipfft.so.0": fft},
        requires=[f"rocm-sdk-core=={v}"],
    )
    write_wheel(
        wheels / f"rocm_sdk_device_gfx942-{v}-{TAG}.whl", {"_rocm_sdk_device_gfx942/targets.txt": b"gfx942\n"}
    )
    write_wheel(
        wheels / f"rocm-{v}-py3-none-any.whl",
        {"rocm_sdk/__init__.py": b""},
        requires=[
            f"rocm-sdk-core=={v}",
            f'rocm-sdk-libraries=={v}; extra == "libraries"',
            f'rocm-sdk-device-gfx942=={v}; extra == "device-gfx942"',
        ],
    )
    return wheels


def _extension(tmp: Path, sdk: Path, *, runpath: str, requires: list[str], needs_fft: bool = False) -> Path:
    """demo-1.0 with demo/_C.so needing libamdhip64.so.7 (and libhipfft.so.0), linked against the SDK's."""
    libs = tmp / "link"
    libs.mkdir(exist_ok=True)
    import zipfile

    for whl, member in (
        (f"rocm_sdk_core-7.2.4-{TAG}.whl", "_rocm_sdk_core/lib/libamdhip64.so.7"),
        (f"rocm_sdk_libraries-7.2.4-{TAG}.whl", "_rocm_sdk_libraries/lib/libhipfft.so.0"),
    ):
        (libs / Path(member).name).write_bytes(zipfile.ZipFile(sdk / whl).read(member))
    link = ("libamdhip64.so.7", "libhipfft.so.0") if needs_fft else ("libamdhip64.so.7",)
    body = "int hipGetDeviceCount(int *); int demo(void) { int n; return hipGetDeviceCount(&n); }"
    if needs_fft:
        body += "\nint hipfftCreate(void); int demo_fft(void) { return hipfftCreate(); }"
    ext = _so(libs / "_C.so", "_C.so", body, link=link, runpath=runpath)
    return write_wheel(
        tmp / f"demo-1.0-cp313-cp313-{TAG.rsplit('-', 1)[1]}.whl",
        {"demo/__init__.py": b"", "demo/_C.so": ext},
        requires=requires,
    )


def _gate(wheel: Path, sdk: Path, archs: tuple[str, ...] = ("gfx942",)):  # type: ignore[no-untyped-def]
    pip = gather(PIN, sorted(sdk.glob("*.whl")), source=f"index {sdk}")
    config = GateConfig(archs=archs, rocm_pip=pip).validated()
    return evaluate(inspect_wheel(wheel), config)


def _errors(verdict, prefix: str = "rocm-pip") -> list[str]:  # type: ignore[no-untyped-def]
    return [f"{f.rule}: {f.message}" for f in verdict.findings if f.rule.startswith(prefix)]


def test_reached_and_declared_library_passes_and_names_its_dependency(tmp_path: Path, sdk: Path) -> None:
    wheel = _extension(tmp_path, sdk, runpath="$ORIGIN/../_rocm_sdk_core/lib", requires=[PIN])
    verdict = _gate(wheel, sdk)
    assert _errors(verdict) == []
    (use,) = [u for u in verdict.libraries if u.library == "libamdhip64.so.7"]
    assert use.status == "dependency"
    assert use.detail == "rocm-sdk-core 7.2.4: _rocm_sdk_core/lib/libamdhip64.so.7"


def test_an_rpath_that_misses_the_core_folder_fails_with_where_the_library_is(
    tmp_path: Path, sdk: Path
) -> None:
    wheel = _extension(tmp_path, sdk, runpath="$ORIGIN/../../_rocm_sdk_core/lib", requires=[PIN])
    (message,) = _errors(_gate(wheel, sdk))
    assert message.startswith("rocm-pip-provided: demo/_C.so needs libamdhip64.so.7")
    assert "rocm-sdk-core 7.2.4 has it at _rocm_sdk_core/lib/libamdhip64.so.7" in message
    assert "$ORIGIN/../../_rocm_sdk_core/lib -> ../_rocm_sdk_core/lib" in message


def test_an_unpinned_requires_dist_admits_a_release_with_other_sonames(tmp_path: Path, sdk: Path) -> None:
    wheel = _extension(tmp_path, sdk, runpath="$ORIGIN/../_rocm_sdk_core/lib", requires=["rocm[libraries]"])
    errors = _errors(_gate(wheel, sdk))
    assert errors, "an unpinned requirement must fail"
    assert all(e.startswith("rocm-pip-range: Requires-Dist rocm[libraries] admits ROCm ") for e in errors)
    six = [e for e in errors if "admits ROCm 6.4 " in e]
    assert (
        six
        and "libamdhip64.so.7 vs libamdhip64.so.6" in six[0]
        and "pin it as rocm[libraries]==7.2.*" in six[0]
    )


def test_a_target_without_a_device_package_fails(tmp_path: Path, sdk: Path) -> None:
    wheel = _extension(tmp_path, sdk, runpath="$ORIGIN/../_rocm_sdk_core/lib", requires=[PIN])
    (message,) = _errors(_gate(wheel, sdk, archs=("gfx90a:xnack-", "gfx942")))
    assert message.startswith(
        "rocm-pip-device: job target gfx90a:xnack-: ROCm 7.2.4 has no rocm-sdk-device-gfx90a"
    )
    assert "has rocm-sdk-device-gfx942" in message


def test_a_library_of_an_extra_the_wheel_does_not_require_is_undeclared(tmp_path: Path, sdk: Path) -> None:
    wheel = _extension(
        tmp_path,
        sdk,
        runpath="$ORIGIN/../_rocm_sdk_core/lib:$ORIGIN/../_rocm_sdk_libraries/lib",
        requires=["rocm==7.2.*"],
        needs_fft=True,
    )
    (message,) = _errors(_gate(wheel, sdk))
    assert message.startswith(
        "rocm-pip-declared: demo/_C.so needs libhipfft.so.0 from rocm-sdk-libraries 7.2.4"
    )
    assert "require rocm[libraries]==7.2.*" in message


def test_no_requires_dist_at_all_is_undeclared(tmp_path: Path, sdk: Path) -> None:
    wheel = _extension(tmp_path, sdk, runpath="$ORIGIN/../_rocm_sdk_core/lib", requires=[])
    errors = _errors(_gate(wheel, sdk))
    assert any(
        e.startswith("rocm-pip-declared: the wheel needs ROCm libraries (libamdhip64.so.7)") for e in errors
    )


def test_the_configuration_round_trips_through_the_manifest_json(sdk: Path) -> None:
    pip = gather(PIN, sorted(sdk.glob("*.whl")), source="index")
    config = GateConfig(rocm_pip=pip).validated()
    again = GateConfig.from_json(to_data(config))
    assert again.rocm_pip == pip
    assert pip.release.version == "7.2.4" and pip.release.devices() == ("gfx942",)


def test_check_cli_gates_with_the_sdk_folder(tmp_path: Path, sdk: Path) -> None:
    from click.testing import CliRunner

    from buildkit.cli.check import check

    good = _extension(tmp_path, sdk, runpath="$ORIGIN/../_rocm_sdk_core/lib", requires=[PIN])
    args = ["--rocm-from-pip", PIN, "--rocm-sdk", str(sdk), "--archs", "gfx942", "--json"]
    done = CliRunner().invoke(check, [str(good), *args])
    # the test wheel's linux_x86_64 tag fails the platform rules; no rocm-pip rule does
    report = json.loads(done.output)["wheels"][0]
    assert not [f for f in report["findings"] if f["rule"].startswith("rocm-pip")], report["findings"]
    (lib,) = [u for u in report["libraries"] if u["library"] == "libamdhip64.so.7"]
    assert lib == {
        "library": "libamdhip64.so.7",
        "status": "dependency",
        "needed_by": ["demo/_C.so"],
        "detail": "rocm-sdk-core 7.2.4: _rocm_sdk_core/lib/libamdhip64.so.7",
    }
    alone = CliRunner().invoke(check, [str(good), "--rocm-sdk", str(sdk)])
    # the group maps UsageError to exit 2; the command alone raises it
    assert isinstance(alone.exception, UsageError) and "go together" in str(alone.exception)


# ------------------------------------------------------------------ the build's side: sdk_link
# What the build runs after auditwheel repair in the container (buildkit.building.sdk_link), here on the
# host with the real patchelf, then judged by the gate against the SDK's wheels.


def test_sdk_link_makes_a_wheel_without_rpath_or_requirement_pass(tmp_path: Path, sdk: Path) -> None:
    from buildkit.building import sdk_link

    wheel = _extension(tmp_path, sdk, runpath="", requires=[], needs_fft=True)
    before = _errors(_gate(wheel, sdk))
    assert any(e.startswith("rocm-pip-declared") for e in before), before
    added = sdk_link.link_wheel(
        wheel, PIN, [sdk_link.CORE_LIB, sdk_link.LIBRARIES_LIB], ["libamdhip64.so*", "libhipfft*.so*"]
    )
    assert added == {"demo/_C.so": ["$ORIGIN/../_rocm_sdk_core/lib", "$ORIGIN/../_rocm_sdk_libraries/lib"]}
    verdict = _gate(wheel, sdk)
    # RECORD rewritten (no record error); the host-only test library has no device code (gfx-arch)
    assert [f"{f.rule}: {f.message}" for f in verdict.errors if f.rule != "gfx-arch"] == []
    assert PIN in inspect_wheel(wheel).metadata_requires
    uses = {u.library: u.detail for u in verdict.libraries if u.status == "dependency"}
    assert uses["libhipfft.so.0"] == "rocm-sdk-libraries 7.2.4: _rocm_sdk_libraries/lib/libhipfft.so.0"
    # a second run adds nothing (the entries are there, the requirement too)
    assert sdk_link.link_wheel(wheel, PIN, [sdk_link.CORE_LIB], ["libamdhip64.so*"]) == {}
    meta = inspect_wheel(wheel).metadata_requires
    assert list(meta).count(PIN) == 1


def test_sdk_link_leaves_an_elf_that_needs_no_sdk_library_alone(tmp_path: Path, sdk: Path) -> None:
    from buildkit.building import sdk_link

    wheel = _extension(tmp_path, sdk, runpath="", requires=[])
    assert sdk_link.link_wheel(wheel, PIN, [sdk_link.CORE_LIB], ["libnothing.so*"]) == {}
    assert PIN in inspect_wheel(wheel).metadata_requires


@pytest.mark.parametrize(
    ("member", "entry"),
    [
        ("_C.so", "$ORIGIN/_rocm_sdk_core/lib"),
        ("pkg/_C.so", "$ORIGIN/../_rocm_sdk_core/lib"),
        ("pkg/sub/lib/_k.so", "$ORIGIN/../../../_rocm_sdk_core/lib"),
        ("demo-1.0.data/platlib/pkg/_C.so", "$ORIGIN/../_rocm_sdk_core/lib"),
        ("demo-1.0.data/scripts/tool", None),
    ],
)
def test_sdk_link_depth_is_computed_per_elf(member: str, entry: str | None) -> None:
    from buildkit.building.sdk_link import CORE_LIB, origin_entry

    assert origin_entry(member, CORE_LIB) == entry


def test_sdk_link_adds_the_requirement_after_the_others() -> None:
    from buildkit.building.sdk_link import add_requirement

    meta = "Metadata-Version: 2.1\nName: demo\nRequires-Dist: numpy\nSummary: x\n\nbody\n"
    assert add_requirement(meta, PIN) == (
        f"Metadata-Version: 2.1\nName: demo\nRequires-Dist: numpy\nRequires-Dist: {PIN}\nSummary: x\n\nbody\n"
    )
    assert add_requirement("Name: demo\n", PIN) == f"Name: demo\nRequires-Dist: {PIN}\n"
