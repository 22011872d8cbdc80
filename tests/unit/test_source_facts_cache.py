"""``plan`` on an sdist/url source reads the version rule (and ``[tool.cibuildwheel]``) once per archive
(issue 27): the facts are cached by the archive's sha256 and the code that reads them, so a second plan
unpacks nothing; the archive is still fetched from the cache and hashed, and the judgement is the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from buildkit.errors import RecipeError
from buildkit.plan.expansion import expand
from buildkit.plan.source_version import with_source_version
from buildkit.recipe import parse_recipe
from buildkit.source import tree as source_tree
from tests.helpers.sources import isolate_pip, sdist, sha256, simple_index

RECIPE = """\
name: demo
source: {{sdist: "demo=={version}", sha256: {sha}}}
version: {{base: "{version}"{local}}}
python: ["3.12"]
rocm: ["6.4"]
archs: {{list: [gfx942]}}
manylinux: {{policy: manylinux_2_28}}
repair: {{exclude: {{sets: [rocm]}}}}
image: manylinux_2_28-rocm
"""
STATIC = '[build-system]\nrequires = ["setuptools"]\n\n[project]\nname = "demo"\nversion = "{v}"\n'
CIBW = '\n[tool.cibuildwheel]\ntest-command = "pytest"\n'


@pytest.fixture
def unpacks(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = source_tree._unpack

    def counting(recipe: Any, archive: Path, into: Path) -> Path:
        calls.append(archive)
        return real(recipe, archive, into)

    monkeypatch.setattr(source_tree, "_unpack", counting)
    return calls


def _served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str = "2.0") -> str:
    name, data = sdist("demo", version, {"pyproject.toml": STATIC.format(v=version) + CIBW})
    index = simple_index(tmp_path / f"idx-{version}", "demo", {name: data})
    isolate_pip(monkeypatch, tmp_path / "cache", index_url=index.as_uri())
    return sha256(data)


def _plan(tmp_path: Path, sha: str, version: str = "2.0", local: str = "") -> Any:
    text = RECIPE.format(sha=sha, version=version, local=f', local: "{local}"' if local else "")
    return with_source_version(expand(parse_recipe(text, path=tmp_path / "r.yaml"), env={}))


def test_the_second_plan_unpacks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unpacks: list[Path]
) -> None:
    sha = _served(tmp_path, monkeypatch)
    first = _plan(tmp_path, sha)
    assert len(unpacks) == 1
    second = _plan(tmp_path, sha)
    assert len(unpacks) == 1  # from the cache
    assert first.notes == second.notes
    assert (
        "the project's [tool.cibuildwheel] test-command is not used: the recipe has no test_command"
        in "\n".join(second.notes)
    )
    (cached,) = (tmp_path / "cache" / "rocm-buildkit" / "facts").iterdir()
    assert cached.name.startswith(f"{sha}-")


def test_a_cached_fixed_version_is_judged_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unpacks: list[Path]
) -> None:
    sha = _served(tmp_path, monkeypatch)
    _plan(tmp_path, sha)
    for _ in range(2):  # unpacked, then cached: the same error at version.local
        with pytest.raises(RecipeError) as info:
            _plan(tmp_path, sha, local="rocm{rocm}")
        assert info.value.detail.startswith("pyproject.toml:6 (in the sdist demo==2.0) fixes the version 2.0")
        assert (info.value.line, info.value.column) == (3, 31)  # the local label
    assert len(unpacks) == 1


def test_an_unreadable_cache_entry_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unpacks: list[Path]
) -> None:
    sha = _served(tmp_path, monkeypatch)
    _plan(tmp_path, sha)
    (cached,) = (tmp_path / "cache" / "rocm-buildkit" / "facts").iterdir()
    cached.write_text("{not json")
    _plan(tmp_path, sha)
    assert len(unpacks) == 2
    assert cached.read_text().startswith("{")  # rewritten
    _plan(tmp_path, sha)
    assert len(unpacks) == 2


def test_another_archive_is_another_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unpacks: list[Path]
) -> None:
    first = _served(tmp_path, monkeypatch, "2.0")
    _plan(tmp_path, first, "2.0")
    second = _served(tmp_path, monkeypatch, "2.1")
    _plan(tmp_path, second, "2.1")
    assert len(unpacks) == 2
    assert len(list((tmp_path / "cache" / "rocm-buildkit" / "facts").iterdir())) == 2
