"""The recipe's ``matrix:``: axes of environment variables beside the built-in ``python``, ``rocm``
and ``torch`` (``axes``), axes paired element by element instead of crossed (``zip``), and cells left
out (``exclude``, each naming at least one axis, with an optional ``reason``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from buildkit.recipe.environment import check_env_name
from buildkit.recipe.schema import did_you_mean
from buildkit.recipe.section import Context, ErrorAt, Section
from buildkit.recipe.sections.torch import pins

#: Built-in matrix axes; ``matrix.axes`` adds environment-variable axes.
BUILTIN_AXES: tuple[str, ...] = ("python", "rocm", "torch")


@dataclass(frozen=True)
class ExcludeRule:
    index: int
    values: tuple[tuple[str, str], ...]  # (axis, value), sorted by axis
    reason: str | None


@dataclass(frozen=True)
class Matrix:
    zip: tuple[str, ...] = ()
    axes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[ExcludeRule, ...] = ()


def _check_axis_name(name: str, err: ErrorAt) -> None:
    if name.lower() in BUILTIN_AXES:
        raise err(
            f"matrix.axes.{name} clashes with the built-in axis {name.lower()!r}",
            ("matrix", "axes", name),
            key=True,
        )
    check_env_name(name, None, ("matrix", "axes", name), err)


def _check_zip(zipped: tuple[str, ...], values: Mapping[str, list[str]], err: ErrorAt) -> None:
    """``matrix.zip`` names known axes (torch only when pinned), all of one length."""
    known = tuple(values)
    for i, axis in enumerate(zipped):
        if axis not in known:
            raise err(
                f"matrix.zip: unknown axis {axis!r}",
                ("matrix", "zip", i),
                hint=did_you_mean(axis, known) or f"axes: {', '.join(known)}",
            )
        if axis == "torch" and not values["torch"]:
            raise err("matrix.zip names torch, but the recipe pins no torch", ("matrix", "zip", i))
    if zipped and len({len(values[a]) for a in zipped}) > 1:
        sizes = ", ".join(f"{a} has {len(values[a])}" for a in zipped)
        raise err(
            f"matrix.zip pairs axes element by element, so they need the same length: {sizes}",
            ("matrix", "zip"),
        )


def _exclude_rule(
    i: int, rule: Mapping[str, Any], values: Mapping[str, list[str]], err: ErrorAt
) -> ExcludeRule:
    """``matrix.exclude[i]``: known axes, each with one of its values, at least one."""
    known = tuple(values)
    pairs = []
    for axis, value in rule.items():
        if axis == "reason":
            continue
        at = ("matrix", "exclude", i, axis)
        if axis not in known:
            hint = did_you_mean(axis, (*known, "reason")) or f"axes: {', '.join(known)}"
            raise err(f"matrix.exclude[{i}]: unknown axis {axis!r}", at, key=True, hint=hint)
        if value not in values[axis]:
            shown = ", ".join(repr(v) for v in values[axis]) or "none"
            raise err(
                f"matrix.exclude[{i}]: {axis} {value!r} is not one of the recipe's {axis} values ({shown})",
                at,
                hint=did_you_mean(value, values[axis]),
            )
        pairs.append((axis, value))
    if not pairs:
        raise err(
            f"matrix.exclude[{i}] names no axis, so it would exclude everything", ("matrix", "exclude", i)
        )
    return ExcludeRule(index=i, values=tuple(sorted(pairs)), reason=rule.get("reason"))


def _parse_matrix(ctx: Context) -> Matrix:
    d = ctx.data
    m = d.get("matrix", {})
    axes = tuple((name, tuple(values)) for name, values in m.get("axes", {}).items())
    for name, _ in axes:
        _check_axis_name(name, ctx.err)
    torch = pins(ctx.part("torch"))
    values = {"python": list(d["python"]), "rocm": list(d["rocm"]), "torch": [t.series for t in torch]}
    values.update({n: list(v) for n, v in axes})
    zipped: tuple[str, ...] = tuple(m.get("zip", ()))
    _check_zip(zipped, values, ctx.err)
    rules = tuple(_exclude_rule(i, rule, values, ctx.err) for i, rule in enumerate(m.get("exclude", ())))
    return Matrix(zip=zipped, axes=axes, exclude=rules)


SECTION = Section("matrix", ("matrix", "python", "rocm", "torch"), _parse_matrix, "matrix")
