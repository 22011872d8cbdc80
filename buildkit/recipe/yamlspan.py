"""YAML loading that remembers where every value came from.

:func:`load_with_spans` composes the YAML node tree (so nothing is lost to the constructor),
rejects duplicate keys, and returns plain Python data plus a :class:`Spans` map from each JSON
path (a tuple of keys and indices) to the 1-based ``(line, column)`` of its value and, for
mapping entries, of its key. Validators report errors at those positions.

Hostile input is bounded, each bound a :class:`RecipeError` at the place it is crossed: nesting
deeper than :data:`_MAX_DEPTH` levels (while composing, before Python's recursion limit could be
reached: ``[[[[...`` 5000 deep), more than :data:`_MAX_NODES` values once aliases and merge keys
(``<<``) are expanded (the "billion laughs"), and mapping keys that are not scalars.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from buildkit.errors import RecipeError

Path = tuple[str | int, ...]
_MAX_NODES = 200_000
_MAX_DEPTH = 64
_Pos = tuple[int, int]


@dataclass
class Spans:
    """Positions of values (``values``), mapping keys (``keys``) and scalar source text."""

    values: dict[Path, _Pos] = field(default_factory=dict)
    keys: dict[Path, _Pos] = field(default_factory=dict)
    text: dict[Path, str] = field(default_factory=dict)

    def value(self, path: Path) -> _Pos | None:
        """Position of the value at ``path``, or of its closest ancestor."""
        p = tuple(path)
        while p not in self.values and p:
            p = p[:-1]
        return self.values.get(p)

    def key(self, path: Path) -> _Pos | None:
        """Position of the key naming ``path`` (falls back to the value's position)."""
        return self.keys.get(tuple(path)) or self.value(path)


def _pos(node: yaml.Node) -> _Pos:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


def _kind(node: yaml.Node) -> str:
    """``scalar``, ``sequence`` or ``mapping`` (PyYAML's node ids)."""
    return str(getattr(node, "id", "value"))


_MERGE = "tag:yaml.org,2002:merge"
_VALUE = "tag:yaml.org,2002:value"
_Pairs = list[tuple[yaml.Node, yaml.Node]]


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with the composer's recursion bounded (:data:`_MAX_DEPTH`: module docstring)."""

    def __init__(self, text: str, file: str) -> None:
        super().__init__(text)
        self.file = file
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self.depth += 1
        try:
            # the root is at depth 1 and its values 1 level down: a collection at depth _MAX_DEPTH + 1
            # would hold values _MAX_DEPTH + 1 levels down
            nests = self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent)
            if self.depth > _MAX_DEPTH and nests:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise RecipeError(
                    f"the recipe nests deeper than {_MAX_DEPTH} levels",
                    file=self.file,
                    line=mark.line + 1 if mark else None,
                    column=mark.column + 1 if mark else None,
                    hint="a recipe is a few levels deep; is a bracket or an indentation runaway?",
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.spans = Spans()
        self.constructor = yaml.SafeLoader("")
        self.count = 0

    def _bound(self, node: yaml.Node, depth: int, added: int = 1) -> None:
        """Count ``added`` values at ``node`` (``depth`` levels down); past a bound, a RecipeError there."""
        self.count += added
        if self.count > _MAX_NODES or depth > _MAX_DEPTH:
            line, column = _pos(node)
            raise RecipeError(
                f"the recipe expands to more than {_MAX_NODES} values or {_MAX_DEPTH} levels "
                "(aliases expanding without bound?)",
                file=self.file,
                line=line,
                column=column,
            )

    def pairs(self, node: yaml.MappingNode, depth: int) -> _Pairs:
        """``node``'s entries with merge keys (``<<: *base``, ``<<: [*a, *b]``) expanded as PyYAML's
        ``flatten_mapping`` does (merged entries first, a list's later mappings first), without
        changing the shared nodes and within :data:`_MAX_NODES` / :data:`_MAX_DEPTH`."""
        merged: _Pairs = []
        own: _Pairs = []
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE:
                if key_node.tag == _VALUE:  # PyYAML reads the `=` key as a string
                    key_node.tag = "tag:yaml.org,2002:str"
                own.append((key_node, value_node))
                continue
            listed = isinstance(value_node, yaml.SequenceNode)
            for source in reversed(value_node.value) if listed else [value_node]:
                if not isinstance(source, yaml.MappingNode):
                    line, column = _pos(source)
                    raise RecipeError(
                        "YAML: a merge key (<<) takes a mapping or a list of mappings, "
                        f"not a {_kind(source)}",
                        file=self.file,
                        line=line,
                        column=column,
                    )
                self._bound(source, depth + 1, len(source.value))
                merged.extend(self.pairs(source, depth + 1))
        return merged + own

    def build(self, node: yaml.Node, path: Path) -> Any:
        self._bound(node, len(path))
        self.spans.values[path] = _pos(node)
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            first_seen: dict[str, _Pos] = {}
            for key_node, value_node in self.pairs(node, len(path)):
                if not isinstance(key_node, yaml.ScalarNode):
                    line, column = _pos(key_node)
                    raise RecipeError(
                        f"a mapping key must be a name, not a {_kind(key_node)}",
                        file=self.file,
                        line=line,
                        column=column,
                    )
                key = self.constructor.construct_object(key_node, deep=True)
                if not isinstance(key, str):
                    # keys such as `3.10:` or `on:` read as numbers/booleans: keep the text
                    key = str(key_node.value)
                line, column = _pos(key_node)
                if key in first_seen:
                    raise RecipeError(
                        f"duplicate key {key!r} (first defined at line {first_seen[key][0]})",
                        file=self.file,
                        line=line,
                        column=column,
                        hint="YAML keeps only the last value; remove or merge one of them",
                    )
                first_seen[key] = (line, column)
                child: Path = (*path, key)
                self.spans.keys[child] = (line, column)
                out[key] = self.build(value_node, child)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        assert isinstance(node, yaml.ScalarNode)
        self.spans.text[path] = str(node.value)
        return self.constructor.construct_object(node, deep=True)


def load_with_spans(text: str, file: str) -> tuple[Any, Spans]:
    """Parse one YAML document into ``(data, spans)``; syntax errors become :class:`RecipeError`."""
    try:
        loader = _Loader(text, file)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or "invalid YAML"
        detail = f"YAML syntax: {problem}"
        if exc.context:
            detail += f" ({exc.context}"
            if exc.context_mark is not None and exc.context_mark is not mark:
                detail += (
                    f" started at line {exc.context_mark.line + 1}, column {exc.context_mark.column + 1}"
                )
            detail += ")"
        raise RecipeError(
            detail,
            file=file,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
        ) from None
    except yaml.YAMLError as exc:
        raise RecipeError(f"YAML syntax: {exc}", file=file) from None
    if node is None:
        raise RecipeError("the recipe is empty", file=file, line=1, column=1)
    builder = _Builder(file)
    try:
        data = builder.build(node, ())
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        raise RecipeError(
            f"YAML: {exc.problem}",
            file=file,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
        ) from None
    return data, builder.spans
