"""The recipe's ``matrix:``: axes of environment variables beside the built-in ``python``, ``rocm``
and ``torch`` (``axes``), axes paired element by element instead of crossed (``zip``), and cells left
out (``exclude``, each naming at least one axis, with an optional ``reason``)."""

from __future__ import annotations

from dataclasses import dataclass

from buildkit.recipe.environment import check_env_name
from buildkit.recipe.schema import did_you_mean
from buildkit.recipe.section import Context, Section
from buildkit.recipe.sections.torch import TorchPin, pins

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


def _parse_matrix(ctx: Context) -> Matrix:
    d = ctx.data
    torch: tuple[TorchPin, ...] = pins(ctx.part("torch"))
    m = d.get("matrix", {})
    axes = tuple((name, tuple(values)) for name, values in m.get("axes", {}).items())
    for name, _ in axes:
        if name.lower() in BUILTIN_AXES:
            raise ctx.err(
                f"matrix.axes.{name} clashes with the built-in axis {name.lower()!r}",
                ("matrix", "axes", name),
                key=True,
            )
        check_env_name(name, None, ("matrix", "axes", name), ctx.err)
    known = BUILTIN_AXES + tuple(n for n, _ in axes)
    lengths = {"python": len(d["python"]), "rocm": len(d["rocm"]), "torch": len(torch)}
    lengths.update({n: len(v) for n, v in axes})
    zipped: tuple[str, ...] = tuple(m.get("zip", ()))
    for i, axis in enumerate(zipped):
        if axis not in known:
            raise ctx.err(
                f"matrix.zip: unknown axis {axis!r}",
                ("matrix", "zip", i),
                hint=did_you_mean(axis, known) or f"axes: {', '.join(known)}",
            )
        if axis == "torch" and not torch:
            raise ctx.err("matrix.zip names torch, but the recipe pins no torch", ("matrix", "zip", i))
    if zipped and len({lengths[a] for a in zipped}) > 1:
        sizes = ", ".join(f"{a} has {lengths[a]}" for a in zipped)
        raise ctx.err(
            f"matrix.zip pairs axes element by element, so they need the same length: {sizes}",
            ("matrix", "zip"),
        )
    values = {"python": list(d["python"]), "rocm": list(d["rocm"]), "torch": [t.series for t in torch]}
    values.update({n: list(v) for n, v in axes})
    rules = []
    for i, rule in enumerate(m.get("exclude", ())):
        pairs = []
        for axis, value in rule.items():
            if axis == "reason":
                continue
            if axis not in known:
                raise ctx.err(
                    f"matrix.exclude[{i}]: unknown axis {axis!r}",
                    ("matrix", "exclude", i, axis),
                    key=True,
                    hint=did_you_mean(axis, (*known, "reason")) or f"axes: {', '.join(known)}",
                )
            if value not in values[axis]:
                shown = ", ".join(repr(v) for v in values[axis]) or "none"
                raise ctx.err(
                    f"matrix.exclude[{i}]: {axis} {value!r} is not one of the recipe's "
                    f"{axis} values ({shown})",
                    ("matrix", "exclude", i, axis),
                    hint=did_you_mean(value, values[axis]),
                )
            pairs.append((axis, value))
        if not pairs:
            raise ctx.err(
                f"matrix.exclude[{i}] names no axis, so it would exclude everything",
                ("matrix", "exclude", i),
            )
        rules.append(ExcludeRule(index=i, values=tuple(sorted(pairs)), reason=rule.get("reason")))
    return Matrix(zip=zipped, axes=axes, exclude=tuple(rules))


SECTION = Section("matrix", ("matrix", "python", "rocm", "torch"), _parse_matrix, "matrix")
