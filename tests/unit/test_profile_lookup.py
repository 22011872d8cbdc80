"""A profile's name is looked up once, where it is first read: the loader (buildkit/profiles.py), the
commands that take a name (buildkit/cli/) and the recipe's ``image`` section; the layers below take
the :class:`~buildkit.profiles.Profile` they are handed (issue 37)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from buildkit import image as images
from buildkit.errors import UsageError
from buildkit.recipe.sections.image import ImageSpec

PACKAGE = Path(__file__).resolve().parents[2] / "buildkit"
#: where a profile name may be resolved: the loader and the edges that read a name
EDGES = ("profiles.py", "cli/", "recipe/sections/image.py")
_CALL = re.compile(r"get_profile\(")


def _callers(root: Path) -> list[str]:
    return sorted(
        f"{p.relative_to(root)}:{n}"
        for p in root.rglob("*.py")
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if _CALL.search(line)
    )


def test_only_the_loader_and_the_edges_look_a_profile_name_up() -> None:
    callers = _callers(PACKAGE)
    assert any(c.startswith("profiles.py:") for c in callers)
    assert [c for c in callers if not c.startswith(EDGES)] == []


def test_the_check_finds_a_lookup_outside_the_edges(tmp_path: Path) -> None:
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "x.py").write_text("profiles.get_profile(name)\n", encoding="utf-8")
    (tmp_path / "image.py").write_text("a = 1\nb = get_profile(name)\n", encoding="utf-8")
    assert _callers(tmp_path) == ["cli/x.py:1", "image.py:2"]


def test_an_image_spec_carries_its_profile() -> None:
    spec = ImageSpec(profile="debian-rocm")
    assert spec.profile_data == images.get_profile("debian-rocm")
    assert ImageSpec(ref="example/builder:1").profile_data is None
    unknown = ImageSpec(profile="centos-rocm")  # looked up when first read
    with pytest.raises(UsageError, match="unknown image profile 'centos-rocm'"):
        _ = unknown.profile_data
