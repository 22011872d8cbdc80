"""The recipe's ``rocm:``: the ROCm releases of the matrix ("7.2"). The schema checks the syntax; the
plan checks each against the ROCm data and the image profile (:mod:`buildkit.plan.expansion`)."""

from __future__ import annotations

from buildkit.recipe.section import Context, Section


def _parse_rocm(ctx: Context) -> tuple[str, ...]:
    return tuple(ctx.data["rocm"])


SECTION = Section("rocm", ("rocm",), _parse_rocm, "rocm")
