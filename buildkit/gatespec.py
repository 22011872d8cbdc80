"""What a recipe states to the gate beyond its plan, one model each: the findings it accepts
(:class:`Waiver`, an entry of ``gate.waive``) and the wheel members a build must produce
(:class:`Required`, a glob of ``gate.require``, or ``check --require``).

The recipe layer makes them (:mod:`buildkit.recipe.sections.gate`, with each entry's place and
position in the file) and the gate applies them as made (:mod:`buildkit.gate.rules.waivers`,
:mod:`buildkit.gate.rules.outputs`): there is no second copy to keep in step. Below both layers, and
light: ``buildkit check`` imports this without the recipe layer (start-up time).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import NamedTuple, Protocol

from buildkit.records import json_shape


class _Judged(Protocol):
    """What a waiver matches: a gate finding's rule, library and wheel member."""

    @property
    def rule(self) -> str: ...

    @property
    def library(self) -> str | None: ...

    @property
    def file(self) -> str | None: ...


@json_shape("rule", "library", "file", "reason", "at", "line", "column")
class Waiver(NamedTuple):
    """One ``gate.waive`` entry of a recipe (docs/REFERENCE.md, "Key: gate"; each glob only when given,
    ``*`` crosses ``/``). ``place`` is its index in the list, ``line``/``column`` its position in the
    recipe file (None: not from a file)."""

    rule: str
    reason: str
    library: str | None = None
    file: str | None = None
    place: int = 0
    line: int | None = None
    column: int | None = None

    @property
    def at(self) -> str:
        """``gate.waive[0]``: where the waiver is in the recipe."""
        return f"gate.waive[{self.place}]"

    def position(self, recipe: str | None) -> str:
        """``gate.waive[0] (recipes/x.yaml:31:5)`` when the recipe file and position are known."""
        if recipe is None or self.line is None:
            return self.at
        return f"{self.at} ({recipe}:{self.line}:{self.column})"

    def describe(self) -> str:
        """``rocm-soname, library libfoo.so.1``: the rule and the globs."""
        globs = [f"library {self.library}" if self.library else "", f"file {self.file}" if self.file else ""]
        return ", ".join([self.rule, *(g for g in globs if g)])

    def matches(self, finding: _Judged) -> bool:
        """Same rule, and each glob given matches the finding's field (a finding without that field
        does not match it)."""
        if finding.rule != self.rule:
            return False
        for glob, value in ((self.library, finding.library), (self.file, finding.file)):
            if glob is not None and (value is None or not fnmatchcase(value, glob)):
                return False
        return True


class Required(NamedTuple):
    """A glob of wheel members the build must produce, and where it was given: ``gate.require[0]
    (recipes/x.yaml:40:9)`` (the recipe's), ``--require`` (``check``'s), ``the manifest`` (a
    configuration read back)."""

    glob: str
    where: str
