"""What ``publish --check-install`` asks about (:mod:`buildkit.publish.resolution`): the (project,
Python, platform) targets of the published wheels and the planned jobs, and which sources count as
the published index (the resolvers themselves run in tests/integration/test_install_resolution.py)."""

from __future__ import annotations

from pathlib import Path

from buildkit.errors import InstallCheckInconclusive, InstallResolutionFailed
from buildkit.publish.resolution import (
    ANY_PLATFORM,
    LOCAL,
    Resolution,
    Target,
    _same_index,
    public_index_problem,
    targets_of,
)
from buildkit.publish.target import parse_target
from buildkit.service.publish import PublishRun
from tests.helpers.wheel_zip import write_wheel


def test_targets_of_the_published_wheels_and_the_planned_jobs() -> None:
    wheels = [
        Path("demo-1.0+rocm6.4-cp312-cp312-manylinux_2_28_x86_64.whl"),
        Path("demo-1.1+rocm6.4-cp312-cp312-manylinux_2_28_x86_64.whl"),
        Path("Other_Pkg-2.0-cp311-abi3-manylinux_2_28_x86_64.whl"),
    ]
    planned = [("demo", "3.11", "manylinux_2_28_x86_64"), ("demo", "3.12", "manylinux_2_28_x86_64")]
    assert targets_of(wheels, planned, pythons=("3.10", "3.11", "3.12", "3.13")) == [
        Target("demo", "3.11", "manylinux_2_28_x86_64", None),  # planned, nothing published for it
        Target("demo", "3.12", "manylinux_2_28_x86_64", "1.1+rocm6.4"),  # the highest published
        # an abi3 wheel serves every CPython from its floor on (issue 38: it was asked about under 3.11 alone)
        Target("other-pkg", "3.11", "manylinux_2_28_x86_64", "2.0"),
        Target("other-pkg", "3.12", "manylinux_2_28_x86_64", "2.0"),
        Target("other-pkg", "3.13", "manylinux_2_28_x86_64", "2.0"),
    ]


def test_a_pure_wheel_is_a_target_under_every_python_within_its_requires_python(tmp_path: Path) -> None:
    """``py3-none-any`` gave no target at all (``install_check: []``, exit 0, issue 38 case 4)."""
    wheel = write_wheel(tmp_path / "fine-1.0-py3-none-any.whl", {"fine/a.py": b""}, requires_python=">=3.11")
    pythons = ("3.9", "3.10", "3.11", "3.12")
    assert targets_of([wheel], pythons=pythons) == [
        Target("fine", "3.11", ANY_PLATFORM, "1.0"),
        Target("fine", "3.12", ANY_PLATFORM, "1.0"),
    ]
    other = write_wheel(tmp_path / "lib-1.0-py3-none-manylinux_2_28_x86_64.whl", {"lib/a.so": b"x"})
    assert [(t.python, t.platform) for t in targets_of([other], pythons=pythons)] == [
        (p, "manylinux_2_28_x86_64") for p in pythons
    ]
    assert targets_of([Path("pypy-1.0-pp310-pypy310_pp73-manylinux_2_28_x86_64.whl")], pythons=pythons) == []


def _row(target: Target, *, failed: bool = False, checked: bool = True) -> Resolution:
    return Resolution(target, "pip", LOCAL, "1.0", "file:///x", True, failed, "demo==1.0", checked)


def test_the_check_fails_when_nothing_was_checked_and_is_inconclusive_without_the_public_index() -> None:
    target = parse_target("/tmp/idx")
    t = Target("demo", "3.12", ANY_PLATFORM, "1.0")
    assert PublishRun([], target, [_row(t)]).failure() is None
    nothing = PublishRun([], target, []).failure()  # a wheel no resolver can be asked about
    assert isinstance(nothing, InstallResolutionFailed) and "checked nothing" in str(nothing)
    skipped = PublishRun([], target, [_row(t, checked=False)]).failure()  # uv missing, pip not asked
    assert isinstance(skipped, InstallResolutionFailed) and "checked nothing" in str(skipped)
    failed = PublishRun([], target, [_row(t, failed=True)]).failure()
    assert isinstance(failed, InstallResolutionFailed) and failed.exit_code == 15
    unsure = PublishRun(
        [], target, [_row(t)], inconclusive="https://pypi.org/simple/ cannot be reached"
    ).failure()
    assert isinstance(unsure, InstallCheckInconclusive) and unsure.exit_code == 18
    assert "--local-only" in str(unsure)
    assert PublishRun([], target, None).failure() is None  # no --check-install


def test_the_public_index_answers_or_is_named(tmp_path: Path) -> None:
    assert public_index_problem(tmp_path.as_uri() + "/", "demo") is None
    problem = public_index_problem("http://127.0.0.1:9/simple/", "demo", timeout=5)
    assert problem is not None and problem.startswith("http://127.0.0.1:9/simple/ cannot be reached")


def test_which_sources_are_the_published_index(tmp_path: Path) -> None:
    server = "http://127.0.0.1:8080/simple/"
    assert _same_index("http://127.0.0.1:8080/packages/demo-1.0-py3-none-any.whl", server)  # pypiserver
    assert not _same_index("http://127.0.0.1:8081/demo/demo-1.0-py3-none-any.whl", server)
    assert not _same_index("https://files.pythonhosted.org/packages/demo-1.0-py3-none-any.whl", server)
    root = (tmp_path / "site" / "index" / "simple").as_uri() + "/"
    assert _same_index(f"{root}demo/demo-1.0%2Brocm6.4-cp312-cp312-linux_x86_64.whl", root)
    assert _same_index(root, root)  # uv names the index itself
    assert not _same_index((tmp_path / "site" / "indexes" / "x.whl").as_uri(), root)
