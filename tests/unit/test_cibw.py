"""cibuildwheel options rendered from plan jobs (pure rendering, no Docker)."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path

import pytest

from buildkit import cibw
from buildkit.errors import UsageError
from buildkit.plan import Job, expand
from buildkit.recipe import load_recipe

ROOT = Path(__file__).resolve().parents[2]


def _job(recipe: str, job_id: str | None = None) -> Job:
    plan = expand(load_recipe(ROOT / "recipes" / recipe), env={})
    return plan.job(job_id) if job_id else plan.jobs[0]


def _settings(**kw: object) -> cibw.CibwSettings:
    base: dict[str, object] = {
        "image": "rocm-buildkit/debian-rocm:0123456789ab",
        "source_date_epoch": 1700000000,
        "ccache_volume": "rocm-buildkit-ccache-abc",
        "with_ca_bundle": True,
    }
    base.update(kw)
    return cibw.CibwSettings(**base)  # type: ignore[arg-type]


def _parse_environment(text: str) -> dict[str, str]:
    """Parsed by cibuildwheel's own parser: what the container really gets."""
    from cibuildwheel.environment import parse_environment

    result: dict[str, str] = parse_environment(text).as_dictionary(prev_environment={"HOME": "/root"})
    return result


def test_reference_job_options() -> None:
    job = _job("reference.yaml")
    opts = cibw.cibuildwheel_options(job, _settings())
    assert opts["CIBW_BUILD"] == "cp313-manylinux_x86_64"
    assert opts["CIBW_MANYLINUX_X86_64_IMAGE"] == "rocm-buildkit/debian-rocm:0123456789ab"
    engine = opts["CIBW_CONTAINER_ENGINE"]
    assert "disable_host_mount: true" in engine
    assert "--volume=rocm-buildkit-ccache-abc:/ccache" in engine
    assert "/var/run/docker.sock" not in engine
    env = _parse_environment(opts["CIBW_ENVIRONMENT_LINUX"])
    assert env["HIP_PLATFORM"] == "amd"
    assert env["PYTORCH_ROCM_ARCH"] == "gfx908;gfx90a;gfx942"
    assert env["GPU_ARCHS"] == "gfx908;gfx90a;gfx942"
    assert env["SOURCE_DATE_EPOCH"] == "1700000000"
    assert env["BUILDKIT_VERSION"] == job.version
    assert env["CCACHE_DIR"] == "/ccache"
    assert env["PIP_CERT"] == cibw.CONTAINER_CA_PATH
    assert "CIBW_BEFORE_BUILD_LINUX" not in opts  # no torch pin in the reference recipe


def test_repair_excludes_versioned_sonames() -> None:
    job = _job("aiter.yaml", "cp312-rocm7.2-torch2.10")
    first, _, fallback = cibw.repair_command(job).partition(" || ")
    cmd = shlex.split(first)
    assert cmd[:4] == ["auditwheel", "repair", "--plat", "manylinux_2_28_x86_64"]
    assert "--plat auto" in fallback  # the gate, not auditwheel, names offending symbols
    globs = [cmd[i + 1] for i, tok in enumerate(cmd) if tok == "--exclude"]
    import fnmatch

    for soname in (
        "librocblas.so.5",
        "libamdhip64.so.7",
        "libhsa-runtime64.so.1",
        "libtorch_cpu.so",
        "libc10.so",
    ):
        assert any(fnmatch.fnmatch(soname, g) for g in globs), soname
    assert cmd[-3:] == ["-w", "{dest_dir}", "{wheel}"]


def test_torch_pin_installed_before_build() -> None:
    job = _job("aiter.yaml", "cp312-rocm7.2-torch2.10")
    opts = cibw.cibuildwheel_options(job, _settings())
    hook = shlex.split(opts["CIBW_BEFORE_BUILD_LINUX"])
    assert hook[:4] == ["python", "-m", "pip", "install"]
    assert hook[4].startswith("torch") and "2.10" in hook[4]
    assert "--index-url" in hook
    assert hook[hook.index("--index-url") + 1].endswith("rocm7.2")


def test_no_cache_means_no_volume() -> None:
    job = _job("reference.yaml")
    opts = cibw.cibuildwheel_options(job, _settings(ccache_volume=None))
    assert "volume" not in opts["CIBW_CONTAINER_ENGINE"]
    assert "CCACHE_DIR" not in _parse_environment(opts["CIBW_ENVIRONMENT_LINUX"])


@pytest.mark.parametrize(
    "secret", ["TWINE_PASSWORD", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "PYPI_API_TOKEN"]
)
def test_credentials_never_reach_cibuildwheel(secret: str) -> None:
    job = _job("reference.yaml")
    opts = cibw.cibuildwheel_options(job, _settings())
    env = cibw.subprocess_environment(
        {"PATH": "/usr/bin", secret: "s3cr3t", "DOCKER_HOST": "unix:///x"}, opts
    )
    assert secret not in env
    assert "s3cr3t" not in "".join(env.values())
    assert env["DOCKER_HOST"] == "unix:///x"


@pytest.mark.parametrize(
    "value", ["it's", 'say "hi"', "a$(id)b", "`uname`", "back\\slash", "two words", "line1\nline2", "$HOME"]
)
def test_recipe_env_values_reach_the_container_literally(value: str) -> None:
    job = _job("reference.yaml")
    job = dataclasses.replace(job, env={**job.env, "PRETUNE_MODULES": value})
    env = _parse_environment(cibw.cibuildwheel_options(job, _settings())["CIBW_ENVIRONMENT_LINUX"])
    assert env["PRETUNE_MODULES"] == value


def test_recipe_env_cannot_override_what_buildkit_sets() -> None:
    job = _job("reference.yaml")
    job = dataclasses.replace(job, env={**job.env, "SOURCE_DATE_EPOCH": "0"})
    with pytest.raises(UsageError, match="SOURCE_DATE_EPOCH"):
        cibw.cibuildwheel_options(job, _settings())


def test_torch_pin_constrains_the_isolated_build_environment() -> None:
    job = _job("aiter.yaml", "cp312-rocm7.2-torch2.10")
    env = _parse_environment(cibw.cibuildwheel_options(job, _settings())["CIBW_ENVIRONMENT_LINUX"])
    assert env["PIP_CONSTRAINT"] == cibw.CONTAINER_CONSTRAINTS_PATH
    text = cibw.constraints(job)
    assert text is not None and text.strip() == job.torch_requirement
    assert cibw.constraints(_job("reference.yaml")) is None


def test_build_containers_are_labelled_for_cleanup() -> None:
    opts = cibw.cibuildwheel_options(
        _job("reference.yaml"), _settings(labels={"io.rocm-buildkit.build": "b1"})
    )
    assert "--label=io.rocm-buildkit.build=b1" in opts["CIBW_CONTAINER_ENGINE"]
