"""What a recipe section is, and the context each one is parsed in (how a section is written:
docs/ARCHITECTURE.md, "Where a new recipe key goes").

The schema has already validated the document when a section is parsed. A section is skipped when
a top-level key or an earlier section it ``needs`` is unusable (the schema refused it) or failed, so
that one mistake is reported once, and every section that does not depend on it is still checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from buildkit.errors import RecipeError
from buildkit.recipe.yamlspan import Path as JsonPath
from buildkit.recipe.yamlspan import Spans

#: ``err(message, at, hint=..., key=...)``: a :class:`RecipeError` at the value (or key) at ``at``
ErrorAt = Callable[..., RecipeError]

_T = TypeVar("_T")


class Context:
    """One recipe being parsed: its schema-valid data, positions, the problems found so far, and
    the result of every section parsed so far (:meth:`part`)."""

    def __init__(
        self,
        data: dict[str, Any],
        spans: Spans,
        path: Path,
        problems: list[RecipeError] | None = None,
        unusable: set[str] | None = None,
    ) -> None:
        self.data = data
        self.spans = spans
        self.path = path
        self.problems: list[RecipeError] = list(problems or ())
        #: top-level keys the schema found missing or malformed
        self.unusable: set[str] = set(unusable or ())
        #: parts whose own check failed or was skipped (their dependants are skipped)
        self.failed: set[str] = set()
        self.results: dict[str, Any] = {}

    def err(self, message: str, at: JsonPath, *, hint: str | None = None, key: bool = False) -> RecipeError:
        """A :class:`RecipeError` positioned at the value (or ``key``) at JSON path ``at``."""
        pos = self.spans.key(at) if key else self.spans.value(at)
        line, column = pos if pos else (None, None)
        return RecipeError(message, file=str(self.path), line=line, column=column, hint=hint)

    def report(self, problem: RecipeError) -> None:
        """Collect a problem without failing the section (it goes on checking the rest)."""
        self.problems.append(problem)

    def attempt(self, part: str, needs: tuple[str, ...], check: Callable[[], _T]) -> _T | None:
        """``check()``, or None with its problem collected (``part`` failed) or skipped when one of
        the top-level keys or parts it ``needs`` is unusable or failed."""
        if any(n in self.unusable or n in self.failed for n in needs):
            self.failed.add(part)
            return None
        try:
            return check()
        except RecipeError as exc:
            self.problems.append(exc)
            self.failed.add(part)
            return None

    def part(self, name: str, default: Any = None) -> Any:
        """The result of the earlier section ``name``, or ``default`` when it failed or was skipped."""
        return self.results.get(name, default)


@dataclass(frozen=True)
class Section:
    """One section: what it is called by the sections after it, what it needs, how it is parsed,
    and which :class:`~buildkit.recipe.model.Recipe` fields its result fills."""

    #: the name later sections give in their ``needs``
    part: str
    #: top-level keys and earlier parts without which it is skipped
    needs: tuple[str, ...]
    parse: Callable[[Context], Any]
    #: the Recipe field its result is (a name), or a function of the result giving several fields;
    #: None: a check only
    fields: str | Callable[[Any], Mapping[str, Any]] | None

    def values(self, result: Any) -> Mapping[str, Any]:
        """The Recipe fields this section's ``result`` fills."""
        if self.fields is None:
            return {}
        if isinstance(self.fields, str):
            return {self.fields: result}
        return self.fields(result)
