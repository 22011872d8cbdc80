"""Device code per GPU target: a wheel split into a host wheel and one device wheel per gfx processor.

The stage between the gate and publishing (``buildkit split``; :mod:`buildkit.building` calls it for a
recipe's ``wheel.split``): which member goes where (:mod:`.classify`: standalone code objects by
their ELF header, the path a cross-check; device code inside host ELFs stays), the names and metadata
of the outputs (:mod:`.metadata`: ``pkg-device-gfx942`` wheels behind the host's ``pkg[gfx942]``
extras), deterministic wheel files with their RECORD (:mod:`.writer`), and the orchestration that gates
every output and moves them into place only together (:mod:`.run`).
"""

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
