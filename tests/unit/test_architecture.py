"""The layout promises of docs/ARCHITECTURE.md, checked: every folder of Python modules is a regular
package (an ``__init__.py`` whose docstring says what the package owns, not an implicit namespace
folder), no module is over 800 lines, and every package the document maps exists and every package
that exists is mapped."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "buildkit"
MAX_LINES = 800


def test_every_folder_of_modules_is_a_regular_package() -> None:
    folders = {p.parent for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    assert sorted(str(f.relative_to(REPO)) for f in folders if not (f / "__init__.py").is_file()) == []


def test_no_module_is_over_800_lines() -> None:
    long = {
        str(p.relative_to(REPO)): n
        for p in sorted(PACKAGE.rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_architecture_document_maps_every_package() -> None:
    text = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    mapped = set(re.findall(r"`buildkit/([a-z_]+)/`", text))
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert mapped == packages, f"document: {sorted(mapped)}, tree: {sorted(packages)}"


def test_every_top_level_module_has_a_layer_in_the_import_contract() -> None:
    """import-linter leaves a module out of a layers contract unconstrained: each module and package
    directly under buildkit/ must be in a layer (``__main__`` aside), so a new one is placed on purpose."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    placed = {name.strip() for layer in layers for name in layer.split("|")}
    present = {p.stem for p in PACKAGE.glob("*.py")} | {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert present - {"__init__", "__main__"} == placed
