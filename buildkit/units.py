"""Sizes as recipes and flags write them, and as reports print them: one syntax for both.

``parse_size("450MiB")`` -> 471859200 (``B``, ``KB``/``MB``/``GB`` decimal, ``KiB``/``MiB``/``GiB``
binary, a space allowed before the unit); :func:`format_size` is the other way, for reports.
"""

from __future__ import annotations

import re

MiB = 1024 * 1024
_SIZE = re.compile(r"^(?P<n>[0-9]+(?:\.[0-9]+)?) ?(?P<unit>[KMG]i?B|B)$")
_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def parse_size(text: str) -> int:
    """``"450MiB"`` -> 471859200; a ValueError for anything else."""
    m = _SIZE.match(text.strip())
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return int(float(m.group("n")) * _UNITS[m.group("unit")])


def format_size(size: int) -> str:
    """``512`` -> ``512 B``, ``31402`` -> ``30.7 KiB``, ``20971520`` -> ``20.0 MiB``: never ``0.0 MiB``."""
    if size < 1024:
        return f"{size} B"
    if size < MiB:
        return f"{size / 1024:.1f} KiB"
    return f"{size / MiB:.1f} MiB"
