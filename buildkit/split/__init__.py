"""Device code per GPU target: a wheel split into a host wheel and one device wheel per gfx processor.

The stage between the gate and publishing (``buildkit split``; :mod:`buildkit.building` calls it for a
recipe's ``wheel.split``); its modules: docs/ARCHITECTURE.md."""

from __future__ import annotations

from buildkit.split.classify import BUNDLE_REASON, Bundled, Layout, Placed, classify
from buildkit.split.run import Output, SplitResult, output_config, split_wheel

__all__ = [
    "BUNDLE_REASON",
    "Bundled",
    "Layout",
    "Output",
    "Placed",
    "SplitResult",
    "classify",
    "output_config",
    "split_wheel",
]
