"""Hermetic builds' build requirements (``buildkit.building.requirements``): what is requested, pip's
command lines, the lock format, and real ``pip download`` runs against a local folder of wheels
(``PIP_NO_INDEX=1``, no pip configuration: nothing here reaches an index)."""

from __future__ import annotations

import dataclasses
import io
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from buildkit.building import requirements as reqs
from buildkit.errors import BuildFailed, RecipeError
from buildkit.plan.expansion import expand
from buildkit.plan.models import Job
from buildkit.recipe import Recipe, load_recipe
from buildkit.records import to_data
from tests.helpers.wheel_zip import write_wheel

ROOT = Path(__file__).resolve().parents[2]


def _recipe(tmp: Path, source: Path, **changes: Any) -> tuple[Recipe, Job]:
    """The reference recipe building ``source``, with top-level ``changes``."""
    data = yaml.safe_load((ROOT / "recipes" / "reference-trixie.yaml").read_text())
    data["source"] = {"path": str(source)}
    data.pop("checks")
    data.update(changes)
    path = tmp / "recipe.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    recipe = load_recipe(path)
    return recipe, expand(recipe, env={}).jobs[0]


def _aiter(job_id: str = "cp312-rocm7.2-torch2.10") -> tuple[Recipe, Job]:
    recipe = load_recipe(ROOT / "recipes" / "aiter.yaml")
    return recipe, expand(recipe, env={}).job(job_id)


def _source(tmp: Path, pyproject: str | None) -> Path:
    src = tmp / "src"
    src.mkdir(exist_ok=True)
    if pyproject is not None:
        (src / "pyproject.toml").write_text(pyproject)
    return src


# --------------------------------------------------------------------------- the target
def test_platforms_run_from_the_job_policy_down_to_manylinux2014() -> None:
    tags = reqs.target_platforms("manylinux_2_41_x86_64")
    assert tags[0] == "manylinux_2_41_x86_64"
    assert tags[-2:] == ("manylinux_2_17_x86_64", "manylinux2014_x86_64")
    assert len(tags) == 41 - 17 + 2
    assert "manylinux_2_42_x86_64" not in tags and "manylinux2010_x86_64" not in tags
    assert reqs.target_platforms("manylinux_2_28_x86_64")[0] == "manylinux_2_28_x86_64"
    assert reqs.target_platforms("manylinux2014_x86_64") == ("manylinux_2_17_x86_64", "manylinux2014_x86_64")
    old = reqs.target_platforms("manylinux_2_12_x86_64")
    assert old[-3:] == ("manylinux_2_5_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64")
    with pytest.raises(BuildFailed, match="musllinux_1_2_x86_64"):
        reqs.target_platforms("musllinux_1_2_x86_64")


def test_resolve_command_targets_the_job_and_uses_the_hosts_pip(tmp_path: Path) -> None:
    _, job = _recipe(tmp_path, ROOT / "csrc")
    cmd = reqs.resolve_command(job, ["setuptools>=77", "wheel"], tmp_path / "wh")
    assert cmd[:4] == [sys.executable, "-m", "pip", "download"]
    line = shlex.join(cmd)
    assert "--only-binary=:all: --python-version 3.13 --implementation cp --abi cp313" in line
    assert "--platform manylinux_2_41_x86_64 --platform manylinux_2_40_x86_64" in line
    assert line.endswith(f"--dest {tmp_path / 'wh'} 'setuptools>=77' wheel")
    # the user's pip configuration decides the index: none is named, no --no-deps (dependencies resolved)
    for absent in ("--index-url", "--extra-index-url", "--no-index", "--no-deps", "--isolated"):
        assert absent not in cmd


def test_torch_index_and_an_air_gapped_wheelhouse(tmp_path: Path) -> None:
    _, job = _aiter()
    cmd = reqs.resolve_command(job, ["torch==2.10.*"], tmp_path, extra_index=job.torch_index_url)
    assert cmd[cmd.index("--extra-index-url") + 1] == "https://download.pytorch.org/whl/rocm7.2"
    assert (
        cmd[cmd.index("--abi") + 1] == "cp312" and cmd[cmd.index("--platform") + 1] == "manylinux_2_28_x86_64"
    )
    offline = reqs.resolve_command(job, ["x"], tmp_path, wheelhouse=Path("/wh"), extra_index="https://i")
    assert offline[offline.index("--no-index") + 1 : offline.index("--no-index") + 3] == [
        "--find-links",
        "/wh",
    ]
    assert "--extra-index-url" not in offline
    locked = reqs.locked_command(job, tmp_path / "lock", tmp_path / "d")
    assert {"--require-hashes", "--no-deps", "--only-binary=:all:"} <= set(locked)
    assert locked[-2:] == ["-r", str(tmp_path / "lock")]


# --------------------------------------------------------------------------- what is requested
def test_the_reference_project_requests_its_build_system(tmp_path: Path) -> None:
    recipe, job = _recipe(tmp_path, ROOT / "csrc")
    wanted = reqs.requested(recipe, job, ROOT / "csrc")
    # setuptools>=77 never asks for wheel (get_requires_for_build_wheel is empty since 70.1)
    assert [(r.requirement, r.origin) for r in wanted] == [
        ("setuptools>=77", "pyproject.toml [build-system] requires")
    ]


def test_pep518_defaults_and_the_setuptools_wheel(tmp_path: Path) -> None:
    recipe, job = _recipe(tmp_path, _source(tmp_path, None))
    assert [r.requirement for r in reqs.requested(recipe, job, tmp_path / "src")] == [
        "setuptools>=40.8.0",
        "wheel",
    ]
    _source(tmp_path, '[project]\nname = "x"\n')  # no [build-system] table: the defaults too
    assert [r.requirement for r in reqs.requested(recipe, job, tmp_path / "src")] == [
        "setuptools>=40.8.0",
        "wheel",
    ]
    _source(
        tmp_path, '[build-system]\nrequires = ["setuptools==65.5"]\nbuild-backend = "setuptools.build_meta"\n'
    )
    wanted = reqs.requested(recipe, job, tmp_path / "src")
    assert [r.requirement for r in wanted] == ["setuptools==65.5", "wheel"]
    assert "before 70.1" in wanted[1].origin
    _source(
        tmp_path,
        '[build-system]\nrequires = ["scikit-build-core>=0.10"]\nbuild-backend = "scikit_build_core.build"\n',
    )
    assert [r.requirement for r in reqs.requested(recipe, job, tmp_path / "src")] == [
        "scikit-build-core>=0.10"
    ]


def test_markers_are_the_jobs_not_the_hosts(tmp_path: Path) -> None:
    src = _source(
        tmp_path,
        '[build-system]\nrequires = ["setuptools>=77", "new-only; python_version >= \\"3.13\\"",'
        ' "old-only; python_version < \\"3.12\\"", "win-only; sys_platform == \\"win32\\""]\n',
    )
    recipe, job = _recipe(tmp_path, src)
    assert job.python == "3.13" and sys.version_info[:2] != (3, 13)  # the host's Python is another one
    assert [r.requirement for r in reqs.requested(recipe, job, src)] == ["setuptools>=77", "new-only"]


def test_test_requires_and_static_dependencies_only_with_a_test_command(tmp_path: Path) -> None:
    src = _source(
        tmp_path,
        '[build-system]\nrequires = ["setuptools>=77"]\n[project]\nname = "x"\ndependencies = ["numpy>=2"]\n',
    )
    recipe, job = _recipe(tmp_path, src, test_requires=["six==1.17.0"])
    assert [r.requirement for r in reqs.requested(recipe, job, src)] == ["setuptools>=77"]
    recipe, job = _recipe(tmp_path, src, test_requires=["six==1.17.0"], test_command="python -c 1")
    wanted = reqs.requested(recipe, job, src)
    assert [r.requirement for r in wanted] == ["setuptools>=77", "six==1.17.0", "numpy>=2"]
    assert wanted[1].at == ("test_requires", 0) and wanted[2].at is None


def test_a_malformed_test_requirement_is_a_recipe_error_at_its_entry(tmp_path: Path) -> None:
    recipe, job = _recipe(
        tmp_path, ROOT / "csrc", test_requires=["six", "not a requirement!"], test_command="true"
    )
    with pytest.raises(RecipeError) as info:
        reqs.requested(recipe, job, ROOT / "csrc")
    assert info.value.exit_code == 3
    assert "'not a requirement!' (the recipe's test_requires) is not a PEP 508 requirement" in str(info.value)
    assert info.value.line is not None


def test_a_torch_job_always_builds_against_its_torch_pin(tmp_path: Path) -> None:
    """aiter's pyproject does not list torch: a torch job's build environment gets the pin anyway
    (else the project builds without its kernels); a project listing torch has the pin resolved
    beside its own requirement (the pin narrows it through PIP_CONSTRAINT)."""
    recipe, job = _aiter()
    plain = _source(tmp_path, '[build-system]\nrequires = ["setuptools>=77"]\n')
    wanted = reqs.requested(recipe, job, plain)
    assert [r.requirement for r in wanted] == ["setuptools>=77", "torch==2.10.*"]
    assert wanted[-1].origin == "the recipe's torch pin (a torch job builds against its torch)"
    assert wanted[-1].at == ("torch", 1, "version")
    assert [r.requirement for r in reqs.requested(recipe, job, plain, isolation=False)][-1] == "torch==2.10.*"
    _source(tmp_path, '[build-system]\nrequires = ["setuptools>=77", "torch>=2"]\n')
    wanted = reqs.requested(recipe, job, plain)
    assert [r.requirement for r in wanted] == ["setuptools>=77", "torch>=2", "torch==2.10.*"]
    assert wanted[-1].origin == "the recipe's torch pin"
    assert wanted[-1].at == ("torch", 1, "version")


def test_build_requires_are_resolved_with_their_recipe_position(tmp_path: Path) -> None:
    src = _source(tmp_path, '[build-system]\nrequires = ["setuptools>=77"]\n')
    recipe, job = _recipe(tmp_path, src, build_requires=["tomli-w==1.2.0", "six; python_version < '3'"])
    wanted = reqs.requested(recipe, job, src)
    # the marker excludes six for the job's Python 3.13
    assert [(r.requirement, r.origin, r.at) for r in wanted] == [
        ("setuptools>=77", "pyproject.toml [build-system] requires", None),
        ("tomli-w==1.2.0", "the recipe's build_requires", ("build_requires", 0)),
    ]


# --------------------------------------------------------------------------- the lock
def _lock() -> reqs.Lock:
    return reqs.Lock(
        job="cp313-rocm5.7",
        python="3.13",
        platforms=("manylinux_2_41_x86_64", "manylinux2014_x86_64"),
        requested=("setuptools>=77",),
        files=(
            reqs.Locked("packaging", "26.4", "packaging-26.4-py3-none-any.whl", "a" * 64),
            reqs.Locked("setuptools", "84.2.1", "setuptools-84.2.1-py3-none-any.whl", "b" * 64),
        ),
    )


def test_lock_format_is_a_pip_requirements_file_with_hashes() -> None:
    text = _lock().render()
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines == [
        f"packaging==26.4 --hash=sha256:{'a' * 64}",
        f"setuptools==84.2.1 --hash=sha256:{'b' * 64}",
    ]
    assert "# requested: setuptools>=77" in text and "CPython 3.13, manylinux_2_41_x86_64 and older" in text
    assert text.endswith("\n")


def test_lock_sha256_sees_the_files_only_and_survives_the_manifest() -> None:
    lock = _lock()
    other_request = reqs.Lock(lock.job, lock.python, lock.platforms, ("setuptools",), lock.files)
    assert other_request.sha256 == lock.sha256
    newer = reqs.Lock(lock.job, lock.python, lock.platforms, lock.requested, lock.files[:1])
    assert newer.sha256 != lock.sha256
    data = to_data(lock)
    assert data["sha256"] == lock.sha256
    assert reqs.Lock.from_json(lock.job, data) == lock
    with pytest.raises(BuildFailed, match="malformed"):
        reqs.Lock.from_json(lock.job, {"files": [{"name": "x"}]})
    for field, value in (
        ("name", "x\n--index-url http://evil/simple"),
        ("version", "1 --pre"),
        ("file", "../x.whl"),
    ):
        bad = to_data(lock)
        bad["files"][0][field] = value
        with pytest.raises(BuildFailed, match="malformed entry"):
            reqs.Lock.from_json(lock.job, bad)
    data["files"][0]["sha256"] = "md5:nope"
    with pytest.raises(BuildFailed, match=r"no sha256 for packaging-26\.4-py3-none-any\.whl"):
        reqs.Lock.from_json(lock.job, data)


# --------------------------------------------------------------------------- real pip, local folder
@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No pip configuration and PIP_NO_INDEX=1: pip sees the folders a test names, nothing else."""
    for name in list(os.environ):
        if name.startswith("PIP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")


def _house(folder: Path) -> Path:
    folder.mkdir(parents=True)
    write_wheel(
        folder / "demo_build-1.0-py3-none-any.whl", {"demo_build/__init__.py": b""}, requires=["demo-leaf>=1"]
    )
    write_wheel(folder / "demo_leaf-1.0-py3-none-any.whl", {"demo_leaf/__init__.py": b""})
    write_wheel(
        folder / "demo_native-2.0-cp313-cp313-manylinux_2_28_x86_64.whl", {"demo_native.so": b"\x7fELF"}
    )
    write_wheel(
        folder / "demo_native-2.1-cp313-cp313-manylinux_2_42_x86_64.whl", {"demo_native.so": b"\x7fELF"}
    )
    write_wheel(
        folder / "demo_other-1.0-cp312-cp312-manylinux_2_28_x86_64.whl", {"demo_other.so": b"\x7fELF"}
    )
    (folder / "demo_other-1.0.tar.gz").write_bytes(b"an sdist")
    return folder


def test_resolve_from_a_wheelhouse_then_fetch_exactly_the_lock(tmp_path: Path, offline: None) -> None:
    house = _house(tmp_path / "house")
    src = _source(tmp_path, '[build-system]\nrequires = ["demo-build", "demo-native"]\nbuild-backend = "x"\n')
    recipe, job = _recipe(tmp_path, src)
    log = io.StringIO()
    lock = reqs.resolve(recipe, job, src, tmp_path / "wh", log, wheelhouse=house)
    # dependencies resolved; the manylinux_2_42 wheel is above the job's glibc 2.41
    assert [(f.name, f.version) for f in lock.files] == [
        ("demo-build", "1.0"),
        ("demo-leaf", "1.0"),
        ("demo-native", "2.0"),
    ]
    assert sorted(p.name for p in (tmp_path / "wh").iterdir()) == [f.file for f in lock.files]
    assert "pip download" in log.getvalue()
    # pip itself accepts the rendered lock: the same files, by hash, no resolution
    again = reqs.fetch_locked(lock, job, tmp_path / "again" / "wh", io.StringIO(), wheelhouse=house)
    assert again == lock
    assert sorted(p.name for p in (tmp_path / "again" / "wh").iterdir()) == [f.file for f in lock.files]
    # another file under a locked name and version: pip refuses it by hash
    tampered = tmp_path / "tampered"
    tampered.mkdir()
    for path in house.glob("*.whl"):
        (tampered / path.name).write_bytes(path.read_bytes())
    write_wheel(tampered / "demo_leaf-1.0-py3-none-any.whl", {"demo_leaf/__init__.py": b"other"})
    with pytest.raises(
        BuildFailed, match=r"could not download the build requirements the manifest locks"
    ) as info:
        reqs.fetch_locked(lock, job, tmp_path / "t" / "wh", io.StringIO(), wheelhouse=tampered)
    assert "HASHES" in str(info.value)


def test_a_requirement_without_a_wheel_is_refused_naming_it_and_the_fix(
    tmp_path: Path, offline: None
) -> None:
    house = _house(tmp_path / "house")
    src = _source(
        tmp_path, '[build-system]\nrequires = ["demo-build", "rocm-buildkit-nonexistent-pkg==1.0"]\n'
    )
    recipe, job = _recipe(tmp_path, src)
    with pytest.raises(BuildFailed) as info:
        reqs.resolve(recipe, job, src, tmp_path / "wh", io.StringIO(), wheelhouse=house)
    text = str(info.value)
    assert info.value.exit_code == 9
    assert "no wheel of rocm-buildkit-nonexistent-pkg==1.0 for CPython 3.13 on manylinux_2_41_x86_64" in text
    assert f"in --wheelhouse {house}" in text and "it is in pyproject.toml [build-system] requires" in text
    assert "network: true" in text and "pip wheel --no-deps 'rocm-buildkit-nonexistent-pkg==1.0'" in text


def test_an_sdist_only_test_requirement_is_a_recipe_error(
    tmp_path: Path, offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The air-gapped pip configuration (PIP_NO_INDEX=1 and PIP_FIND_LINKS on the host): demo-other 1.0
    exists there as an sdist and as a cp312 wheel only, so the cp313 job has none; the recipe names it."""
    house = _house(tmp_path / "house")
    monkeypatch.setenv("PIP_FIND_LINKS", str(house))
    src = _source(tmp_path, '[build-system]\nrequires = ["demo-build"]\n')
    recipe, job = _recipe(tmp_path, src, test_command="true", test_requires=["demo-other==1.0"])
    with pytest.raises(RecipeError) as info:
        reqs.resolve(recipe, job, src, tmp_path / "wh", io.StringIO())
    err = info.value
    assert err.exit_code == 3 and (err.line, err.file) == (
        load_recipe(recipe.path).spans.value(("test_requires", 0))[0],  # type: ignore[index]
        str(recipe.path),
    )
    assert "no wheel of demo-other==1.0" in err.detail and "on the index pip is configured with" in err.detail
    assert (
        "demo-other 1.0 is there only as an sdist, or as wheels for other Pythons or platforms" in err.detail
    )
    assert err.hint is not None and "network: true" in err.hint


def test_the_air_gapped_pip_configuration_resolves_without_an_index(
    tmp_path: Path, offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    house = _house(tmp_path / "house")
    monkeypatch.setenv("PIP_FIND_LINKS", str(house))
    src = _source(tmp_path, '[build-system]\nrequires = ["demo-native"]\nbuild-backend = "x"\n')
    recipe, job = _recipe(tmp_path, src)
    lock = reqs.resolve(recipe, job, src, tmp_path / "wh", io.StringIO())
    assert [f.file for f in lock.files] == ["demo_native-2.0-cp313-cp313-manylinux_2_28_x86_64.whl"]


def test_pip_on_the_host_must_run(tmp_path: Path) -> None:
    with pytest.raises(BuildFailed, match="cannot run pip on the host"):
        reqs._run_pip([str(tmp_path / "no-python"), "-m", "pip"], io.StringIO())


# --------------------------------------------------------------------------- the container's failures
def test_a_requirement_only_the_build_asks_for_is_explained() -> None:
    log = (
        "+ sh -c 'pip install six'\nLooking in links: /project/.buildkit/wheelhouse\n"
        "ERROR: Could not find a version that satisfies the requirement six (from versions: none)\n"
        "ERROR: No matching distribution found for six\n"
    )
    hint = reqs.explain_offline_failure(log)
    assert hint is not None and "found no six in the wheelhouse" in hint and "network: true" in hint


def test_a_hook_reaching_for_the_network_is_explained() -> None:
    for line in (
        "W: Failed to fetch http://deb.debian.org/debian/dists/trixie/InRelease  "
        "Temporary failure resolving 'deb.debian.org'",
        "curl: (6) Could not resolve host: example.com",
        "OSError: [Errno 101] Network is unreachable",
    ):
        hint = reqs.explain_offline_failure(f"building\n{line}\nerror\n")
        assert hint is not None and "image.packages" in hint and "network: true" in hint, line
    assert reqs.explain_offline_failure("kernel.hip:1:1: error: unknown type name 'foo'\n") is None


def test_the_test_step_gets_virtualenv_at_cibuildwheels_pin(tmp_path: Path, offline: None) -> None:
    """cibuildwheel's test step runs ``pip install virtualenv -c /constraints.txt``: the wheelhouse
    holds the version its constraints pin, not the newest one the index has."""
    pins = reqs.cibuildwheel_constraints("3.13").read_text()
    pinned = next(
        line.split("==")[1].strip() for line in pins.splitlines() if line.startswith("virtualenv==")
    )
    house = _house(tmp_path / "house")
    write_wheel(house / f"virtualenv-{pinned}-py3-none-any.whl", {"virtualenv/__init__.py": b""})
    write_wheel(house / "virtualenv-99.0-py3-none-any.whl", {"virtualenv/__init__.py": b""})
    src = _source(tmp_path, '[build-system]\nrequires = ["demo-leaf"]\nbuild-backend = "x"\n')
    recipe, job = _recipe(tmp_path, src, test_command="true")
    lock = reqs.resolve(recipe, job, src, tmp_path / "wh", io.StringIO(), wheelhouse=house)
    assert [(f.name, f.version) for f in lock.files] == [("demo-leaf", "1.0"), ("virtualenv", pinned)]
    assert "virtualenv" in lock.requested
    recipe, job = _recipe(tmp_path, src, test_command="true", build_frontend="uv")  # uv venv: none
    assert reqs.needs_virtualenv(job) is False


def test_the_request_key_sees_what_is_requested_and_for_which_target(tmp_path: Path) -> None:
    recipe, job = _recipe(tmp_path, ROOT / "csrc")
    key = reqs.request_key(recipe, job, ROOT / "csrc")
    assert key == reqs.request_key(recipe, job, ROOT / "csrc")
    other = _source(tmp_path, '[build-system]\nrequires = ["setuptools>=78"]\n')
    assert reqs.request_key(recipe, job, other) != key
    tested, tested_job = _recipe(tmp_path, ROOT / "csrc", test_command="true")
    assert reqs.request_key(tested, tested_job, ROOT / "csrc") != key  # + virtualenv
    older = dataclasses.replace(job, platform_tag="manylinux_2_28_x86_64")
    assert reqs.request_key(recipe, older, ROOT / "csrc") != key


def test_virtualenv_is_best_effort(tmp_path: Path, offline: None) -> None:
    """An index without cibuildwheel's virtualenv is noted, not an error: the builder image may have it."""
    house = _house(tmp_path / "house")
    src = _source(tmp_path, '[build-system]\nrequires = ["demo-leaf"]\nbuild-backend = "x"\n')
    recipe, job = _recipe(tmp_path, src, test_command="true")
    log = io.StringIO()
    lock = reqs.resolve(recipe, job, src, tmp_path / "wh", log, wheelhouse=house)
    assert [f.name for f in lock.files] == ["demo-leaf"] and "virtualenv" not in lock.requested
    assert "note: virtualenv for cibuildwheel's test step is not in the wheelhouse" in log.getvalue()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["house", "recipe.yaml", "src", "wh"]
