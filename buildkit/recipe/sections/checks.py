"""The recipe's ``checks:``: the pre-checks of a build, today ``tuned_csv`` (globs of tuned-kernel
CSV files relative to the source, checked by :mod:`buildkit.building.tuned`; the schema keeps each a
relative path inside the source)."""

from __future__ import annotations

from buildkit.recipe.section import Context, Section


def _parse_checks(ctx: Context) -> tuple[str, ...]:
    return tuple(ctx.data.get("checks", {}).get("tuned_csv", ()))


SECTION = Section("checks", ("checks",), _parse_checks, "tuned_csv")
