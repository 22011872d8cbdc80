"""The recipe's ``repair:``: what auditwheel repair leaves out of the wheel, the named library sets
of ``buildkit/rocm/libraries.yaml`` (``sets: [rocm, torch]``) and SONAME globs (``patterns``).
The schema checks both; the sets are expanded by the plan (:func:`buildkit.rocm.exclude_globs`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from buildkit.recipe.section import Context, Section


def _parse_repair(ctx: Context) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the excluded sets, the excluded SONAME patterns)."""
    exclude = ctx.data.get("repair", {}).get("exclude", {})
    return tuple(exclude.get("sets", ())), tuple(exclude.get("patterns", ()))


def _fields(result: tuple[tuple[str, ...], tuple[str, ...]]) -> Mapping[str, Any]:
    sets, patterns = result
    return {"exclude_sets": sets, "exclude_patterns": patterns}


SECTION = Section("repair", ("repair",), _parse_repair, _fields)
