"""``buildkit diff`` on ROCm-like wheels: extensions built with the host's gcc against stub libraries
carrying real ROCm SONAMEs (``libamdhip64.so.6`` & co.), so each wheel needs them the way a ROCm
wheel does. The run-time libraries are named as ``buildkit check`` names them: ``--exclude-set``,
``--rocm``, ``--recipe R --job ID`` (:func:`buildkit.service.check.run_time_globs`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from buildkit.compare.diff import diff_wheels
from buildkit.errors import UsageError
from buildkit.gate.options import exclude_set_globs
from buildkit.service.check import run_time_globs
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.unit.test_diff import OLD_C, fatbin, run, wheel

pytestmark = pytest.mark.skipif(not have_gcc(), reason="gcc is needed to build test libraries")

REPO = Path(__file__).parents[2]
REFERENCE = REPO / "recipes" / "reference-trixie.yaml"
# link name -> SONAME of the stub (as ROCm 6.x / Debian / torch ship them)
STUBS = {
    "amdhip64": "libamdhip64.so.6",
    "rocblas": "librocblas.so.4",
    "hipsparselt": "libhipsparselt.so.0",  # not in ROCm 5.7 (buildkit/rocm/libraries.yaml)
    "drm_amdgpu": "libdrm_amdgpu.so.1",  # the rocm-system set
    "c10": "libc10.so",  # the torch set
}


def extension(tmp: Path, name: str, links: tuple[str, ...]) -> bytes:
    """A HIP-like extension (gfx90a offload bundle) calling into the stubs ``links`` (link names; a
    call each, or the linker's --as-needed drops the library)."""
    source = OLD_C + "".join(f"int {link}_init(void);\n" for link in links)
    source += "int init(void) { return 0" + "".join(f" + {link}_init()" for link in links) + "; }\n"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LIBRARY_PATH", str(tmp / "stubs"))
        return build_shared_library(tmp / name, source, libs=links, fatbin=fatbin(["gfx90a"])).read_bytes()


@pytest.fixture(scope="module")
def exts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("rocm")
    (tmp / "stubs").mkdir()
    for link, soname in STUBS.items():
        source = f"int {link}_init(void) {{ return 0; }}\n"
        build_shared_library(tmp / "stubs" / f"lib{link}.so", source, soname=soname)
    return {
        "hip": extension(tmp, "hip.so", ("amdhip64",)),
        "blas": extension(tmp, "blas.so", ("amdhip64", "rocblas")),
        "sparselt": extension(tmp, "sparselt.so", ("amdhip64", "hipsparselt")),
        "everything": extension(tmp, "all.so", ("amdhip64", "rocblas", "drm_amdgpu", "c10")),
        "none": extension(tmp, "none.so", ()),  # the same code needing no ROCm library
    }


def pair(tmp: Path, exts: dict[str, bytes], old: str, new: str) -> tuple[Path, Path]:
    return (
        wheel(tmp / "old", "hipdemo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", {"hipdemo/_k.so": exts[old]}),
        wheel(tmp / "new", "hipdemo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl", {"hipdemo/_k.so": exts[new]}),
    )


def diff_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run(capsys, *args, "--json")
    assert out, err
    doc: dict[str, Any] = json.loads(out)
    return code, doc


def test_the_stubs_give_rocm_sonames(tmp_path: Path, exts: dict[str, bytes]) -> None:
    from buildkit.inspect import inspect_wheel

    _, new = pair(tmp_path, exts, "hip", "everything")
    (elf,) = [e for e in inspect_wheel(new).elves if e.member == "hipdemo/_k.so"]
    assert set(STUBS.values()) - {STUBS["hipsparselt"]} <= set(elf.needed)


def test_without_run_time_libraries_a_rocm_wheel_is_linux_tagged(
    tmp_path: Path, exts: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    """The defect: every ROCm library external, so the tag is linux_x86_64 and a ROCm library the new
    release adds is a regression; ``--exclude-set rocm`` gives the tag the symbols allow (that of the
    same code needing no ROCm library) and no regression."""
    old, new = pair(tmp_path, exts, "hip", "blas")
    plain = diff_wheels(*pair(tmp_path / "plain", exts, "none", "none"))
    assert plain.new_policy is not None and plain.new_policy.startswith("manylinux_")

    code, doc = diff_json(capsys, str(old), str(new))
    assert code == 0 and doc["policy"]["new"] == "linux_x86_64" and doc["exclude_globs"] == []
    assert "external library librocblas.so.4 (new)" in doc["regressions"]
    assert run(capsys, str(old), str(new), "--fail-on-regression")[0] == 7

    code, doc = diff_json(capsys, str(old), str(new), "--exclude-set", "rocm")
    assert code == 0 and doc["policy"] == {
        "old": plain.new_policy,
        "new": plain.new_policy,
        "regression": False,
    }
    assert doc["exclude_globs"] == exclude_set_globs(["rocm"], None)
    assert [(lib["library"], lib["new"], lib["regression"]) for lib in doc["libraries"]] == [
        ("librocblas.so.4", "excluded", False)
    ]
    assert doc["regression"] is False
    code, out, _ = run(capsys, str(old), str(new), "--exclude-set", "rocm", "--fail-on-regression")
    assert code == 0 and f"manylinux tag: {plain.new_policy} (unchanged)" in out
    assert "provided at run time: libamdhip64.so*" in out and "more (--json lists them)" in out


def test_exclude_set_equals_its_globs_given_by_hand(
    tmp_path: Path, exts: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = pair(tmp_path, exts, "hip", "everything")
    sets = ["rocm", "rocm-system", "torch"]
    by_hand = [arg for glob in exclude_set_globs(sets, "7.2") for arg in ("--exclude", glob)]
    by_set = [arg for s in sets for arg in ("--exclude-set", s)]
    code, doc = diff_json(capsys, str(old), str(new), *by_set, "--rocm", "7.2")
    assert code == 0 and not doc["regression"], doc["regressions"]
    assert {lib["library"] for lib in doc["libraries"]} == {
        "librocblas.so.4",
        "libdrm_amdgpu.so.1",
        "libc10.so",
    }
    code, hand = diff_json(capsys, str(old), str(new), *by_hand)
    assert code == 0 and hand == doc
    # one set short: its library is external again
    code, doc = diff_json(capsys, str(old), str(new), "--exclude-set", "rocm", "--exclude-set", "torch")
    assert [r for r in doc["regressions"] if "external" in r] == ["external library libdrm_amdgpu.so.1 (new)"]


def test_rocm_release_decides_what_the_rocm_set_covers(
    tmp_path: Path, exts: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    """As for ``check``: ``--rocm 5.7`` expands the set to ROCm 5.7's libraries (no hipSPARSELt)."""
    old, new = pair(tmp_path, exts, "hip", "sparselt")
    assert not any(g.startswith("libhipsparselt") for g in exclude_set_globs(["rocm"], "5.7"))
    code, doc = diff_json(capsys, str(old), str(new), "--exclude-set", "rocm", "--rocm", "5.7")
    assert code == 0 and doc["regressions"][1:] == ["external library libhipsparselt.so.0 (new)"]
    assert doc["policy"]["new"] == "linux_x86_64" and doc["policy"]["regression"] is True
    code, doc = diff_json(capsys, str(old), str(new), "--exclude-set", "rocm", "--rocm", "7.2")
    assert code == 0 and doc["regression"] is False
    code, out, err = run(capsys, str(old), str(new), "--rocm", "7.2", "--json")  # no set: nothing excluded
    assert code == 0 and json.loads(out)["exclude_globs"] == [] and "add --exclude-set rocm" in err
    code, _, err = run(capsys, str(old), str(new), "--exclude-set", "rocm", "--rocm", "9.9")
    assert code == 2 and "no data for ROCm 9.9" in err and "Traceback" not in err
    code, _, err = run(capsys, str(old), str(new), "--exclude-set", "cuda")
    assert code == 2 and "'cuda' is not one of" in err


def test_recipe_job_takes_the_exclusions_check_and_build_use(
    tmp_path: Path, exts: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    from buildkit.cli import main
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    job = expand(load_recipe(REFERENCE)).jobs[0]
    assert job.exclude_globs  # the reference recipe excludes the ROCm set (for its ROCm 5.7)
    old, new = pair(tmp_path, exts, "hip", "blas")
    recipe_job = ("--recipe", str(REFERENCE), "--job", job.id)
    code, doc = diff_json(capsys, str(old), str(new), *recipe_job)
    assert code == 0 and doc["exclude_globs"] == list(job.exclude_globs)
    assert doc["regression"] is False and doc["policy"]["new"].startswith("manylinux_")
    # exactly the configuration `buildkit check --recipe R --job ID` gates with
    with pytest.raises(SystemExit):
        main(["check", "--json", str(new), *recipe_job])
    check_doc = json.loads(capsys.readouterr().out)
    assert check_doc["wheels"][0]["config"]["exclude_globs"] == doc["exclude_globs"]

    # --exclude and --exclude-set add to the job's globs
    code, doc = diff_json(capsys, str(old), str(new), *recipe_job, "--exclude", "libtiny.so*")
    assert doc["exclude_globs"] == [*job.exclude_globs, "libtiny.so*"]
    code, doc = diff_json(capsys, str(old), str(new), *recipe_job, "--exclude-set", "torch")
    assert doc["exclude_globs"] == [*job.exclude_globs, *exclude_set_globs(["torch"], job.rocm)]

    code, _, err = run(capsys, str(old), str(new), "--job", job.id)
    assert code == 2 and "--recipe and --job go together" in err
    code, _, err = run(capsys, str(old), str(new), "--recipe", str(REFERENCE))
    assert code == 2 and "--recipe and --job go together" in err
    code, _, err = run(capsys, str(old), str(new), "--recipe", str(REFERENCE), "--job", "nope")
    assert code == 2 and "no job 'nope'" in err and job.id in err


def test_against_index_with_exclude_set(
    tmp_path: Path, exts: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = pair(tmp_path, exts, "hip", "blas")
    project = tmp_path / "index" / "hipdemo"
    project.mkdir(parents=True)
    shutil.copy(old, project)
    url = (tmp_path / "index").as_uri() + "/"
    code, out, _ = run(capsys, "--against-index", url, str(new), "--fail-on-regression")
    assert code == 7 and "external library librocblas.so.4 (new)" in out
    code, out, _ = run(
        capsys, "--against-index", url, str(new), "--fail-on-regression", "--exclude-set", "rocm"
    )
    assert code == 0 and "no regression" in out and "linux_x86_64" not in out


def test_run_time_globs_library_call() -> None:
    assert run_time_globs() == ()
    assert run_time_globs(exclude=["libx.so*"], exclude_sets=["torch"]) == (
        "libx.so*",
        *exclude_set_globs(["torch"], None),
    )
    assert run_time_globs(exclude_sets=["rocm"], rocm="5.7") == tuple(exclude_set_globs(["rocm"], "5.7"))
    with pytest.raises(UsageError, match="go together"):
        run_time_globs(job="cp313-rocm5.7")
