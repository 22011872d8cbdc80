"""The recipe's sections (:mod:`buildkit.recipe.sections`): one module each, registered in one list,
and one snapshot of every error of each section.

Each malformed recipe of ``tests/data/recipes/bad/`` belongs to the section its file name starts with
(``torch_duplicate_series.yaml``: ``torch``; the YAML and top-level mistakes: ``document``). The full
message of every file of a section (position, error, hint, as a command prints it) is kept in
``tests/data/golden/recipe-errors/<section>.txt``: a change to any section's wording shows in its own
snapshot. ``BUILDKIT_REGEN_GOLDEN=1`` rewrites them; review the diff.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

import pytest

from buildkit.errors import RecipeError
from buildkit.recipe import load_recipe
from buildkit.recipe.sections import SECTIONS

DATA = Path(__file__).resolve().parents[1] / "data"
BAD = DATA / "recipes" / "bad"
GOLDEN = DATA / "golden" / "recipe-errors"
REGEN = os.environ.get("BUILDKIT_REGEN_GOLDEN") == "1"

#: the section (a module of buildkit/recipe/sections/, or "document") by the start of a file's name;
#: the longest matching prefix wins
PREFIXES: dict[str, str] = {
    "arch_settings_": "arch_settings",
    "arch_": "archs",
    "archs_": "archs",
    "axes_": "matrix",
    "exclude_": "matrix",
    "zip_": "matrix",
    "before_all_": "hooks",
    "before_build_": "hooks",
    "build_frontend_": "hooks",
    "config_settings_": "hooks",
    "test_requires_": "hooks",
    "ceiling_": "manylinux",
    "ceilings_": "manylinux",
    "policy_": "manylinux",
    "duplicate_": "document",
    "empty_file": "document",
    "top_level_": "document",
    "unknown_top_key": "document",
    "yaml_": "document",
    "missing_name": "name",
    "env_": "env",
    "gate_": "gate",
    "image_": "image",
    "network_": "switches",
    "offload_compress_": "switches",
    "publish_": "publish",
    "secrets_": "secrets",
    "host_isa_": "host_isa",
    "python_": "python",
    "repair_": "repair",
    "rocm_pip_": "rocm_pip",
    "rocm_": "rocm",
    "size_budget_": "size_budget",
    "smoke_": "smoke",
    "source_": "source",
    "subdirectory_": "source",
    "unknown_source_key": "source",
    "torch_": "torch",
    "tuned_csv_": "checks",
    "version_": "version",
    "wheel_": "wheel",
}


def _section_of(path: Path) -> str:
    matches = [prefix for prefix in PREFIXES if path.name.startswith(prefix)]
    assert matches, f"{path.name}: no section; add its prefix to PREFIXES"
    return PREFIXES[max(matches, key=len)]


def _module_names() -> list[str]:
    return sorted({section.parse.__module__.rsplit(".", 1)[1] for section in SECTIONS})


def _snapshot(section: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every error of the section's malformed recipes, loaded by name from their folder (so the
    snapshot does not depend on where the checkout is)."""
    monkeypatch.chdir(BAD)
    blocks = []
    for path in sorted(BAD.glob("*.yaml")):
        if _section_of(path) != section:
            continue
        with pytest.raises(RecipeError) as info:
            load_recipe(path.name)
        blocks.append(f"== {path.name}\n{info.value}\n")
    return "\n".join(blocks)


@pytest.mark.parametrize("section", [*_module_names(), "document"])
def test_section_errors_snapshot(section: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _snapshot(section, monkeypatch)
    assert text, f"section {section} has no malformed recipe in {BAD}: add one"
    golden = GOLDEN / f"{section}.txt"
    if REGEN:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"missing {golden}; run with BUILDKIT_REGEN_GOLDEN=1"
    assert text == golden.read_text(encoding="utf-8"), f"regenerate with BUILDKIT_REGEN_GOLDEN=1 ({golden})"


def test_every_snapshot_is_of_a_section() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.txt")) == sorted([*_module_names(), "document"])


def test_every_section_module_is_registered() -> None:
    """A module of buildkit/recipe/sections/ is a section only once it is in SECTIONS."""
    folder = resources.files("buildkit.recipe.sections")
    modules = {p.name.removesuffix(".py") for p in folder.iterdir() if p.name.endswith(".py")} - {"__init__"}
    assert modules == set(_module_names())


def test_every_recipe_key_has_one_section() -> None:
    """Each top-level key of the recipe schema is read by exactly one section, which names it in its
    ``needs`` (so a mistake in it skips that section instead of crashing it)."""
    schema = json.loads(resources.files("buildkit").joinpath("schema/recipe.schema.json").read_text())
    keys = set(schema["properties"])
    owners: dict[str, list[str]] = {key: [] for key in keys}
    for section in SECTIONS:
        for need in section.needs:
            if need in keys and need not in {s.part for s in SECTIONS if s.part != section.part}:
                owners[need].append(section.part)
    assert {key: parts for key, parts in owners.items() if len(parts) != 1} == {}


def test_sections_need_only_earlier_sections() -> None:
    schema = json.loads(resources.files("buildkit").joinpath("schema/recipe.schema.json").read_text())
    seen: set[str] = set(schema["properties"])
    for section in SECTIONS:
        assert set(section.needs) <= seen, f"{section.part} needs {set(section.needs) - seen}"
        seen.add(section.part)
