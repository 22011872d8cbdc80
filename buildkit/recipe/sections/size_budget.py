"""The recipe's ``size_budget:``: the wheel file size the gate refuses (``limit``) or warns about
(``warn``), written as sizes ("450MiB", :func:`buildkit.units.parse_size`)."""

from __future__ import annotations

from buildkit.recipe.section import Context, Section
from buildkit.units import parse_size


def _parse_size_budget(ctx: Context) -> dict[str, int]:
    """``"limit"``/``"warn"`` -> bytes."""
    return {k: parse_size(v) for k, v in sorted(ctx.data.get("size_budget", {}).items())}


SECTION = Section("size_budget", ("size_budget",), _parse_size_budget, "size_budget")
