"""The recipe's ``gate:`` section: the regression index, the waivers (:class:`~buildkit.gatespec.Waiver`)
and the required members (:class:`~buildkit.gatespec.Required`); docs/REFERENCE.md, "Key: gate".

The schema's rule ids and never-waived rules are generated from the gate's rule registry, which this
layer does not import; :func:`_parse_gate` adds what a schema cannot say. The gate applies the
waivers (:mod:`buildkit.gate.rules.waivers`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from buildkit.gatespec import Required, Waiver
from buildkit.recipe.section import Context, ErrorAt, Section
from buildkit.recipe.yamlspan import Spans


@dataclass(frozen=True)
class GateRules:
    """The recipe's ``gate:`` rules (beyond policy, ceilings, excludes, archs and size budget)."""

    #: PEP 503 simple index of released wheels: a wheel must not regress against its last release
    no_regression_against: str | None = None
    #: findings the gate accepts, each with its reason (``gate.waive``)
    waive: tuple[Waiver, ...] = ()
    #: wheel members the build must produce (``gate.require``): fnmatch globs, each must match one
    require: tuple[Required, ...] = ()


def _parse_gate(raw: Mapping[str, Any], spans: Spans, err: ErrorAt, recipe_file: str) -> GateRules:
    """The schema-valid ``gate`` value as :class:`GateRules`. A waiver repeating another's rule and
    globs is refused (one of the two could never be used), and so is a ``regression`` waiver
    without ``no_regression_against`` (that rule runs only against an index). ``recipe_file``: the
    recipe as given, which a required glob's ``where`` names with its position."""
    index = raw.get("no_regression_against")
    waivers: list[Waiver] = []
    seen: dict[tuple[str, str | None, str | None], int] = {}
    for i, w in enumerate(raw.get("waive", ())):
        at = ("gate", "waive", i)
        rule, library, file = w["rule"], w.get("library"), w.get("file")
        first = seen.get((rule, library, file))
        if first is not None:
            raise err(
                f"gate.waive[{i}] repeats gate.waive[{first}] (same rule, library and file)",
                at,
                hint="keep one waiver and give it both reasons",
            )
        seen[rule, library, file] = i
        if rule == "regression" and index is None:
            raise err(
                f"gate.waive[{i}]: a regression waiver, but no gate.no_regression_against",
                (*at, "rule"),
                hint="the regression rule runs only against an index of released wheels: add "
                "gate.no_regression_against, or remove the waiver",
            )
        line, column = spans.value(at) or (None, None)
        waivers.append(Waiver(rule, w["reason"].strip(), library, file, i, line, column))
    required: list[Required] = []
    for i, glob in enumerate(raw.get("require", ())):
        at = ("gate", "require", i)
        if glob in raw["require"][:i]:
            raise err(f"gate.require[{i}] repeats {glob!r}", at, hint="name each glob once")
        if glob.startswith("/") or ".." in glob.split("/"):
            raise err(
                f"gate.require[{i}]: {glob!r} is not a path inside the wheel",
                at,
                hint="give a glob on wheel member names, e.g. pkg/kernels/*.co",
            )
        pos = spans.value(at)
        where = f"gate.require[{i}]" + (f" ({recipe_file}:{pos[0]}:{pos[1]})" if pos else "")
        required.append(Required(glob, where))
    return GateRules(no_regression_against=index, waive=tuple(waivers), require=tuple(required))


def _parse(ctx: Context) -> GateRules:
    return _parse_gate(ctx.data.get("gate", {}), ctx.spans, ctx.err, str(ctx.path))


SECTION = Section("gate", ("gate",), _parse, "gate")
