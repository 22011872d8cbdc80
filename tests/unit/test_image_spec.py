"""The recipe's ``image:`` mapping, build hooks and the builder-contract probe, without Docker:
what the recipe layer accepts, what cibuildwheel is told, what the generated package layer says,
and how probe answers become the one list of gaps. The probe itself runs in a real container in
tests/docker/test_builder_contract.py.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from buildkit.building import ccache, cibw
from buildkit.image.builder import _base_of, packages_dockerfile
from buildkit.image.probe import MIN_AUDITWHEEL, Contract, parse_probe, problems
from buildkit.plan.expansion import expand
from buildkit.plan.render import render_json, render_table
from buildkit.profiles import declared_build_args
from buildkit.recipe import load_recipe
from buildkit.recipe.sections.hooks import Hooks
from buildkit.records import to_data

ROOT = Path(__file__).resolve().parents[2]


def _recipe(tmp_path: Path, **changes: object) -> Path:
    data = yaml.safe_load((ROOT / "recipes" / "reference-trixie.yaml").read_text())
    data["source"] = {"path": str(ROOT / "csrc")}
    data.update(changes)
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _settings(isolation: bool = True) -> cibw.CibwSettings:
    return cibw.CibwSettings(
        image="rocm-buildkit/debian-rocm:0123456789ab",
        source_date_epoch=1,
        ccache_volume=None,
        with_ca_bundle=False,
        build_isolation=isolation,
    )


def test_hooks_reach_cibuildwheel_with_its_meaning(tmp_path: Path) -> None:
    path = _recipe(
        tmp_path,
        before_all=["dnf install -y foo", "echo done"],
        before_build="pip install -r requirements-build.txt",
        config_settings={"setup-args": ["-Dhip=true", "-Dopt=a b"], "builddir": "build"},
        build_frontend="build[uv]",
        test_command="pytest {project}/tests",
        test_requires=["pytest", "numpy>=2"],
    )
    job = expand(load_recipe(path), env={}).jobs[0]
    opts = cibw.cibuildwheel_options(job, _settings())
    assert opts["CIBW_BEFORE_ALL_LINUX"] == "dnf install -y foo && echo done"
    # after the host compilers' wrappers (the launcher's host ISA, in every build)
    hook = opts["CIBW_BEFORE_BUILD_LINUX"]
    assert hook == f"{ccache.HOST_CC_SETUP} && pip install -r requirements-build.txt"
    # cibuildwheel's own parser gives the backend each value once, spaces kept
    from cibuildwheel.frontend import parse_config_settings

    parsed = parse_config_settings(opts["CIBW_CONFIG_SETTINGS_LINUX"])
    assert parsed == {"setup-args": ["-Dhip=true", "-Dopt=a b"], "builddir": "build"}
    # the image's pypa/build makes the isolated environment at a fixed path (ccache.BUILD_ENV_DIR)
    assert opts["CIBW_BUILD_FRONTEND"] == f"build[uv]; args: --env-dir {ccache.BUILD_ENV_DIR}"
    assert opts["CIBW_TEST_COMMAND_LINUX"] == "pytest {project}/tests"
    assert shlex.split(opts["CIBW_TEST_REQUIRES_LINUX"]) == ["pytest", "numpy>=2"]
    assert opts["CIBW_TEST_SKIP"] == ""
    # the plan shows them, and its JSON carries them (the manifest records the job's JSON)
    plan = expand(load_recipe(path), env={})
    table = render_table(plan)
    assert "before_all: dnf install -y foo && echo done" in table
    assert "build_frontend: build[uv]" in table
    assert "test_command: pytest {project}/tests (after installing pytest numpy>=2)" in table
    assert '"build_frontend":"build[uv]"' in render_json(plan).replace(" ", "").replace("\n", "")
    assert Hooks.from_json(to_data(job.hooks)) == job.hooks


def test_without_hooks_every_option_is_still_set_so_the_projects_table_cannot_add_any(tmp_path: Path) -> None:
    job = expand(load_recipe(_recipe(tmp_path)), env={}).jobs[0]
    opts = cibw.cibuildwheel_options(job, _settings())
    for name in (
        "CIBW_BEFORE_ALL_LINUX",
        "CIBW_CONFIG_SETTINGS_LINUX",
        "CIBW_BEFORE_TEST_LINUX",
        "CIBW_TEST_COMMAND_LINUX",
        "CIBW_TEST_REQUIRES_LINUX",
    ):
        assert opts[name] == "", name
    assert opts["CIBW_BEFORE_BUILD_LINUX"] == ccache.HOST_CC_SETUP  # only the host compilers' wrappers
    assert opts["CIBW_TEST_SKIP"] == "*"
    assert opts["CIBW_BUILD_FRONTEND"] == f"build; args: --env-dir {ccache.BUILD_ENV_DIR}"


@pytest.mark.parametrize(
    ("frontend", "expected"),
    [
        ("build", "build; args: --no-isolation"),
        ("build[uv]", "build[uv]; args: --no-isolation"),
        ("pip", "pip; args: --no-build-isolation"),
        ("uv", "uv; args: --no-build-isolation"),
    ],
)
def test_no_isolation_uses_each_frontends_own_flag(tmp_path: Path, frontend: str, expected: str) -> None:
    job = expand(load_recipe(_recipe(tmp_path, build_frontend=frontend)), env={}).jobs[0]
    value = cibw.cibuildwheel_options(job, _settings(isolation=False))["CIBW_BUILD_FRONTEND"]
    assert value == expected
    from cibuildwheel.frontend import BuildFrontendConfig

    parsed = BuildFrontendConfig.from_config_string(value)
    assert parsed.name == frontend and list(parsed.args) == [expected.split("args: ")[1]]


def test_torch_install_comes_before_the_recipes_before_build(tmp_path: Path) -> None:
    job = expand(load_recipe(ROOT / "recipes" / "aiter.yaml"), env={}).jobs[0]
    job = job.__class__(**{**job.__dict__, "hooks": Hooks(before_build=("make prep",))})
    value = cibw.cibuildwheel_options(job, _settings(isolation=False))["CIBW_BEFORE_BUILD_LINUX"]
    torch_hook, recipe_hook = value.removeprefix(f"{ccache.HOST_CC_SETUP} && ").split(" && ")
    assert shlex.split(torch_hook)[:5] == ["python", "-m", "pip", "install", "torch==2.9.*"]
    assert recipe_hook == "make prep"


def test_image_mapping_is_in_the_plan_and_its_json(tmp_path: Path) -> None:
    path = _recipe(
        tmp_path,
        image={
            "profile": "debian-rocm",
            "packages": ["libhipblas-dev", "librocrand-dev"],
            "build_args": {"HIP_DEB_VERSION": "5.7.1-6+deb13u1"},
        },
    )
    plan = expand(load_recipe(path), env={})
    job = plan.jobs[0]
    assert job.image_profile == "debian-rocm"
    assert job.image.packages == ("libhipblas-dev", "librocrand-dev")
    table = render_table(plan)
    assert "image packages (a layer over debian-rocm): libhipblas-dev librocrand-dev" in table
    assert "image build args: HIP_DEB_VERSION=5.7.1-6+deb13u1" in table
    assert to_data(job)["image"]["packages"] == ["libhipblas-dev", "librocrand-dev"]


def test_own_dockerfile_build_args_are_checked_against_its_arg_lines(tmp_path: Path) -> None:
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Builder.Dockerfile").write_text(
        'ARG BASE_IMAGE=debian:trixie-slim\nFROM ${BASE_IMAGE}\nARG EXTRA="a b" OTHER\nRUN true\n'
    )
    ok = _recipe(tmp_path, image={"dockerfile": "docker/Builder.Dockerfile", "build_args": {"OTHER": "1"}})
    spec = load_recipe(ok).image
    assert spec.kind == "dockerfile" and spec.label == "dockerfile:docker/Builder.Dockerfile"
    assert spec.context_path(tmp_path) == tmp_path / "docker"
    bad = _recipe(tmp_path, image={"dockerfile": "docker/Builder.Dockerfile", "build_args": {"NOPE": "1"}})
    with pytest.raises(Exception) as info:
        load_recipe(bad)
    text = str(info.value)
    assert "image.build_args.NOPE: docker/Builder.Dockerfile declares no ARG NOPE" in text
    assert "BASE_IMAGE, EXTRA, OTHER" in text
    assert ":" in text.split(" ")[0]  # file:line:column


def test_declared_build_args() -> None:
    text = 'ARG A=1 B="x y"\narg lower\nARG C \\\n  D=2\n# ARG COMMENTED\nRUN echo ARG NOT_ONE\n'
    assert declared_build_args(text) == ("A", "B", "lower", "C", "D")


def test_first_from_resolves_its_argument() -> None:
    assert _base_of("ARG BASE_IMAGE=debian:trixie-slim\nFROM ${BASE_IMAGE}\n", {}) == "debian:trixie-slim"
    assert _base_of("ARG BASE_IMAGE=x\nFROM $BASE_IMAGE AS b\n", {"BASE_IMAGE": "y:1"}) == "y:1"
    assert _base_of("FROM --platform=linux/amd64 quay.io/pypa/manylinux_2_28_x86_64@sha256:ab\n", {}) == (
        "quay.io/pypa/manylinux_2_28_x86_64@sha256:ab"
    )


def test_the_generated_package_layer() -> None:
    apt = packages_dockerfile("rocm-buildkit/debian-rocm:0123456789ab", "apt", ("libhipblas-dev", "jq=1.7*"))
    assert "FROM rocm-buildkit/debian-rocm:0123456789ab\n" in apt
    assert "apt-get install -y --no-install-recommends libhipblas-dev jq=1.7*" in apt
    assert "rm -rf /var/lib/apt/lists/*" in apt
    # a compiler among the packages gets its link in the compiler cache's masquerade directory
    assert apt.index("apt-get install") < apt.index("update-ccache-symlinks") < apt.index("apt-get clean")
    dnf = packages_dockerfile("rocm-buildkit/manylinux_2_28-rocm:0123456789ab", "dnf", ("hipblas-devel",))
    assert "dnf install -y --setopt=install_weak_deps=False hipblas-devel" in dnf
    assert "dnf clean all" in dnf


def _probe_lines(**overrides: str) -> str:
    checks = {
        "python:cp313-cp313": "ok\t3.13.5",
        "python:cp39-cp39": "ok\t3.13.5",
        "auditwheel": "ok\tauditwheel 6.8.2 installed at /opt/x (python 3.13)",
        "patchelf": "ok\tpatchelf 0.18.0",
        "hip-platform": "ok\tamd",
        "hipcc": "ok\t/usr/bin/hipcc",
        "hip-archs": "ok\t",
        "hipcc-gcc": "ok\t/usr/bin/../lib/gcc/x86_64-linux-gnu/14",
        "gxx": "ok\t14",
    }
    checks.update(overrides)
    return "".join(f"{k}\t{v}\n" for k, v in checks.items() if v)


def test_a_serving_image_has_no_gaps() -> None:
    contract = Contract.of(["cp313-cp313"], ["gfx90a", "gfx942"])
    assert problems(parse_probe(_probe_lines()), contract) == []


def test_every_gap_is_listed_at_once() -> None:
    contract = Contract.of(["cp313-cp313", "cp312-cp312"], ["gfx90a"], frontend="uv")
    out = _probe_lines(
        **{
            "auditwheel": "ok\tauditwheel 5.4.0 installed at /usr/local/lib (python 3.12)",
            "patchelf": "missing\t",
            "hip-platform": "ok\tnvidia",
            "hipcc-gcc": "ok\t/usr/lib/gcc/x86_64-redhat-linux/8",
            "gxx": "ok\t13.3.1",
        }
    )
    gaps = problems(parse_probe(out), contract)
    assert gaps[0] == "/opt/python/cp312-cp312/bin/python (the planned CPython cp312-cp312)"
    assert f"auditwheel >= {MIN_AUDITWHEEL} (found auditwheel 5.4.0" in gaps[1]
    assert gaps[2].startswith("patchelf")
    assert gaps[3] == "HIP_PLATFORM=amd (the image sets HIP_PLATFORM=nvidia)"
    assert "selected /usr/lib/gcc/x86_64-redhat-linux/8" in gaps[4] and "g++ 13.3.1" in gaps[4]
    assert gaps[5].startswith("uv on PATH")
    assert len(gaps) == 6


def test_a_compiler_that_refuses_an_arch_and_a_missing_hipcc() -> None:
    contract = Contract.of(["cp313-cp313"], ["gfx950"])
    out = _probe_lines(**{"hip-archs": "bad\tclang++-17: error: invalid target ID 'gfx950'"})
    assert problems(parse_probe(out), contract) == [
        "a hipcc that compiles for every planned arch (gfx950): clang++-17: error: invalid target ID 'gfx950'"
    ]
    gone = _probe_lines(hipcc="missing\t", **{"hip-archs": "", "hipcc-gcc": ""})
    assert problems(parse_probe(gone), contract) == ["a HIP compiler: hipcc on PATH or in $ROCM_PATH/bin"]


def test_contract_digest_follows_what_is_asked() -> None:
    a = Contract.of(["cp313-cp313"], ["gfx90a"])
    assert a.digest() == Contract.of(["cp313-cp313", "cp313-cp313"], ["gfx90a"]).digest()
    assert a.digest() != Contract.of(["cp313-cp313"], ["gfx90a", "gfx942"]).digest()
    assert a.digest() != Contract.of(["cp313-cp313"], ["gfx90a"], frontend="build[uv]").digest()
