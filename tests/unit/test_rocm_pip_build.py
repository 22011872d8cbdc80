"""ROCm from pip, the recipe's ``rocm_pip:`` through plan, build requirements and cibuildwheel's
options: the release said once (the job's ``rocm``), the SDK locked with one device extra per target
(a real ``pip download`` from a folder of SDK-shaped wheels, ``--no-index``: nothing reaches an
index), ``ROCM_HOME``/``CMAKE_PREFIX_PATH`` from ``rocm-sdk path`` in the container, the SDK's
SONAMEs excluded from repair and :mod:`buildkit.building.sdk_link` run after it. The wheel side
(RPATHs, Requires-Dist, RECORD) is tested with the gate in ``test_rocm_pip_gate.py``; the whole
build in ``tests/docker/test_rocm_pip_e2e.py``."""

from __future__ import annotations

import io
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from buildkit.building import cibw
from buildkit.building import requirements as reqs
from buildkit.errors import RecipeError
from buildkit.plan.expansion import expand
from buildkit.plan.models import Job
from buildkit.plan.render import render_table
from buildkit.recipe import Recipe, load_recipe
from buildkit.records import to_data
from tests.helpers.wheel_zip import write_wheel

ROOT = Path(__file__).resolve().parents[2]
PIN = "rocm[libraries]==7.2.*"


def _recipe(tmp: Path, **changes: Any) -> Recipe:
    data = yaml.safe_load((ROOT / "recipes" / "reference.yaml").read_text())
    data["source"] = {"path": str(ROOT / "csrc")}
    data.update({"python": ["3.13"], "rocm": ["7.2"], "archs": {"list": ["gfx942", "gfx950:xnack-"]}})
    data["repair"] = {"exclude": {"patterns": ["libfoo.so*"]}}  # no rocm set: rocm_pip adds it
    data["rocm_pip"] = {}
    data.update(changes)
    path = tmp / "recipe.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_recipe(path)


def _job(tmp: Path, **changes: Any) -> Job:
    return expand(_recipe(tmp, **changes), env={}).jobs[0]


def test_the_release_is_said_once_and_the_build_adds_devel_and_a_device_extra_per_processor(
    tmp_path: Path,
) -> None:
    job = _job(tmp_path)
    assert job.rocm_pip_requirement == PIN
    assert job.rocm_pip_build_requirement == "rocm[devel,device-gfx942,device-gfx950,libraries]==7.2.*"
    assert "libamdhip64.so*" in job.exclude_globs and "libfoo.so*" in job.exclude_globs
    assert to_data(job)["rocm_pip"] == {
        "requirement": PIN,
        "build_requirement": job.rocm_pip_build_requirement,
    }
    exact = _job(tmp_path, rocm=["7.2.4"], rocm_pip={"extras": ["libraries", "core"]})
    assert exact.rocm_pip_requirement == "rocm[core,libraries]==7.2.4"


def test_a_job_without_rocm_pip_keeps_its_json(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "recipes" / "reference.yaml").read_text())
    job = expand(load_recipe(ROOT / "recipes" / "reference.yaml"), env={}).jobs[0]
    assert job.rocm_pip is None and "rocm_pip" not in to_data(job) and "rocm_pip" not in data


def test_the_plan_shows_the_mode(tmp_path: Path) -> None:
    text = render_table(expand(_recipe(tmp_path), env={}))
    assert f"rocm from pip: the wheel requires {PIN}" in text
    assert "built with rocm[devel,device-gfx942,device-gfx950,libraries]==7.2.*" in text


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"network": True}, "rocm_pip needs a hermetic build"),
        ({"rocm_pip": {"extras": ["device-gfx942"]}}, "'device-gfx942' is added for the build only"),
    ],
)
def test_refused_at_load(tmp_path: Path, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(RecipeError, match=message):
        _recipe(tmp_path, **changes)


def test_the_sdk_is_requested_with_the_recipe_position_and_linux_wheels_admitted(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path)
    job = expand(recipe, env={}).jobs[0]
    (wanted,) = [r for r in reqs.requested(recipe, job, ROOT / "csrc") if r.name == "rocm"]
    assert wanted.requirement == job.rocm_pip_build_requirement
    assert wanted.at == ("rocm_pip",) and wanted.origin == reqs.ROCM_PIP_ORIGIN
    args = reqs.target_args(job)
    assert args[args.index(reqs.ROCM_PIP_PLATFORM) - 1] == "--platform"


def _sdk_folder(folder: Path) -> Path:
    """SDK-shaped wheels of 7.2.4 (TheRock's names, linux_x86_64 tags), one device package only."""
    v, tag = "7.2.4", "py3-none-linux_x86_64"
    folder.mkdir()
    write_wheel(folder / f"rocm_sdk_core-{v}-{tag}.whl", {"_rocm_sdk_core/lib/x": b""})
    write_wheel(folder / f"rocm_sdk_libraries-{v}-{tag}.whl", {"_rocm_sdk_libraries/lib/x": b""})
    write_wheel(folder / f"rocm_sdk_devel-{v}-{tag}.whl", {"_rocm_sdk_devel/x": b""})
    write_wheel(folder / f"rocm_sdk_device_gfx942-{v}-{tag}.whl", {"_rocm_sdk_device_gfx942/x": b""})
    write_wheel(
        folder / f"rocm-{v}-py3-none-any.whl",
        {"rocm_sdk/__init__.py": b""},
        extras=["libraries", "devel", "device-gfx942"],
        requires=[
            f"rocm-sdk-core=={v}",
            f'rocm-sdk-libraries=={v}; extra == "libraries"',
            f'rocm-sdk-devel=={v}; extra == "devel"',
            f'rocm-sdk-device-gfx942=={v}; extra == "device-gfx942"',
        ],
    )
    return folder


def test_the_sdk_is_resolved_and_locked_by_real_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    src = tmp_path / "src"
    src.mkdir()
    (src / "pyproject.toml").write_text('[build-system]\nrequires = []\nbuild-backend = "x"\n')
    recipe = _recipe(tmp_path, archs={"list": ["gfx942"]})
    job = expand(recipe, env={}).jobs[0]
    lock = reqs.resolve(
        recipe, job, src, tmp_path / "wh", io.StringIO(), wheelhouse=_sdk_folder(tmp_path / "sdk")
    )
    assert sorted(f.name for f in lock.files) == [
        "rocm",
        "rocm-sdk-core",
        "rocm-sdk-devel",
        "rocm-sdk-device-gfx942",
        "rocm-sdk-libraries",
    ]
    assert {f.version for f in lock.files} == {"7.2.4"}
    assert job.rocm_pip_build_requirement in lock.requested


def test_the_container_installs_the_sdk_and_names_its_paths(tmp_path: Path) -> None:
    job = _job(tmp_path)
    settings = cibw.CibwSettings(
        image="rocm-buildkit/debian-sid-rocm:0123456789ab",
        source_date_epoch=1700000000,
        ccache_volume=None,
        with_ca_bundle=False,
        network=False,
    )
    env = cibw.container_environment(job, settings)
    assert env["ROCM_HOME"] == f"{cibw.ROCM_SDK_DIR}/root"
    assert env["CMAKE_PREFIX_PATH"] == f"{cibw.ROCM_SDK_DIR}/cmake"
    assert env["ROCM_PATH"] == "/usr"  # the compiler stays the image's hipcc
    options = cibw.cibuildwheel_options(job, settings)
    install = shlex.split(options["CIBW_BEFORE_ALL_LINUX"].split(" && ")[0])
    assert install[-4:] == [
        "--no-index",
        "--find-links",
        cibw.CONTAINER_WHEELHOUSE,
        job.rocm_pip_build_requirement,
    ]
    assert "rocm_sdk path --root" in options["CIBW_BEFORE_ALL_LINUX"]
    repair, _, link = options["CIBW_REPAIR_WHEEL_COMMAND_LINUX"].rpartition(" && ")
    assert "--exclude 'libamdhip64.so*'" in repair
    words = shlex.split(link.replace("{dest_dir}", "DEST"))
    assert words[:5] == ["python", cibw.CONTAINER_SDK_LINK, "DEST", "--requires", PIN]
    assert words[words.index("--rpath") + 1] == "_rocm_sdk_core/lib"
    assert "_rocm_sdk_libraries/lib" in words and "libamdhip64.so*" in words
