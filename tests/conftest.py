"""The test tiers, marked by the folder a test lives in (so that no test can forget its marker).

* ``unit`` (``tests/unit``): local work only, no network and no Docker engine. The tier runs in
  parallel (``pytest -n 2``, pytest-xdist), so a test writes below its own ``tmp_path`` and changes
  the environment through ``monkeypatch`` only.
* ``integration`` (``tests/integration``, ``tests/corpus``, ``tests/agreement``): the network (PyPI),
  real index servers and pip/uv installs, the pinned corpus of PyPI wheels, the agreement with
  auditwheel on wheels gcc builds, and real processes killed from outside at sampled moments
  (publish's crash safety: most of their time is waiting for the moment).
* ``docker`` (``tests/docker``): a real Docker engine: images, builds end to end, smoke tests.

``pytest -m unit`` (``integration``, ``docker``) selects a tier; ``./dev test`` runs them all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

#: the tier of every folder holding tests (a test file elsewhere is a collection error)
TIER_OF_FOLDER = {
    "unit": "unit",
    "integration": "integration",
    "corpus": "integration",
    "agreement": "integration",
    "docker": "docker",
}
TIERS = frozenset(TIER_OF_FOLDER.values())


def tier_of(path: Path) -> str | None:
    """The tier of the test file at ``path``: the first folder below ``tests/`` decides."""
    try:
        folder = path.resolve().relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        return None
    return TIER_OF_FOLDER.get(folder)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``-m TIER`` does not import the other tiers' test files (each xdist worker collects too)."""
    wanted = config.getoption("markexpr", "")
    tier = tier_of(collection_path)
    if wanted in TIERS and tier is not None and tier != wanted:
        return True
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    misplaced = []
    for item in items:
        tier = tier_of(item.path)
        if tier is None:
            misplaced.append(f"{item.nodeid}: not in a tier's folder ({', '.join(sorted(TIER_OF_FOLDER))})")
            continue
        # a tier marker written by hand must agree with the folder: `-m unit` must never select a
        # test that needs Docker, `-m docker` must select every one
        others = sorted(m.name for m in item.iter_markers() if m.name in TIERS and m.name != tier)
        if others:
            misplaced.append(f"{item.nodeid}: marked {', '.join(others)} but in the {tier} tier's folder")
        item.add_marker(tier)
    if misplaced:
        raise pytest.UsageError("tests outside their tier:\n" + "\n".join(misplaced))
