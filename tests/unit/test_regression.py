"""The gate rule "no regression against the last release": a recipe with ``gate.no_regression_against``
planned into a Job, wheels built here with the host's gcc (Debian's glibc, so ``dlopen`` binds to
GLIBC_2.34) carrying synthesized HIP offload bundles, released into a local PEP 503 index (``file://``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from buildkit.compare.baseline import check_regression, compare_with_last_release
from buildkit.compare.diff import diff_wheels
from buildkit.errors import WheelReadError
from buildkit.gate.rules.regression import REGRESSION
from buildkit.plan.expansion import expand
from buildkit.plan.models import Job
from buildkit.recipe import parse_recipe
from buildkit.records import to_data
from tests.helpers.offload_bundle import amdgpu_header, plain_bundle
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_zip import write_wheel

pytestmark = pytest.mark.skipif(not have_gcc(), reason="gcc is needed to build test libraries")

OLD_C = "#include <string.h>\nint f(const char *s) { return (int)strlen(s); }\n"  # GLIBC_2.2.5 only
NEW_C = '#include <dlfcn.h>\nvoid *g(void) { return dlopen("x", 0); }\n'  # dlopen@GLIBC_2.34
FOO_USER = "int foo(void);\nint h(void) { return foo(); }\n"
E_FLAGS = {"gfx908": 0x30 | 0x100, "gfx90a": 0x3F | 0x100}  # code object v4, xnack "any"
OLD_NAME = "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"

RECIPE = """\
name: demo
source: {{path: ../src}}
version: {{base: "1.1"}}
python: ["3.11"]
rocm: ["6.4"]
archs: {{list: [gfx908, gfx90a]}}
manylinux: {{policy: manylinux_2_28}}
image: manylinux_2_28-rocm
{extra}"""


def fatbin(archs: list[str]) -> bytes:
    entries = [("host-x86_64-unknown-linux-gnu-", b"")]
    entries += [(f"hipv4-amdgcn-amd-amdhsa--{a}", amdgpu_header(E_FLAGS[a], 2) + b"\0" * 256) for a in archs]
    return plain_bundle(entries)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wheel(directory: Path, filename: str, members: dict[str, bytes]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return write_wheel(directory / filename, members, tag=filename.removesuffix(".whl").split("-", 2)[2])


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("libs")
    libdir = tmp / "lib"
    libdir.mkdir()
    build_shared_library(libdir / "libfoo.so", "int foo(void) { return 1; }\n", soname="libfoo.so.1")
    mp = pytest.MonkeyPatch()
    mp.setenv("LIBRARY_PATH", str(libdir))
    try:
        user = build_shared_library(tmp / "user.so", FOO_USER, libs=("foo",)).read_bytes()
    finally:
        mp.undo()
    return {
        "old": build_shared_library(tmp / "old.so", OLD_C, fatbin=fatbin(["gfx908", "gfx90a"])).read_bytes(),
        "new": build_shared_library(tmp / "new.so", NEW_C, fatbin=fatbin(["gfx90a"])).read_bytes(),
        "user": user,
    }


def release(root: Path, wheels: dict[str, dict[str, bytes]]) -> str:
    """A static PEP 503 index under ``root`` holding ``wheels``; returns its ``file://`` URL."""
    project = root / "simple" / "demo"
    links = []
    for name, members in wheels.items():
        path = wheel(project, name, members)
        links.append(f'<a href="{name}#sha256={sha256(path)}">{name}</a>')
    project.mkdir(parents=True, exist_ok=True)
    (project / "index.html").write_text("<html><body>\n" + "\n".join(links) + "\n</body></html>\n")
    return (root / "simple").as_uri() + "/"


def job_for(tmp_path: Path, url: str | None, extra: str = "") -> Job:
    gate = f"gate: {{no_regression_against: '{url}'}}\n" if url else ""
    recipe = parse_recipe(RECIPE.format(extra=gate + extra), path=tmp_path / "recipe.yaml")
    (job,) = expand(recipe, env={}).jobs
    return job


def test_every_regression_is_an_error_finding_naming_what(tmp_path: Path, libs: dict[str, bytes]) -> None:
    url = release(tmp_path / "index", {OLD_NAME: {"demo/_k.so": libs["old"]}})
    new = wheel(
        tmp_path / "dist",
        "demo-1.1-cp311-cp311-manylinux_2_34_x86_64.whl",
        {"demo/_k.so": libs["new"], "demo/_user.so": libs["user"]},
    )
    job = job_for(tmp_path, url)
    assert job.regression_baseline == url

    findings = check_regression(job, new)
    assert {f.rule for f in findings} == {REGRESSION.id} and {f.severity for f in findings} == {"error"}
    # the same regressions `buildkit diff` reports, one finding each
    expected = diff_wheels(tmp_path / "index" / "simple" / "demo" / OLD_NAME, new).regressions
    assert len(findings) == len(expected) == 5
    by_symbol = {f.symbol: f for f in findings}
    glibc = by_symbol["GLIBC_2.34"]
    assert (glibc.library, glibc.file) == ("libc.so.6", "demo/_k.so")
    assert glibc.message == f"libc.so.6 GLIBC 2.2.5 -> 2.34 since {OLD_NAME} (needed by demo/_k.so)"
    # the external library leaves the content consistent with no manylinux tag at all
    assert by_symbol["linux_x86_64"].message == (
        f"the wheel is less compatible than the last release: manylinux tag manylinux_2_5_x86_64 -> "
        f"linux_x86_64 since {OLD_NAME}"
    )
    lost = by_symbol["cp311-cp311-manylinux_2_28_x86_64"]
    assert lost.message.startswith("platform tag cp311-cp311-manylinux_2_28_x86_64 no longer provided")
    gfx = by_symbol["gfx908"]
    assert (gfx.file, gfx.message) == (
        "demo/_k.so",
        f"demo/_k.so: gfx target(s) gfx908 removed since {OLD_NAME}",
    )
    (external,) = [f for f in findings if f.library == "libfoo.so.1"]
    assert external.message == f"external library libfoo.so.1 (new) since {OLD_NAME}"


def test_result_records_the_verified_baseline(tmp_path: Path, libs: dict[str, bytes]) -> None:
    url = release(tmp_path / "index", {OLD_NAME: {"demo/_k.so": libs["old"]}})
    new = wheel(
        tmp_path / "dist", "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/_k.so": libs["new"]}
    )
    check = compare_with_last_release(job_for(tmp_path, url), new, workdir=tmp_path / "work")
    assert check is not None and not check.passed and check.compared_with == OLD_NAME
    doc = to_data(check)
    assert doc["index_url"] == url and doc["passed"] is False
    assert doc["baseline"]["file"]["hashes"] == {
        "sha256": sha256(tmp_path / "index" / "simple" / "demo" / OLD_NAME)
    }
    assert doc["baseline"]["verified"] == ["sha256"]
    assert [f["symbol"] for f in doc["findings"]] == ["manylinux_2_34_x86_64", "GLIBC_2.34", "gfx908"]
    assert (tmp_path / "work" / OLD_NAME).is_file()  # downloaded where asked


def test_no_regression_passes(tmp_path: Path, libs: dict[str, bytes]) -> None:
    url = release(tmp_path / "index", {OLD_NAME: {"demo/_k.so": libs["new"]}})
    # same content plus a gfx target, newer version: an improvement
    members = {
        "demo/_k.so": build_shared_library(
            tmp_path / "k.so", NEW_C, fatbin=fatbin(["gfx908", "gfx90a"])
        ).read_bytes()
    }
    new = wheel(tmp_path / "dist", "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl", members)
    check = compare_with_last_release(job_for(tmp_path, url), new)
    assert check is not None and check.passed and check.findings == ()
    assert check.diff is not None and check.diff.gfx_added == ("gfx908",)


def test_first_release_has_nothing_to_compare(tmp_path: Path, libs: dict[str, bytes]) -> None:
    (tmp_path / "index" / "simple").mkdir(parents=True)  # an index without the project yet
    url = (tmp_path / "index" / "simple").as_uri() + "/"
    new = wheel(
        tmp_path / "dist", "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/_k.so": libs["new"]}
    )
    check = compare_with_last_release(job_for(tmp_path, url), new)
    assert check is not None and check.baseline.file is None and check.diff is None
    assert check.passed and check.compared_with is None
    assert check_regression(job_for(tmp_path, url), new) == []


def test_without_the_rule_nothing_is_read(tmp_path: Path, libs: dict[str, bytes]) -> None:
    new = wheel(
        tmp_path / "dist", "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/_k.so": libs["new"]}
    )
    job = job_for(tmp_path, None)
    assert job.regression_baseline is None
    assert compare_with_last_release(job, new) is None and check_regression(job, new) == []


def test_libraries_the_recipe_excludes_are_no_regression(tmp_path: Path, libs: dict[str, bytes]) -> None:
    url = release(tmp_path / "index", {OLD_NAME: {"demo/_k.so": libs["old"]}})
    members = {"demo/_k.so": libs["old"], "demo/_user.so": libs["user"]}
    new = wheel(tmp_path / "dist", "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl", members)
    findings = check_regression(job_for(tmp_path, url), new)
    assert [(f.library, f.symbol) for f in findings] == [(None, "linux_x86_64"), ("libfoo.so.1", None)]
    excluding = job_for(tmp_path, url, "repair: {exclude: {patterns: ['libfoo.so*']}}\n")
    assert check_regression(excluding, new) == []


def test_a_baseline_not_matching_its_hash_is_refused(tmp_path: Path, libs: dict[str, bytes]) -> None:
    url = release(tmp_path / "index", {OLD_NAME: {"demo/_k.so": libs["old"]}})
    published = tmp_path / "index" / "simple" / "demo" / OLD_NAME
    published.write_bytes(published.read_bytes() + b"tampered")
    new = wheel(
        tmp_path / "dist", "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/_k.so": libs["old"]}
    )
    with pytest.raises(WheelReadError, match="does not match its sha256"):
        check_regression(job_for(tmp_path, url), new)
