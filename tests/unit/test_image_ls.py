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


# --------------------------------------------------------------------------- --json, prune (issue 27)
def test_ls_json_follows_its_schema(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    from importlib import resources

    import jsonschema

    monkeypatch.setattr(image_cli, "connect", lambda: _Client(FOUND))
    main(["image", "ls", "--json"])
    data = json.loads(capsys.readouterr().out)
    schema = json.loads(resources.files("buildkit").joinpath("schema/image-ls.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(data)
    assert [(i["profile"], i["size"], i["state"]) for i in data["images"]] == [
        ("manylinux_2_28-rocm", 23_456_000_000, "current"),
        ("debian-rocm", 1_262_000_000, "current"),
        ("debian-runtime", 412_000_000, "stale"),
    ]
    assert data["images"][2]["tags"] == ["rocm-buildkit/debian-runtime:fedcba987654"]


class _RemovingImages(_Images):
    def __init__(self, found: list[_Image]) -> None:
        super().__init__(found)
        self.removed: list[str] = []

    def remove(self, image_id: str, force: bool = False) -> None:
        self.removed.append(image_id)
        self.found = [i for i in self.found if i.id != image_id]


class _RemovingClient:
    def __init__(self, found: list[_Image]) -> None:
        self.images = _RemovingImages(found)


@dataclass
class _Result:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def _main(capsys: pytest.CaptureFixture[str], *args: str) -> _Result:
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return _Result(code, out.out, out.err)


def _prune(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    tty: bool = False,
    answer: str = "",
) -> Any:
    import io

    client = _RemovingClient(list(FOUND))
    monkeypatch.setattr(image_cli, "connect", lambda: client)
    monkeypatch.setattr(image_cli, "_interactive", lambda: tty)
    monkeypatch.setattr("sys.stdin", io.StringIO(answer))
    return client, _main(capsys, "image", "prune", *args)


def test_prune_dry_run_lists_and_removes_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    client, result = _prune(monkeypatch, capsys, "--dry-run", "--all")
    assert result.exit_code == 0, result.output
    assert client.images.removed == []
    assert "would remove rocm-buildkit/manylinux_2_28-rocm:abcdef012345 (23.46 GB, current)" in result.stdout
    assert "would remove rocm-buildkit/debian-runtime:fedcba987654 (412 MB, stale)" in result.stdout
    assert "--dry-run: would remove 3 image(s), 25.13 GB; nothing removed" in result.stderr


def test_prune_without_yes_off_a_terminal_refuses(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    client, result = _prune(monkeypatch, capsys)
    assert result.exit_code == 2
    assert client.images.removed == []
    assert "would remove rocm-buildkit/debian-runtime:fedcba987654 (412 MB, stale)" in result.stdout
    assert "refusing to remove 1 image(s), 412 MB without --yes: stdin is not a terminal" in result.stderr


def test_prune_yes_removes_only_what_it_listed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    client, result = _prune(monkeypatch, capsys, "--yes")
    assert result.exit_code == 0, result.output
    assert client.images.removed == [FOUND[2].id]  # the stale one; current ones stay without --all
    assert "removed rocm-buildkit/debian-runtime:fedcba987654 (412 MB)" in result.stdout


@pytest.mark.parametrize(("answer", "removed"), [("y\n", 3), ("n\n", 0), ("\n", 0)])
def test_prune_asks_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], answer: str, removed: int
) -> None:
    client, result = _prune(monkeypatch, capsys, "--all", tty=True, answer=answer)
    assert result.exit_code == 0, result.output
    assert "remove 3 image(s), 25.13 GB? [y/N]" in result.stderr
    assert len(client.images.removed) == removed
    if not removed:
        assert "nothing removed" in result.stderr


class _Box:
    def __init__(self, name: str, labels: dict[str, str], status: str, gone: list[str]) -> None:
        self.name, self.labels, self.status, self._gone = name, labels, status, gone

    def remove(self, force: bool = False) -> None:
        self._gone.append(self.name)


class _Containers:
    def __init__(self) -> None:
        from buildkit import docker_engine

        self.gone: list[str] = []
        from tests.unit.test_throwaway import dead_owner

        self.boxes = [
            _Box("left", dead_owner("smoke", "r1"), "exited", self.gone),
            # this process made it: its owner runs (issue 38: a prune left nothing running alone)
            _Box("running", docker_engine.container_labels("cibuildwheel"), "running", self.gone),
        ]

    def list(self, all: bool = False, filters: Any = None) -> list[_Box]:
        return [b for b in self.boxes if b.name not in self.gone]


def test_prune_containers_lists_then_needs_yes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    client = type("C", (), {"containers": _Containers()})()
    monkeypatch.setattr(image_cli, "connect", lambda: client)
    monkeypatch.setattr(image_cli, "_interactive", lambda: False)
    result = _main(capsys, "image", "prune", "--containers")
    assert result.exit_code == 2 and client.containers.gone == []
    assert "would remove container left (smoke, build r1; exited; owner pid " in result.stdout
    assert "leave container running (cibuildwheel; running; owner pid " in result.stdout
    assert "refusing to remove 1 container(s) without --yes" in result.stderr
    result = _main(capsys, "image", "prune", "--containers", "--dry-run")
    assert result.exit_code == 0 and client.containers.gone == []
    result = _main(capsys, "image", "prune", "--containers", "--yes")
    assert result.exit_code == 0, result.output
    assert client.containers.gone == ["left"]
    assert "1 container(s) removed, 1 live one(s) left" in result.stderr
    assert "removed container left (smoke, build r1; was exited)" in result.stdout
