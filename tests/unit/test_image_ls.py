"""`buildkit image ls` reports each image's size (the Docker SDK's image attrs ``Size``) next to its
profile, tag, creation time and state. Unit tests do not talk to the shared engine: the client below
stands in for the Docker SDK's (``client.images.list(filters=...)`` returning objects with ``labels``,
``tags``, ``id`` and ``attrs``, as docker-py's Image does); tests/docker/test_image_docker.py lists real
images."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from buildkit import image as images
from buildkit.cli import image as image_cli
from buildkit.cli import main
from buildkit.profiles import docker_dir


@dataclass
class _Image:
    id: str
    tags: list[str]
    labels: dict[str, str]
    attrs: dict[str, Any] = field(default_factory=dict)


class _Images:
    def __init__(self, found: list[_Image]) -> None:
        self.found = found
        self.filters: list[Any] = []

    def list(self, filters: Any = None) -> list[_Image]:
        self.filters.append(filters)
        return self.found


class _Client:
    def __init__(self, found: list[_Image]) -> None:
        self.images = _Images(found)


def _ours(profile: str, tag: str, size: int, created: str, *, current: bool = True) -> _Image:
    sources = images.sources_hash(images.get_profile(profile), docker_dir()) if current else "0" * 64
    return _Image(
        id="sha256:" + tag.rsplit(":", 1)[1].ljust(64, "0"),
        tags=[tag, "someone/else:latest"],
        labels={images.LABEL_PROFILE: profile, images.LABEL_SOURCES: sources},
        attrs={"Size": size, "Created": created},
    )


FOUND = [
    _ours("debian-rocm", "rocm-buildkit/debian-rocm:0123456789ab", 1_262_000_000, "2026-01-02T10:00:00.1Z"),
    _ours(
        "manylinux_2_28-rocm",
        "rocm-buildkit/manylinux_2_28-rocm:abcdef012345",
        23_456_000_000,
        "2026-01-03T10:00:00.2Z",
    ),
    _ours(
        "debian-runtime",
        "rocm-buildkit/debian-runtime:fedcba987654",
        412_000_000,
        "2026-01-01T09:00:00Z",
        current=False,
    ),
]


def test_list_images_reads_the_size_of_each_image() -> None:
    client = _Client(FOUND)
    infos = images.list_images(client)
    assert client.images.filters == [{"label": images.LABEL_PROFILE}]
    assert [(i.profile, i.size, i.current) for i in infos] == [
        ("manylinux_2_28-rocm", 23_456_000_000, True),
        ("debian-rocm", 1_262_000_000, True),
        ("debian-runtime", 412_000_000, False),
    ]
    assert infos[0].tags == ("rocm-buildkit/manylinux_2_28-rocm:abcdef012345",)  # ours only


def test_ls_prints_a_size_column(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(image_cli, "connect", lambda: _Client(FOUND))
    main(["image", "ls"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["PROFILE", "TAG", "SIZE", "CREATED", "STATE"]
    rows = [line.split() for line in lines[1:]]
    assert rows == [
        [
            "manylinux_2_28-rocm",
            "rocm-buildkit/manylinux_2_28-rocm:abcdef012345",
            "23.46",
            "GB",
            "2026-01-03T10:00:00",
            "current",
        ],
        [
            "debian-rocm",
            "rocm-buildkit/debian-rocm:0123456789ab",
            "1.26",
            "GB",
            "2026-01-02T10:00:00",
            "current",
        ],
        [
            "debian-runtime",
            "rocm-buildkit/debian-runtime:fedcba987654",
            "412",
            "MB",
            "2026-01-01T09:00:00",
            "stale",
        ],
    ]
    # the columns line up, the longest tag included: SIZE is right-aligned, CREATED starts together
    ends = {line.index(" GB") + 3 if " GB" in line else line.index(" MB") + 3 for line in lines[1:]}
    assert ends == {lines[0].index("SIZE") + 4}
    assert len({line.index("2026-") for line in lines[1:]}) == 1
