"""cibuildwheel options rendered from plan jobs (pure rendering, no Docker)."""

from __future__ import annotations

import dataclasses
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit import docker_engine
from buildkit.building import ccache, cibw
from buildkit.errors import UsageError
from buildkit.plan.expansion import expand
from buildkit.plan.models import Job
from buildkit.recipe import load_recipe
from buildkit.records import to_data
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheels_for_publish import write_wheel

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
    job = _job("reference-trixie.yaml")
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
    # no torch pin, no before_build in the reference recipe: only the compiler cache's zeroed statistics
    # and the host compilers' wrappers (the launcher's host ISA)
    assert opts["CIBW_BEFORE_BUILD_LINUX"] == f"{ccache.ZERO_STATS} && {ccache.HOST_CC_SETUP}"


def test_repair_excludes_versioned_sonames() -> None:
    job = _job("aiter.yaml", "cp312-rocm7.2-torch2.10")
    first, _, fallback = cibw.repair_command(job).partition(" || ")
    cmd = shlex.split(first.removeprefix("{ ").partition(" 2>")[0])
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


def test_torch_pin_installed_before_a_no_isolation_build() -> None:
    job = _job("aiter.yaml", "cp312-rocm7.2-torch2.10")
    opts = cibw.cibuildwheel_options(job, _settings(build_isolation=False))
    assert opts["CIBW_BUILD_FRONTEND"] == "build; args: --no-isolation"
    first = f"{ccache.ZERO_STATS} && {ccache.HOST_CC_SETUP} && "
    assert opts["CIBW_BEFORE_BUILD_LINUX"].startswith(first)
    hook = shlex.split(opts["CIBW_BEFORE_BUILD_LINUX"].removeprefix(first))
    assert hook[:4] == ["python", "-m", "pip", "install"]
    assert hook[4].startswith("torch") and "2.10" in hook[4]
    assert "--index-url" in hook
    assert hook[hook.index("--index-url") + 1].endswith("rocm7.2")


def test_no_cache_means_no_volume() -> None:
    job = _job("reference-trixie.yaml")
    opts = cibw.cibuildwheel_options(job, _settings(ccache_volume=None))
    assert "volume" not in opts["CIBW_CONTAINER_ENGINE"]
    assert "CCACHE_DIR" not in _parse_environment(opts["CIBW_ENVIRONMENT_LINUX"])


@pytest.mark.parametrize(
    "secret", ["TWINE_PASSWORD", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "PYPI_API_TOKEN"]
)
def test_credentials_never_reach_cibuildwheel(secret: str) -> None:
    job = _job("reference-trixie.yaml")
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
    job = _job("reference-trixie.yaml")
    job = dataclasses.replace(job, env={**job.env, "PRETUNE_MODULES": value})
    env = _parse_environment(cibw.cibuildwheel_options(job, _settings())["CIBW_ENVIRONMENT_LINUX"])
    assert env["PRETUNE_MODULES"] == value


def test_recipe_env_cannot_override_what_buildkit_sets() -> None:
    job = _job("reference-trixie.yaml")
    job = dataclasses.replace(job, env={**job.env, "SOURCE_DATE_EPOCH": "0"})
    with pytest.raises(UsageError, match="SOURCE_DATE_EPOCH"):
        cibw.cibuildwheel_options(job, _settings())


def test_torch_pin_constrains_the_isolated_build_environment() -> None:
    job = _job("aiter.yaml", "cp312-rocm7.2-torch2.10")
    env = _parse_environment(cibw.cibuildwheel_options(job, _settings())["CIBW_ENVIRONMENT_LINUX"])
    assert env["PIP_CONSTRAINT"] == cibw.CONTAINER_CONSTRAINTS_PATH
    text = cibw.constraints(job)
    assert text is not None and text.strip() == job.torch_requirement
    assert cibw.constraints(_job("reference-trixie.yaml")) is None


def test_build_containers_are_labelled_for_cleanup() -> None:
    labels = docker_engine.container_labels("cibuildwheel", "b1")
    opts = cibw.cibuildwheel_options(_job("reference-trixie.yaml"), _settings(labels=labels))
    assert "--label=io.rocm-buildkit.run=b1" in opts["CIBW_CONTAINER_ENGINE"]
    assert "--label=io.rocm-buildkit.container=cibuildwheel" in opts["CIBW_CONTAINER_ENGINE"]


def test_isolated_build_does_not_install_torch_into_the_target_python() -> None:
    """The isolated build environment cannot see the target interpreter: PIP_CONSTRAINT pins torch
    there, and a before-build install would be a second multi-GB download for nothing."""
    job = _job("aiter.yaml", "cp312-rocm7.2-torch2.10")
    opts = cibw.cibuildwheel_options(job, _settings(build_isolation=True))
    assert opts["CIBW_BUILD_FRONTEND"] == "build"
    assert opts["CIBW_BEFORE_BUILD_LINUX"] == f"{ccache.ZERO_STATS} && {ccache.HOST_CC_SETUP}"
    assert cibw.before_build(job, isolation=True) is None
    env = _parse_environment(opts["CIBW_ENVIRONMENT_LINUX"])
    assert env["PIP_CONSTRAINT"] == cibw.CONTAINER_CONSTRAINTS_PATH
    assert cibw.before_build(_job("reference-trixie.yaml"), isolation=False) is None  # no torch pin


SECRET_URL = "https://ci-bot:s3cr3t@pypi.internal.example/simple"
HOST_WITH_SECRETS = {
    "PATH": "/usr/bin",
    "HOME": "/root",
    "DOCKER_HOST": "unix:///var/run/docker.sock",
    "PIP_INDEX_URL": SECRET_URL,
    "PIP_EXTRA_INDEX_URL": SECRET_URL,
    "TWINE_PASSWORD": "s3cr3t",
}
PYPROJECT_PASSING_SECRETS = """\
[tool.cibuildwheel]
environment-pass = ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "TWINE_PASSWORD", "HOME"]

[tool.cibuildwheel.linux]
environment-pass = ["PIP_INDEX_URL", "TWINE_PASSWORD"]
"""


def _cibuildwheel_view(project: Path, env: dict[str, str], identifier: str) -> tuple[dict[str, str], str]:
    """What cibuildwheel's own option reader makes of ``env`` and the project's pyproject.toml: the
    build environment a container would get, and the option summary cibuildwheel prints."""
    from cibuildwheel.options import CommandLineArguments, Options

    args = dataclasses.replace(CommandLineArguments.defaults(), platform="linux", package_dir=project)
    options = Options(platform="linux", command_line_arguments=args, env=env)
    container = options.build_options(identifier).environment.as_dictionary(
        prev_environment={"HOME": "/root"}
    )
    return container, options.summary([identifier])


def test_host_secret_reaches_neither_cibuildwheel_nor_the_container(tmp_path: Path) -> None:
    """A project's environment-pass cannot pull a host credential into the build (issue: a
    PIP_INDEX_URL with a password was printed by cibuildwheel and visible in the container)."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT_PASSING_SECRETS)
    job = _job("aiter.yaml", "cp312-rocm7.2-torch2.10")
    opts = cibw.cibuildwheel_options(job, _settings())
    env = cibw.subprocess_environment(HOST_WITH_SECRETS, opts)
    assert "s3cr3t" not in "".join(env.values())
    assert opts["CIBW_ENVIRONMENT_PASS_LINUX"] == ""
    container, summary = _cibuildwheel_view(tmp_path, env, "cp312-manylinux_x86_64")
    assert "s3cr3t" not in "".join(container.values())
    assert "s3cr3t" not in summary
    assert container["PYTORCH_ROCM_ARCH"] == job.archs.pytorch_rocm_arch()  # our environment applies
    # the forced empty environment-pass alone already wins over the pyproject
    leaky = {**HOST_WITH_SECRETS, **opts}
    container, summary = _cibuildwheel_view(tmp_path, leaky, "cp312-manylinux_x86_64")
    assert "s3cr3t" not in "".join(container.values()) and "s3cr3t" not in summary


def test_the_secret_check_can_fail(tmp_path: Path) -> None:
    """Control for the test above: without the forced environment-pass, the same project and host
    environment do put the credential into the container and cibuildwheel's printed options."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT_PASSING_SECRETS)
    opts = cibw.cibuildwheel_options(_job("reference-trixie.yaml"), _settings())
    del opts["CIBW_ENVIRONMENT_PASS_LINUX"]
    container, summary = _cibuildwheel_view(tmp_path, {**HOST_WITH_SECRETS, **opts}, "cp313-manylinux_x86_64")
    assert container["PIP_INDEX_URL"] == SECRET_URL
    assert "s3cr3t" in summary


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        ("https://user:pw@proxy.example:3128", True),
        ("http://u:@h/", True),
        ("unix:///var/run/docker.sock", False),
        ("tcp://10.0.0.1:2376", False),
        ("ssh://builder@host:22", False),
        ("/etc/ssl/certs/ca.pem", False),
    ],
)
def test_url_credentials_are_recognised(value: str, secret: bool) -> None:
    assert cibw.has_url_credentials(value) is secret
    env = cibw.subprocess_environment({"DOCKER_HOST": value}, {})
    assert ("DOCKER_HOST" in env) is not secret


def test_pip_index_url_is_not_passed_to_cibuildwheel() -> None:
    env = cibw.subprocess_environment({"PIP_INDEX_URL": "https://mirror.example/simple"}, {})
    assert "PIP_INDEX_URL" not in env
    assert not any(name.startswith("PIP_") and name != "PIP_CERT" for name in cibw.HOST_PASSTHROUGH)


def test_every_variable_buildkit_sets_is_reserved_or_overridable() -> None:
    """A variable buildkit sets that a recipe could also set would be silently overridden (the
    container gets buildkit's value, the manifest the recipe's): each one is either refused by the
    recipe loader or taken from the recipe."""
    from buildkit.recipe import RESERVED_ENV

    job = _job("aiter.yaml", "cp312-rocm7.2-torch2.10")
    ours = cibw.container_environment(job, _settings())
    recipe_keys = set(job.env) - {"PYTORCH_ROCM_ARCH", "GPU_ARCHS"}
    assert recipe_keys == {"PREBUILD_KERNELS", "PRETUNE_MODULES", "MAX_JOBS"}
    assert set(ours) - recipe_keys <= set(RESERVED_ENV) | cibw.RECIPE_OVERRIDABLE
    assert not cibw.RECIPE_OVERRIDABLE & set(RESERVED_ENV)


@pytest.mark.parametrize(
    ("recipe", "job_id", "key", "value"),
    [
        ("reference-trixie.yaml", None, "PYTHONHASHSEED", "1"),
        ("reference-trixie.yaml", None, "CCACHE_BASEDIR", "/"),
        ("aiter.yaml", "cp312-rocm7.2-torch2.10", "PIP_EXTRA_INDEX_URL", "https://example/simple"),
        ("reference-trixie.yaml", None, "PIP_CONSTRAINT", "/tmp/c.txt"),  # no torch pin: still buildkit's
        ("reference-trixie.yaml", None, "PATH", "/usr/lib/ccache:/usr/bin"),
    ],
)
def test_job_env_cannot_set_what_buildkit_sets(recipe: str, job_id: str | None, key: str, value: str) -> None:
    job = _job(recipe, job_id)
    job = dataclasses.replace(job, env={**job.env, key: value})
    with pytest.raises(UsageError, match=key):
        cibw.cibuildwheel_options(job, _settings())


@pytest.mark.parametrize("jobs", ["1", "24"])
def test_recipe_max_jobs_is_what_the_container_gets(jobs: str) -> None:
    job = _job("reference-trixie.yaml")
    job = dataclasses.replace(job, env={**job.env, "MAX_JOBS": jobs})
    env = _parse_environment(
        cibw.cibuildwheel_options(job, _settings(parallel_jobs=2))["CIBW_ENVIRONMENT_LINUX"]
    )
    assert env["MAX_JOBS"] == jobs == to_data(job)["env"]["MAX_JOBS"]
    default = _parse_environment(
        cibw.cibuildwheel_options(_job("reference-trixie.yaml"), _settings(parallel_jobs=3))[
            "CIBW_ENVIRONMENT_LINUX"
        ]
    )
    assert default["MAX_JOBS"] == "3"


# --------------------------------------------------------------------------- hermetic builds
def test_a_hermetic_container_has_no_network_and_only_the_wheelhouse() -> None:
    from buildkit.recipe import RESERVED_ENV

    job = _job("reference-trixie.yaml")
    opts = cibw.cibuildwheel_options(job, _settings(network=False, with_ca_bundle=False))
    engine = opts["CIBW_CONTAINER_ENGINE"]
    assert "--network=none" in shlex.split(engine.split("create_args: ", 1)[1])
    assert "disable_host_mount: true" in engine
    env = _parse_environment(opts["CIBW_ENVIRONMENT_LINUX"])
    assert env["PIP_NO_INDEX"] == "1"
    assert env["PIP_FIND_LINKS"] == cibw.CONTAINER_WHEELHOUSE == "/project/.buildkit/wheelhouse"
    assert not {"PIP_CERT", "PIP_EXTRA_INDEX_URL", "UV_NO_INDEX"} & set(env)
    assert {"PIP_NO_INDEX", "PIP_FIND_LINKS", "UV_NO_INDEX", "UV_FIND_LINKS"} <= set(RESERVED_ENV)
    networked = cibw.cibuildwheel_options(job, _settings(network=True))
    assert "--network" not in networked["CIBW_CONTAINER_ENGINE"]
    assert "PIP_NO_INDEX" not in _parse_environment(networked["CIBW_ENVIRONMENT_LINUX"])


def test_a_hermetic_torch_job_pins_torch_from_the_wheelhouse() -> None:
    job = _job("aiter.yaml", "cp312-rocm7.2-torch2.10")
    env = _parse_environment(
        cibw.cibuildwheel_options(job, _settings(network=False))["CIBW_ENVIRONMENT_LINUX"]
    )
    assert env["PIP_CONSTRAINT"] == cibw.CONTAINER_CONSTRAINTS_PATH and "PIP_EXTRA_INDEX_URL" not in env
    hook = cibw.before_build(job, isolation=False, network=False)
    assert hook is not None and shlex.split(hook) == ["python", "-m", "pip", "install", "torch==2.10.*"]
    networked = cibw.before_build(job, isolation=False, network=True)
    assert networked is not None and "--index-url" in networked


@pytest.mark.parametrize(
    ("frontend", "uv"), [("build", False), ("pip", False), ("build[uv]", True), ("uv", True)]
)
def test_uv_frontends_get_the_wheelhouse_too(frontend: str, uv: bool) -> None:
    job = _job("reference-trixie.yaml")
    job = dataclasses.replace(job, hooks=dataclasses.replace(job.hooks, build_frontend=frontend))
    env = cibw.container_environment(job, _settings(network=False))
    assert ("UV_NO_INDEX" in env) is uv
    assert env.get("UV_FIND_LINKS", cibw.CONTAINER_WHEELHOUSE) == cibw.CONTAINER_WHEELHOUSE


def test_every_variable_a_hermetic_build_sets_is_reserved() -> None:
    from buildkit.recipe import RESERVED_ENV

    job = _job("aiter.yaml", "cp312-rocm7.2-torch2.10")
    job = dataclasses.replace(job, hooks=dataclasses.replace(job.hooks, build_frontend="uv"))
    ours = cibw.container_environment(job, _settings(network=False))
    recipe_keys = set(job.env) - {"PYTORCH_ROCM_ARCH", "GPU_ARCHS"}
    assert set(ours) - recipe_keys <= set(RESERVED_ENV) | cibw.RECIPE_OVERRIDABLE


@pytest.mark.parametrize(
    ("recipe", "frontend", "fixed"),
    [
        ("reference-trixie.yaml", "build", True),  # debian-rocm: pypa/build 1.6.1 (--env-dir)
        ("reference-trixie.yaml", "build[uv]", True),
        ("reference-torch.yaml", "build", True),  # debian-sid-rocm: the same pins
        ("reference-trixie.yaml", "pip", False),  # pip and uv have no such option
        ("reference-trixie.yaml", "uv", False),
        ("aiter.yaml", "build", False),  # manylinux_2_28-rocm: the base image's build, version unknown
    ],
)
def test_the_isolated_build_environment_is_at_a_fixed_path_where_the_frontend_can(
    recipe: str, frontend: str, fixed: bool
) -> None:
    """pypa/build's ``--env-dir``: the isolated environment at ccache.BUILD_ENV_DIR in every build,
    so compiles including its headers (torch's) hit the cache and the objects never name a random
    path; the same with and without the cache (the uncached build is the reference bytes)."""
    from cibuildwheel.frontend import BuildFrontendConfig

    job = _job(recipe)
    job = dataclasses.replace(job, hooks=dataclasses.replace(job.hooks, build_frontend=frontend))
    for volume in ("rocm-buildkit-ccache-0123", None):
        value = cibw.cibuildwheel_options(job, _settings(ccache_volume=volume))["CIBW_BUILD_FRONTEND"]
        parsed = BuildFrontendConfig.from_config_string(value)
        assert parsed.name == frontend
        assert list(parsed.args) == (["--env-dir", ccache.BUILD_ENV_DIR] if fixed else []), value
    # --no-isolation builds in the job's Python (pypa/build refuses --env-dir with it)
    value = cibw.cibuildwheel_options(job, _settings(build_isolation=False))["CIBW_BUILD_FRONTEND"]
    assert "--env-dir" not in value


def _run_repair(
    tmp_path: Path, wheel: Path, plat: str = "manylinux_2_28_x86_64"
) -> subprocess.CompletedProcess[str]:
    """The repair command as cibuildwheel runs it (``sh -c``, {wheel} and {dest_dir} filled) with the real
    auditwheel of this environment (the builder's is the same program), its log in ``tmp_path``."""
    job = dataclasses.replace(_job("reference-trixie.yaml"), platform_tag=plat)
    command = cibw.repair_command(job).replace(cibw.REPAIR_LOG, str(tmp_path / "repair.err"))
    command = command.replace("{wheel}", shlex.quote(str(wheel))).replace("{dest_dir}", str(tmp_path / "out"))
    (tmp_path / "out").mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=env, timeout=300)


def test_repair_refused_for_a_missing_library_says_so(tmp_path: Path) -> None:
    """Issue 36: when auditwheel refused a wheel for a library the image does not have, the fallback blamed
    symbol versions ('symbols newer than any it knows')."""
    if not have_gcc():
        pytest.skip("gcc builds the wheel's library")
    gone = tmp_path / "gone"
    gone.mkdir()
    build_shared_library(gone / "libgone.so", "int gone(void) { return 1; }\n", soname="libgone.so.3")
    ext = tmp_path / "ext.so"
    source = tmp_path / "ext.c"
    source.write_text("int gone(void);\nint f(void) { return gone(); }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(ext), str(source), f"-L{gone}", "-lgone"], check=True
    )
    wheel = write_wheel(
        tmp_path / "demo-1.0-cp311-cp311-linux_x86_64.whl", {"demo/_ext.so": ext.read_bytes()}
    )
    proc = _run_repair(tmp_path, wheel)
    assert proc.returncode == 0, proc.stderr  # the unrepaired wheel goes on, for the gate
    assert "libgone.so.3" in proc.stderr and "could not be located" in proc.stderr  # auditwheel's own words
    assert "a library the wheel needs is not in the builder image" in proc.stderr
    assert "symbols newer" not in proc.stderr and "repairing to the best policy" not in proc.stderr
    assert (tmp_path / "out" / wheel.name).is_file()


def test_scikit_build_core_builds_in_a_fixed_folder() -> None:
    """scikit-build-core's build folder is a new random temporary folder unless ``build-dir`` is set:
    every build sets SKBUILD_BUILD_DIR=build/{wheel_tag} (scikit-build-core expands the tag), rendered
    literally for cibuildwheel, with or without the cache; a recipe's own value wins."""
    job = _job("reference-trixie.yaml")
    for volume in ("rocm-buildkit-ccache-0123", None):
        env = cibw.container_environment(job, _settings(ccache_volume=volume))
        assert env["SKBUILD_BUILD_DIR"] == "build/{wheel_tag}"
        assert 'SKBUILD_BUILD_DIR="build/{wheel_tag}"' in cibw.render_environment(env)
    own = dataclasses.replace(job, env={**job.env, "SKBUILD_BUILD_DIR": "out/cmake"})
    assert cibw.container_environment(own, _settings())["SKBUILD_BUILD_DIR"] == "out/cmake"
