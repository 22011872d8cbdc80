"""The recipe's ``name:``: the distribution name of the wheels (the schema checks its syntax)."""

from __future__ import annotations

from buildkit.recipe.section import Context, Section


def _parse_name(ctx: Context) -> str:
    name: str = ctx.data["name"]
    return name


SECTION = Section("name", ("name",), _parse_name, "name")
