"""``buildkit init`` without ``--image`` chooses a builder this machine can build and says why (issue 36).

The probe's inputs (which images the Docker engine holds, which hosts answer) are given to the decision
(:func:`buildkit.builders.choose`) as a described machine: the unit tier has no engine, and the
network of this machine cannot be varied (quay.io and AMD's repository never answer here, Debian's mirror
does). The Dockerfiles the needs are read from are this tree's own. tests/docker/test_init_builder_probe.py
runs the real probe on this machine."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from buildkit import builders, profiles
from buildkit.builders import Machine, Needs, choose, needs_of, needs_of_dockerfile, registry_host
from buildkit.cli import cli
from buildkit.cli import init as init_cli

MANYLINUX_BASE = (
    "quay.io/pypa/manylinux_2_28_x86_64@sha256:"
    + "d632b5e68ab39e59e128dcf0e59e438b26f122d7f2d45f3eea69ffd2877ab017"
)


def _candidates() -> list[Needs]:
    return [needs_of(profiles.get_profile(name)) for name in builders.CANDIDATES]


def _machine(*reachable: str, images: tuple[str, ...] = (), engine_missing: str | None = None) -> Machine:
    return Machine(engine_missing, frozenset(images), frozenset(reachable))


def test_the_needs_come_from_the_profiles_dockerfiles() -> None:
    manylinux, debian = _candidates()
    assert manylinux.bases == (MANYLINUX_BASE,)
    assert manylinux.hosts == (("repo.radeon.com", 443),)
    # ${BASE_IMAGE} by its ARG's default; the later FROMs of the same base and of stages count once
    assert debian.bases == ("debian:sid-slim",)
    assert debian.hosts == (("deb.debian.org", 80),)


def test_stages_and_scratch_are_not_bases() -> None:
    text = (
        "ARG BASE=example.org:5000/team/base:1\nFROM --platform=linux/amd64 ${BASE} AS build\n"
        "RUN curl -fsSL https://downloads.example.com/x.tgz\nFROM build\n"
        "FROM scratch\nCOPY --from=build / /\n"
    )
    needs = needs_of_dockerfile("x", text)
    assert needs.bases == ("example.org:5000/team/base:1",)
    assert needs.hosts == (("downloads.example.com", 443),)


@pytest.mark.parametrize(
    ("reference", "host"),
    [
        ("debian:sid-slim", "registry-1.docker.io"),
        ("library/debian", "registry-1.docker.io"),
        (MANYLINUX_BASE, "quay.io"),
        ("localhost:5000/x", "localhost"),
        ("ghcr.io/o/r:tag", "ghcr.io"),
    ],
)
def test_registry_host(reference: str, host: str) -> None:
    assert registry_host(reference) == host


def test_everything_answers_the_production_builder() -> None:
    choice = choose(
        _machine("quay.io", "repo.radeon.com", "deb.debian.org", "registry-1.docker.io"), _candidates()
    )
    assert choice.image == "manylinux_2_28-rocm" and choice.buildable
    assert choice.why.startswith("manylinux_2_28-rocm: this machine can build it")
    assert choice.others == (("debian-sid-rocm", ()),)


def test_no_quay_the_debian_builder_from_a_seeded_base() -> None:
    """This machine's case: quay.io and repo.radeon.com do not resolve, debian:sid-slim was seeded."""
    choice = choose(_machine("deb.debian.org", images=("debian:sid-slim",)), _candidates())
    assert choice.image == "debian-sid-rocm" and choice.buildable
    assert "debian:sid-slim (in the engine)" in choice.why
    assert "quay.io does not answer" in choice.why and "repo.radeon.com does not answer" in choice.why
    assert choice.others[0][0] == "manylinux_2_28-rocm" and choice.others[0][1]


def test_a_base_in_the_engine_needs_no_registry_but_the_packages_still_need_their_host() -> None:
    with_base = _machine("repo.radeon.com", images=(MANYLINUX_BASE,))
    assert choose(with_base, _candidates()).image == "manylinux_2_28-rocm"
    # the base is there, AMD's repository is not: Debian's builder (pulled from Docker Hub)
    no_amd = _machine("deb.debian.org", "registry-1.docker.io", images=(MANYLINUX_BASE,))
    choice = choose(no_amd, _candidates())
    assert choice.image == "debian-sid-rocm" and "debian:sid-slim (pulled)" in choice.why
    assert choice.others == (("manylinux_2_28-rocm", ("repo.radeon.com does not answer",)),)


def test_nothing_buildable_keeps_the_first_and_says_what_lacks() -> None:
    choice = choose(_machine(), _candidates())
    assert choice.image == "manylinux_2_28-rocm" and not choice.buildable
    assert "no builder can be built here" in choice.why
    assert "deb.debian.org does not answer" in choice.why and "quay.io does not answer" in choice.why


def test_no_engine_keeps_the_first() -> None:
    choice = choose(
        _machine("quay.io", engine_missing="cannot connect to unix:///var/run/docker.sock"), _candidates()
    )
    assert choice.image == "manylinux_2_28-rocm" and not choice.buildable
    assert "no Docker engine answers here (cannot connect to unix:///var/run/docker.sock)" in choice.why


def test_a_hanging_lookup_counts_as_unreachable_within_the_timeout() -> None:
    release = threading.Event()

    def reach(host: str, port: int, timeout: float) -> bool:
        if host == "hangs.example":
            release.wait(10)  # a DNS lookup that does not return
            return True
        return host == "answers.example"

    start = time.monotonic()
    found = builders.reachable_hosts(
        [("hangs.example", 443), ("answers.example", 443)], timeout=0.3, reach=reach
    )
    took = time.monotonic() - start
    release.set()
    assert found == frozenset({"answers.example"})
    assert took < 2


SETUP = 'from setuptools import setup\nsetup(name="tinyhip", version="0.1.0", packages=["tinyhip"])\n'


def _init(tmp_path: Path, machine: Machine, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[str, dict]:
    project = tmp_path / "proj"
    (project / "tinyhip").mkdir(parents=True)
    (project / "setup.py").write_text(SETUP)
    (project / "tinyhip" / "__init__.py").write_text("")
    monkeypatch.setattr(builders, "probe", lambda candidates, timeout=0: machine)
    monkeypatch.setattr(init_cli, "_interactive", lambda: False)
    result = CliRunner().invoke(init_cli.init, [str(project), *args])
    assert result.exit_code == 0, result.output
    text = (project / "rocm-buildkit.yaml").read_text()
    return result.output + text, yaml.safe_load(text)


def test_init_writes_the_debian_builder_with_its_sysroot_and_offers_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, recipe = _init(tmp_path, _machine("deb.debian.org", images=("debian:sid-slim",)), monkeypatch)
    assert recipe["image"] == "debian-sid-rocm"
    assert recipe["manylinux"] == {"policy": "manylinux_2_28", "sysroot": "glibc2.28"}
    assert "buildkit init: builder debian-sid-rocm: this machine can build it" in out
    assert "# chosen by init: debian-sid-rocm: this machine can build it" in out
    assert "# or image: manylinux_2_28-rocm without manylinux.sysroot (when init ran: base quay.io" in out


def test_init_writes_the_production_builder_and_offers_debian_with_its_sysroot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, recipe = _init(tmp_path, _machine("quay.io", "repo.radeon.com"), monkeypatch)
    assert recipe["image"] == "manylinux_2_28-rocm" and "sysroot" not in recipe["manylinux"]
    assert "# or image: debian-sid-rocm with manylinux.sysroot: glibc2.28 (when init ran: " in out


def test_init_with_image_probes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: object, **__: object) -> Machine:
        raise AssertionError("probed")

    monkeypatch.setattr(builders, "choose_builder", fail)
    out, recipe = _init(tmp_path, _machine(), monkeypatch, "--image", "manylinux_2_28-rocm")
    assert recipe["image"] == "manylinux_2_28-rocm" and "chosen by init" not in out


def test_init_asks_on_a_terminal_when_nothing_can_be_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "setup.py").write_text(SETUP)
    monkeypatch.setattr(builders, "probe", lambda candidates, timeout=0: _machine())
    monkeypatch.setattr(init_cli, "_interactive", lambda: True)
    # the answers: the builder (a wrong one first: asked again), the ROCm releases, the archs
    result = CliRunner().invoke(init_cli.init, [str(project)], input="nope\ndebian-sid-rocm\n\n\n")
    assert result.exit_code == 0, result.output
    assert "no builder can be built here" in result.output and "Builder image" in result.output
    recipe = yaml.safe_load((project / "rocm-buildkit.yaml").read_text())
    assert recipe["image"] == "debian-sid-rocm" and recipe["manylinux"]["sysroot"] == "glibc2.28"
    assert "# chosen at init's prompt" in (project / "rocm-buildkit.yaml").read_text()


def test_quiet_init_prints_only_the_recipe_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 36: -q drops notes in every command; init's why, wrote and next lines are notes."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "setup.py").write_text(SETUP)
    monkeypatch.setattr(builders, "probe", lambda candidates, timeout=0: _machine("deb.debian.org"))
    monkeypatch.setattr(init_cli, "_interactive", lambda: False)
    result = CliRunner().invoke(cli, ["-q", "init", str(project)])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{project / 'rocm-buildkit.yaml'}\n" and result.stderr == ""
    loud = CliRunner().invoke(cli, ["init", str(project), "-o", str(tmp_path / "again.yaml")])
    assert "buildkit init: builder " in loud.stderr and "next: buildkit plan" in loud.stderr
