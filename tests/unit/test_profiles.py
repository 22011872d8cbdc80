"""Image profiles as data: docker/profiles.toml, loaded and validated by buildkit.profiles."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from buildkit import image as images
from buildkit.errors import UsageError
from buildkit.profiles import PROFILES_FILE, Profile, load_profiles, parse_profiles

ROOT = Path(__file__).resolve().parents[2]
REPO_DOCKER = ROOT / "docker"

#: the profiles as buildkit/image/__init__.py defined them in Python before they became data (and
#: the package manager that installs a recipe's image.packages), with the Python 3.11 builder and
#: the torch runtime image of the torch reference recipe added since
BEFORE = {
    "debian-rocm": Profile(
        name="debian-rocm",
        dockerfile="debian-rocm.Dockerfile",
        context_files=("debian-rocm.python.txt", "debian-rocm.tools.txt"),
        wheel_requirements=("debian-rocm.python.txt", "debian-rocm.tools.txt"),
        description="Debian trixie + Debian's hipcc (ROCm 5.7.1, clang 17): offline and CI builds",
        rocm_releases=("5.7",),
        package_manager="apt",
        rocm_prefix="/usr",
        cache_layout="debian",
    ),
    "debian-bookworm-rocm": Profile(
        name="debian-bookworm-rocm",
        dockerfile="debian-bookworm-rocm.Dockerfile",
        context_files=("debian-rocm.python.txt", "debian-bookworm-rocm.tools.txt"),
        wheel_requirements=("debian-rocm.python.txt", "debian-bookworm-rocm.tools.txt"),
        wheel_python="3.11",
        description="Debian bookworm + Python 3.11 + Debian's hipcc (ROCm 5.2.3, clang 15): torch extensions "
        "(torch 2.13 for CPython 3.11)",
        rocm_releases=("5.2",),
        package_manager="apt",
        rocm_prefix="/usr",
        cache_layout="debian",
    ),
    "debian-runtime": Profile(
        name="debian-runtime",
        dockerfile="debian-runtime.Dockerfile",
        description="Debian trixie + python3 + Debian's HIP runtime: smoke tests of Debian-built wheels",
        package_manager="apt",
        role="runtime",
    ),
    "manylinux_2_28-rocm": Profile(
        name="manylinux_2_28-rocm",
        dockerfile="manylinux_2_28-rocm.Dockerfile",
        # the pinned build tools (issue 15: cmake, ninja, auditwheel) and the kernel-pruning script
        context_files=("manylinux_2_28-rocm.tools.txt", "manylinux_2_28-rocm.lean.sh"),
        wheel_requirements=("manylinux_2_28-rocm.tools.txt",),
        wheel_python="3.12",
        description="pypa manylinux_2_28 + AMD's ROCm packages: production wheels",
        rocm_build_arg="ROCM_VERSION",
        package_manager="dnf",
        cache_layout="el",
    ),
    "debian-torch-runtime": Profile(
        name="debian-torch-runtime",
        dockerfile="debian-torch-runtime.Dockerfile",
        context_files=("debian-torch-runtime.txt",),
        wheel_requirements=("debian-torch-runtime.txt",),
        wheel_python="3.11",
        description="Debian bookworm + Python 3.11 + torch 2.13.0+cpu + Debian's HIP runtime: smoke tests of "
        "torch extensions",
        package_manager="apt",
        role="runtime",
    ),
}


def test_the_loaded_profiles_are_the_ones_the_code_had() -> None:
    loaded = load_profiles(REPO_DOCKER / PROFILES_FILE)
    older = {name: loaded[name] for name in BEFORE}
    assert older == BEFORE
    assert list(loaded)[: len(BEFORE)] == list(BEFORE)
    for name, profile in older.items():  # every field, default ones included
        assert vars(profile) == vars(BEFORE[name]), name
        assert profile.repository == f"rocm-buildkit/{name}"
    assert {name: images.PROFILES[name] for name in BEFORE} == BEFORE  # what the image layer serves


def test_the_current_rocm_profiles_carry_their_facts() -> None:
    """debian-sid-rocm: one image per ROCm release (6.4 from sid, 7.2 from experimental), each with its
    toolchain and build arguments; the sysroot glibc2.31; Debian's /usr layout; three CPythons."""
    sid = images.get_profile("debian-sid-rocm")
    assert sid.rocm_releases == ("6.4", "7.2") and sid.role == "builder" and sid.rocm_prefix == "/usr"
    assert sid.pythons == ("3.11", "3.13", "3.14", "3.15") and sid.cache_layout == "debian"
    assert sid.toolchain_of("7.2") == "debian-experimental" and sid.toolchain_of("6.4") == "debian-sid"
    assert (
        images.rocm_build_args(images.get_profile("debian-sid-rocm"), "7.2")["ROCM_SUITE"] == "experimental"
    )
    assert images.rocm_build_args(images.get_profile("debian-sid-rocm"), "6.4")["LLVM_MAJOR"] == "21"
    glibc231 = sid.sysroots["glibc2.31"]
    assert (glibc231.glibc, glibc231.policy) == ("2.31", "manylinux_2_31")
    assert glibc231.bin_dir == "/opt/buildkit/sysroots/glibc2.31/bin"
    glibc228 = sid.sysroots["glibc2.28"]
    assert (glibc228.glibc, glibc228.policy) == ("2.28", "manylinux_2_28")
    assert glibc228.gcc_install_dir == "/opt/buildkit/sysroots/glibc2.28/usr/lib/gcc/x86_64-linux-gnu/10"
    # its glibc ABI comes from ziglang, pinned like the bullseye packages, downloaded with the wheels
    assert "glibc-stubs.txt" in sid.wheel_requirements and "glibc-stubs.sh" in sid.context_files
    assert "ziglang 0.17.1" in glibc228.source
    assert sid.rocm_lib_links == "/opt/buildkit/rocm-lib"  # the sysroot build's -L
    runtime = images.get_profile("debian-sid-rocm-runtime")
    assert runtime.role == "runtime"
    assert runtime.release_build_args("6.4")["RUNTIME_PACKAGES"] == "libamdhip64-6"
    with pytest.raises(UsageError, match=r"provides ROCm 6\.4, 7\.2 only, not 5\.7"):
        images.rocm_build_args(images.get_profile("debian-sid-rocm"), "5.7")


def test_the_production_profile_is_intact() -> None:
    prod = images.get_profile("manylinux_2_28-rocm")
    assert (prod.dockerfile, prod.rocm_build_arg, prod.rocm_releases) == (
        "manylinux_2_28-rocm.Dockerfile",
        "ROCM_VERSION",
        None,
    )
    assert prod.build_args == {}
    assert prod.context_files == ("manylinux_2_28-rocm.tools.txt", "manylinux_2_28-rocm.lean.sh")
    assert prod.wheel_requirements == ("manylinux_2_28-rocm.tools.txt",) and prod.wheel_python == "3.12"
    assert images.rocm_build_args(images.get_profile("manylinux_2_28-rocm"), "6.4")[
        "ROCM_VERSION"
    ].startswith("6.4.")


def test_the_profiles_file_is_installed_with_the_dockerfiles() -> None:
    """pyproject ships the profiles file to share/rocm-buildkit/docker as it does the Dockerfiles."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = data["tool"]["setuptools"]["data-files"]["share/rocm-buildkit/docker"]
    matched = {p.name for pattern in shipped for p in ROOT.glob(pattern)}
    assert PROFILES_FILE in matched
    assert {p.dockerfile for p in BEFORE.values()} <= matched


A = '[profiles.a]\ndockerfile = "a.Dockerfile"\n'


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / PROFILES_FILE
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # not TOML: the parser's line
        ('[profiles.a]\ndockerfile = "a.Dockerfile"\ndescription = "unterminated\n', ":3: not valid TOML: "),
        # an unknown field: its line, and the field it looks like
        (
            '[profiles.a]\ndockerfile = "a.Dockerfile"\n\n[profiles.b]\ndockerfile = "b.Dockerfile"\n'
            'contxt_files = ["x"]\n',
            ":6: profile b: unknown field 'contxt_files'; did you mean 'context_files'?",
        ),
        (
            '[profiles.a]\ndockerfile = "a.Dockerfile"\ncolour = "red"\n',
            ":3: profile a: unknown field 'colour' (known: ",
        ),
        # a wrong type: the field's line
        (
            '[profiles.a]\ndockerfile = "a.Dockerfile"\nrocm_releases = "5.7"\n',
            ":3: profile a: rocm_releases must be a list",
        ),
        (
            '[profiles.a]\ndockerfile = "a.Dockerfile"\nbuild_args = { K = 1 }\n',
            ":3: profile a: build_args must be a table",
        ),
        # required, name and layout: the table's line
        (
            '# profiles\n\n[profiles.a]\ndescription = "no dockerfile"\n',
            ":3: profile a: dockerfile is required",
        ),
        (
            '[profiles.Bad_Name]\ndockerfile = "a.Dockerfile"\n',
            ":1: profile name 'Bad_Name' cannot name an image",
        ),
        ('[profile.a]\ndockerfile = "a.Dockerfile"\n', ": unknown top-level key 'profile'"),
        # a sysroot without the links its builds link ROCm's libraries from
        (
            '[profiles.a]\ndockerfile = "a.Dockerfile"\n\n[profiles.a.sysroots."g"]\npath = "/s"\n'
            'gcc_install_dir = "/s/gcc"\nglibc = "2.31"\npolicy = "manylinux_2_31"\n',
            ":1: profile a: sysroots need rocm_lib_links",
        ),
        ("# nothing\n", ": no [profiles.NAME] table"),
    ],
)
def test_a_malformed_file_names_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(UsageError) as info:
        load_profiles(path)
    assert str(info.value).startswith(f"{path}{message}")
    assert info.value.exit_code == 2


def test_the_rocm_lib_links_are_the_folder_the_images_script_makes() -> None:
    """A profile's ``rocm_lib_links`` is what docker/rocm-lib-links.sh makes and links into, and the
    image running it copies the script (in its context files): data and image agree."""
    script = (REPO_DOCKER / "rocm-lib-links.sh").read_text(encoding="utf-8")
    with_links = [p for p in images.PROFILES.values() if p.rocm_lib_links is not None]
    assert with_links and all(p.sysroots for p in with_links)
    for profile in with_links:
        assert f"mkdir -p {profile.rocm_lib_links}\n" in script, profile.name
        assert f'ln -sfn "$lib" {profile.rocm_lib_links}/' in script, profile.name
        assert "rocm-lib-links.sh" in profile.context_files, profile.name


def test_parse_profiles_reads_every_field(tmp_path: Path) -> None:
    text = (
        '[profiles."x-1"]\ndockerfile = "x.Dockerfile"\ncontext_files = ["a.txt"]\n'
        'wheel_requirements = ["a.txt"]\nwheel_python = "3.12"\n'
        'build_args = { BASE_IMAGE = "debian:trixie" }\n'
        'description = "d"\nrocm_releases = ["6.4", "7.0"]\nrocm_build_arg = "ROCM_VERSION"\n'
    )
    assert parse_profiles(text, tmp_path / PROFILES_FILE) == {
        "x-1": Profile(
            name="x-1",
            dockerfile="x.Dockerfile",
            context_files=("a.txt",),
            wheel_requirements=("a.txt",),
            wheel_python="3.12",
            build_args={"BASE_IMAGE": "debian:trixie"},
            description="d",
            rocm_releases=("6.4", "7.0"),
            rocm_build_arg="ROCM_VERSION",
        )
    }


def test_the_docker_dir_is_the_one_with_the_profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An override directory without profiles.toml is passed over; one with a malformed profiles.toml
    is an error naming it (never silently another directory's profiles)."""
    copy = tmp_path / "docker"
    shutil.copytree(REPO_DOCKER, copy)
    (copy / PROFILES_FILE).unlink()
    monkeypatch.setenv("BUILDKIT_DOCKER_DIR", str(copy))
    assert images.docker_dir() == REPO_DOCKER
    (copy / PROFILES_FILE).write_text('[profiles.a]\ndockerfile = "debian-rocm.Dockerfile"\nextra = 1\n')
    with pytest.raises(UsageError, match=rf"^{copy / PROFILES_FILE}:3: profile a: unknown field 'extra'"):
        images.docker_dir()
    (copy / PROFILES_FILE).write_text('[profiles.only]\ndockerfile = "debian-rocm.Dockerfile"\n')
    assert images.docker_dir() == copy
    assert list(images.PROFILES) == ["only"]
    with pytest.raises(UsageError, match="unknown image profile 'debian-rocm'; known profiles: only"):
        images.get_profile("debian-rocm")
