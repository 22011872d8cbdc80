"""The bookworm torch recipe (recipes/reference-torch-bookworm.yaml) as the tool sees it before any container:
its plan on the bookworm builder, the hermetic resolution of its pinned torch (no torch index of its own:
``pip_config: true``), the build environment, the bookworm toolchain data, and the host-side parts of
the torch extension's build (csrc/refops/torchbuild.py)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest
from setuptools.errors import SetupError

from buildkit import rocm
from buildkit.building import ccache, cibw
from buildkit.building import requirements as reqs
from buildkit.errors import RecipeError
from buildkit.gate.config import GateConfig
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "reference-torch-bookworm.yaml"
REFOPS = ROOT / "csrc" / "refops"
CIBW_PATH = "/opt/python/cp311-cp311/bin:/usr/local/bin:/usr/bin:/bin"

sys.path.insert(0, str(REFOPS))
import torchbuild  # noqa: E402


def _job():  # type: ignore[no-untyped-def]
    plan = expand(load_recipe(RECIPE), env={})
    assert [j.id for j in plan.jobs] == ["cp311-rocm5.2-torch2.13"]
    return plan.jobs[0]


def test_the_torch_recipe_plans_one_python_311_job_on_the_bookworm_builder() -> None:
    job = _job()
    assert (job.python, job.cp_tag, job.rocm) == ("3.11", "cp311", "5.2")
    assert job.image_profile == "debian-bookworm-rocm"
    assert job.archs.pytorch_rocm_arch() == "gfx908;gfx90a"
    assert job.platform_tag == "manylinux_2_36_x86_64"
    assert job.version == "0.1.0+rocm5.2.torch2.13.manylinux.2.36"
    assert job.torch_requirement == "torch==2.13.*"
    assert job.torch_index_url is None  # pip_config: true, no --extra-index-url of its own
    globs = set(job.exclude_globs)
    assert {"libtorch*.so*", "libc10*.so*", "libamdhip64.so*"} <= globs
    config = GateConfig.from_job(job, load_recipe(RECIPE))
    assert config.torch == "2.13"


def test_the_hermetic_resolution_requests_the_pinned_torch_from_the_pip_configuration(tmp_path: Path) -> None:
    recipe, job = load_recipe(RECIPE), _job()
    wanted = reqs.requested(recipe, job, REFOPS)
    assert [(r.requirement, r.origin) for r in wanted] == [
        ("setuptools>=77", "pyproject.toml [build-system] requires"),
        ("torch==2.13.*", "pyproject.toml [build-system] requires"),  # the pin itself: not added twice
    ]
    cmd = reqs.resolve_command(
        job, [r.requirement for r in wanted], tmp_path, extra_index=job.torch_index_url
    )
    assert "--extra-index-url" not in cmd and "--no-index" not in cmd  # the user's pip configuration alone
    assert cmd[cmd.index("--python-version") + 1] == "3.11" and cmd[cmd.index("--abi") + 1] == "cp311"
    platforms = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--platform"]
    assert platforms[0] == "manylinux_2_36_x86_64" and "manylinux_2_28_x86_64" in platforms  # torch's tag


def test_the_build_container_gets_debian_paths_the_cache_and_only_the_wheelhouse() -> None:
    from cibuildwheel.environment import parse_environment

    job = _job()
    settings = cibw.CibwSettings(
        image="rocm-buildkit/debian-bookworm-rocm:0123456789ab",
        source_date_epoch=1700000000,
        ccache_volume="rocm-buildkit-ccache-abc",
        with_ca_bundle=False,
        network=False,
    )
    opts = cibw.cibuildwheel_options(job, settings)
    env = parse_environment(opts["CIBW_ENVIRONMENT_LINUX"]).as_dictionary(
        prev_environment={"PATH": CIBW_PATH}
    )
    assert env["ROCM_PATH"] == "/usr"  # Debian's HIP, as on debian-rocm
    assert env["PATH"] == f"{ccache.HOST_CC_WRAPPERS}:/usr/lib/ccache:" + CIBW_PATH
    assert env["HIP_CLANG_LAUNCHER"] == ccache.HIP_LAUNCHER
    assert ccache.layout(job) is ccache.DEBIAN
    assert env["PIP_NO_INDEX"] == "1" and env["PIP_FIND_LINKS"] == cibw.CONTAINER_WHEELHOUSE
    assert env["PIP_CONSTRAINT"] == cibw.CONTAINER_CONSTRAINTS_PATH and "PIP_EXTRA_INDEX_URL" not in env
    assert cibw.constraints(job) == "torch==2.13.*\n"
    repair = opts["CIBW_REPAIR_WHEEL_COMMAND_LINUX"]
    assert "--plat manylinux_2_36_x86_64" in repair
    assert "--exclude 'libtorch*.so*'" in repair and "--exclude 'libc10*.so*'" in repair
    assert "--network=none" in opts["CIBW_CONTAINER_ENGINE"]


def test_pip_config_and_index_url_exclude_each_other(tmp_path: Path) -> None:
    text = RECIPE.read_text(encoding="utf-8").replace(
        "    pip_config: true", "    pip_config: true\n    index_url: https://download.pytorch.org/whl/cpu"
    )
    (tmp_path / "r.yaml").write_text(text.replace("path: ../csrc/refops", f"path: {REFOPS}"))
    with pytest.raises(RecipeError, match=re.escape("torch[0] sets both index_url and pip_config: true")):
        load_recipe(tmp_path / "r.yaml")


def test_without_pip_config_torch_213_has_no_known_index_for_rocm_52(tmp_path: Path) -> None:
    text = RECIPE.read_text(encoding="utf-8").replace("    pip_config: true", "    python: '>=3.10'")
    (tmp_path / "r.yaml").write_text(text.replace("path: ../csrc/refops", f"path: {REFOPS}"))
    with pytest.raises(RecipeError, match=re.escape("no index serving torch 2.13 for ROCm 5.2")):
        expand(load_recipe(tmp_path / "r.yaml"), env={})


def test_pip_config_must_be_a_boolean(tmp_path: Path) -> None:
    text = RECIPE.read_text(encoding="utf-8").replace("pip_config: true", 'pip_config: "yes"')
    (tmp_path / "r.yaml").write_text(text.replace("path: ../csrc/refops", f"path: {REFOPS}"))
    with pytest.raises(RecipeError, match="pip_config"):
        load_recipe(tmp_path / "r.yaml")


def test_bookworm_sonames_are_what_bookworm_ships() -> None:
    sonames = rocm.get_toolchain("debian-bookworm").sonames
    assert sonames["libamdhip64"] == "libamdhip64.so.5"
    assert sonames["libhiprtc-builtins"] == "libhiprtc-builtins.so.5"
    assert "libhiprtc" not in sonames  # HIP 5.2 keeps hipRTC inside libamdhip64: no libhiprtc.so.5
    assert set(sonames) <= {lib.name for lib in rocm.library_sets()["rocm"].libraries}


def test_the_bookworm_dockerfile_links_every_compiler_after_installing_them() -> None:
    text = (ROOT / "docker" / "debian-bookworm-rocm.Dockerfile").read_text(encoding="utf-8")
    run = text[text.index("RUN apt-get update") :]
    run = run[: run.index("\n\n")]
    assert run.index("apt-get install") < run.index("update-ccache-symlinks")
    checked = re.search(r"for cc in ([^;]+); do", run)
    assert checked is not None
    assert {"cc", "c++", "g++", "x86_64-linux-gnu-g++", "clang-15", "clang++-15"} <= set(
        checked.group(1).split()
    )
    assert "ln -s cp311-cp311 /opt/python/cp39-cp39" in text
    assert "AUDITWHEEL_PLAT=manylinux_2_36_x86_64" in text


# --- csrc/refops/torchbuild.py on the host (no torch, no hipcc needed) -----------------------------


def test_the_wheel_requires_the_series_it_was_compiled_against(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(__version__="2.13.0+cpu"))
    assert torchbuild.torch_requirement() == "torch==2.13.*"
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(__version__="2.10.1+rocm7.0"))
    assert torchbuild.torch_requirement() == "torch==2.10.*"
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(__version__="nightly"))
    with pytest.raises(SetupError, match="cannot read the torch series"):
        torchbuild.torch_requirement()


def test_without_torch_the_build_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    with pytest.raises(SetupError, match="refops compiles against torch"):
        torchbuild.torch_requirement()


def test_the_archs_come_from_the_environment_and_must_agree() -> None:
    assert torchbuild.requested_archs({"PYTORCH_ROCM_ARCH": "gfx908;gfx90a"}) == ["gfx908", "gfx90a"]
    assert torchbuild.requested_archs({"GPU_ARCHS": "gfx90a:xnack-"}) == ["gfx90a:xnack-"]
    with pytest.raises(SetupError, match="no GPU archs requested"):
        torchbuild.requested_archs({})
    with pytest.raises(SetupError, match="disagree"):
        torchbuild.requested_archs({"PYTORCH_ROCM_ARCH": "gfx908", "GPU_ARCHS": "gfx90a"})
    with pytest.raises(SetupError, match="not gfx target IDs: sm_80"):
        torchbuild.requested_archs({"PYTORCH_ROCM_ARCH": "sm_80"})


def test_compilation_unit_ids_are_stable_and_distinct() -> None:
    assert torchbuild.compilation_unit_id("src/rms_norm.hip") == torchbuild.compilation_unit_id(
        "src/rms_norm.hip"
    )
    assert torchbuild.compilation_unit_id("src/rms_norm.hip") != torchbuild.compilation_unit_id(
        "src/other.hip"
    )


def test_the_manifest_names_the_torch_wheel_the_lock_holds() -> None:
    from buildkit.building.steps.record import torch_record

    job = _job()
    torch_file = reqs.Locked(
        "torch", "2.13.0+cpu", "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl", "a" * 64
    )
    lock = reqs.Lock(
        job.id, "3.11", ("manylinux_2_36_x86_64",), ("torch==2.13.*",),
        (reqs.Locked("setuptools", "84.2.1", "setuptools-84.2.1-py3-none-any.whl", "b" * 64), torch_file),
    )  # fmt: skip
    assert torch_record(job, lock) == {
        "requirement": "torch==2.13.*",
        "index_url": None,
        "version": "2.13.0+cpu",
        "file": "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        "sha256": "a" * 64,
    }
    unlocked = torch_record(job, None)  # network: true locks nothing
    assert unlocked is not None and unlocked["requirement"] == "torch==2.13.*" and unlocked["file"] is None
    plain = expand(load_recipe(ROOT / "recipes" / "reference-trixie.yaml"), env={}).jobs[0]
    assert torch_record(plain, lock) is None  # no torch pin
