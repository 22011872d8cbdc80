"""The test tiers of tests/conftest.py: every test is in exactly one, by its folder, and the unit tier
stays fast (a thread serving HTTP stops at once)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests import conftest

TESTS = Path(__file__).resolve().parents[1]


def test_every_folder_with_tests_has_a_tier() -> None:
    folders = {p.relative_to(TESTS).parts[0] for p in TESTS.rglob("test_*.py")}
    assert folders == set(conftest.TIER_OF_FOLDER)
    assert {"unit", "integration", "docker"} == conftest.TIERS


@dataclass
class FakeMarker:
    name: str


@dataclass
class FakeItem:
    path: Path
    markers: list[FakeMarker] = field(default_factory=list)

    @property
    def nodeid(self) -> str:
        return f"{self.path.relative_to(TESTS.parent)}::test_x"

    def iter_markers(self) -> list[FakeMarker]:
        return list(self.markers)

    def add_marker(self, name: str) -> None:
        self.markers.append(FakeMarker(name))


def _modify(items: list[FakeItem]) -> None:
    conftest.pytest_collection_modifyitems(None, items)  # type: ignore[arg-type]


def test_each_test_gets_its_folders_tier() -> None:
    items = [FakeItem(TESTS / folder / "test_x.py") for folder in ("unit", "corpus", "agreement", "docker")]
    items.append(FakeItem(TESTS / "docker" / "test_y.py", [FakeMarker("docker"), FakeMarker("slow")]))
    _modify(items)
    assert [[m.name for m in item.markers if m.name in conftest.TIERS] for item in items] == [
        ["unit"],
        ["integration"],
        ["integration"],
        ["docker"],
        ["docker", "docker"],
    ]


def test_a_test_outside_the_tiers_or_marked_for_another_is_refused() -> None:
    with pytest.raises(pytest.UsageError, match=r"tests/helpers/test_x.py::test_x: not in a tier's folder"):
        _modify([FakeItem(TESTS / "helpers" / "test_x.py")])
    with pytest.raises(pytest.UsageError, match=r"marked docker but in the unit tier's folder"):
        _modify([FakeItem(TESTS / "unit" / "test_x.py", [FakeMarker("docker")])])


def test_a_tier_selected_alone_collects_only_its_folders() -> None:
    class Config:
        def __init__(self, markexpr: str) -> None:
            self.markexpr = markexpr

        def getoption(self, name: str, default: str = "") -> str:
            return self.markexpr if name == "markexpr" else default

    def ignored(path: Path, expression: str) -> bool | None:
        return conftest.pytest_ignore_collect(path, Config(expression))  # type: ignore[arg-type]

    assert ignored(TESTS / "docker", "unit") is True
    assert ignored(TESTS / "corpus" / "test_corpus_ci.py", "unit") is True
    assert ignored(TESTS / "unit" / "test_tiers.py", "unit") is None
    assert ignored(TESTS / "corpus", "integration") is None
    assert ignored(TESTS / "docker", "unit or docker") is None  # an expression: pytest decides
    assert ignored(TESTS / "docker", "") is None


def test_an_http_server_thread_stops_at_once() -> None:
    """``shutdown()`` waits for ``serve_forever``'s next poll, half a second by default: per test, that
    adds up (it was 9 s of the unit tier). Each server thread of the tests polls every 0.05 s."""
    slow = []
    for path in sorted(TESTS.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\.serve_forever\b", line) and "poll_interval" not in line:
                slow.append(f"{path.relative_to(TESTS.parent)}:{number}: {line.strip()}")
    assert slow == []
