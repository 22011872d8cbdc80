"""Recipes the end-to-end tests and benchmarks derive from recipes/reference.yaml."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def reference_three_pythons(tmp: Path) -> Path:
    """recipes/reference.yaml for ROCm 7.2 only and the builder's three CPythons (3.13, 3.14, 3.15),
    its source the checkout's csrc/ and no publish target: ``tmp/reference-3py.yaml``."""
    data = yaml.safe_load((ROOT / "recipes" / "reference.yaml").read_text())
    data["source"] = {"path": str(ROOT / "csrc")}
    data["python"] = ["3.13", "3.14", "3.15"]
    data["rocm"] = ["7.2"]
    data.pop("publish", None)
    path = tmp / "reference-3py.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
