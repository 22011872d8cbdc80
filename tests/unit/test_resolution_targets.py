"""What ``publish --check-install`` asks about (:mod:`buildkit.publish.resolution`): the (project,
Python, platform) targets of the published wheels and the planned jobs, and which sources count as
the published index (the resolvers themselves run in tests/integration/test_install_resolution.py)."""

from __future__ import annotations

from pathlib import Path

from buildkit.publish.resolution import Target, _same_index, targets_of


def test_targets_of_the_published_wheels_and_the_planned_jobs() -> None:
    wheels = [
        Path("demo-1.0+rocm6.4-cp312-cp312-manylinux_2_28_x86_64.whl"),
        Path("demo-1.1+rocm6.4-cp312-cp312-manylinux_2_28_x86_64.whl"),
        Path("demo-1.0-py3-none-any.whl"),  # no CPython of its own: not a job's target
        Path("Other_Pkg-2.0-cp311-abi3-manylinux_2_28_x86_64.whl"),
    ]
    planned = [("demo", "3.11", "manylinux_2_28_x86_64"), ("demo", "3.12", "manylinux_2_28_x86_64")]
    assert targets_of(wheels, planned) == [
        Target("demo", "3.11", "manylinux_2_28_x86_64", None),  # planned, nothing published for it
        Target("demo", "3.12", "manylinux_2_28_x86_64", "1.1+rocm6.4"),  # the highest published
        Target("other-pkg", "3.11", "manylinux_2_28_x86_64", "2.0"),
    ]


def test_which_sources_are_the_published_index(tmp_path: Path) -> None:
    server = "http://127.0.0.1:8080/simple/"
    assert _same_index("http://127.0.0.1:8080/packages/demo-1.0-py3-none-any.whl", server)  # pypiserver
    assert not _same_index("http://127.0.0.1:8081/demo/demo-1.0-py3-none-any.whl", server)
    assert not _same_index("https://files.pythonhosted.org/packages/demo-1.0-py3-none-any.whl", server)
    root = (tmp_path / "site" / "index" / "simple").as_uri() + "/"
    assert _same_index(f"{root}demo/demo-1.0%2Brocm6.4-cp312-cp312-linux_x86_64.whl", root)
    assert _same_index(root, root)  # uv names the index itself
    assert not _same_index((tmp_path / "site" / "indexes" / "x.whl").as_uri(), root)
