from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from packaging.version import Version

from buildkit import version as ver


def _values(
    rocm: str = "7.2", policy: str = "manylinux_2_28", python: str = "3.12", torch: str | None = "2.10"
):
    return ver.template_values(rocm=rocm, policy=policy, python=python, torch=torch)


def test_aiter_version() -> None:
    v = ver.render_version("0.1.12.post2", "rocm{rocm}.manylinux.{policy}", _values())
    assert v == "0.1.12.post2+rocm7.2.manylinux.2.28"


def test_torch_label() -> None:
    v = ver.render_version("0.1.12.post2", "rocm{rocm}.manylinux.{policy}.torch{torch_nodot}", _values())
    assert v == "0.1.12.post2+rocm7.2.manylinux.2.28.torch210"


def test_normalisation_by_packaging() -> None:
    # '-' and '_' become '.', upper case becomes lower case, 'v' prefix and '-post' forms normalise
    v = ver.render_version("v1.0-post3", "ROCm{rocm_nodot}_{cp}-{policy_tag}", _values())
    assert v == "1.0.post3+rocm72.cp312.manylinux.2.28"
    assert v == str(Version(v))


def test_no_template_gives_base() -> None:
    assert ver.render_version("1.0.0", "", _values()) == "1.0.0"


def test_template_values() -> None:
    vals = _values(rocm="6.4", policy="manylinux_2_41", python="3.10", torch="2.9.1")
    assert vals["rocm_nodot"] == "64"
    assert vals["policy"] == "2.41"
    assert vals["torch"] == "2.9"
    assert vals["torch_nodot"] == "29"
    assert vals["cp"] == "cp310"
    assert "torch" not in _values(torch=None)


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("rocm {rocm}", "cannot hold"),
        ("rocm{rocm:>3}", "plain {name}"),
        ("rocm{rocm", "bad local-label template"),
    ],
)
def test_bad_templates(template: str, message: str) -> None:
    with pytest.raises(ver.VersionProblem, match=message):
        ver.template_fields(template)


def test_label_that_renders_empty_segments() -> None:
    with pytest.raises(ver.VersionProblem, match="not a PEP 440 local label"):
        ver.render_version("1.0", "a..{cp}", _values())


def test_unknown_placeholder_at_render() -> None:
    with pytest.raises(ver.VersionProblem, match=r"\{torch_nodot\}"):
        ver.render_version("1.0", "t{torch_nodot}", _values(torch=None))


@pytest.mark.parametrize(
    ("base", "message"), [("1.0+x", "already has a local label"), ("one", "not a PEP 440")]
)
def test_bad_base(base: str, message: str) -> None:
    with pytest.raises(ver.VersionProblem, match=message):
        ver.check_base(base)


def test_policy_label() -> None:
    assert ver.policy_label("manylinux_2_28") == "2.28"
    with pytest.raises(ver.VersionProblem):
        ver.policy_label("manylinux2014")


def test_base_from_tag() -> None:
    assert ver.base_from_tag("v0.1.12.post2") == "0.1.12.post2"
    assert ver.base_from_tag("release-2.0", r"^release-(?P<version>.+)$") == "2.0"
    assert ver.base_from_tag("v1.2", distance=3) == "1.2.post3"
    with pytest.raises(ver.VersionProblem, match="already a post/dev release"):
        ver.base_from_tag("v1.2.post1", distance=3)
    with pytest.raises(ver.VersionProblem, match="does not match"):
        ver.base_from_tag("nightly", r"^v(?P<version>.+)$")


def _git(path: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(path), "-c", "user.email=t@example.org", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
    )


def test_describe_tag_real_repository(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "f").write_text("1")
    _git(tmp_path, "add", "f")
    _git(tmp_path, "commit", "-q", "-m", "one")
    with pytest.raises(ver.VersionProblem, match="no tag found"):
        ver.describe_tag(tmp_path)
    _git(tmp_path, "tag", "v0.3.0")
    assert ver.describe_tag(tmp_path) == ("v0.3.0", 0)
    (tmp_path / "f").write_text("2")
    _git(tmp_path, "commit", "-q", "-am", "two")
    assert ver.describe_tag(tmp_path) == ("v0.3.0", 1)


def test_pypi_reason_mentions_pep_503() -> None:
    assert "PEP 503" in ver.PYPI_LOCAL_REASON and "PyPI refuses" in ver.PYPI_LOCAL_REASON
