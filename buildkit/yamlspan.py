"""YAML loading that remembers where every value came from.

:func:`load_with_spans` composes the YAML node tree (so nothing is lost to the constructor),
rejects duplicate keys, and returns plain Python data plus a :class:`Spans` map from each JSON
path (a tuple of keys and indices) to the 1-based ``(line, column)`` of its value and, for
mapping entries, of its key. Validators report errors at those positions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from buildkit.errors import RecipeError

Path = tuple[str | int, ...]
MAX_NODES = 200_000
MAX_DEPTH = 64
Pos = tuple[int, int]


@dataclass
class Spans:
    """Positions of values (``values``), mapping keys (``keys``) and scalar source text."""

    values: dict[Path, Pos] = field(default_factory=dict)
    keys: dict[Path, Pos] = field(default_factory=dict)
    text: dict[Path, str] = field(default_factory=dict)

    def value(self, path: Path) -> Pos | None:
        """Position of the value at ``path``, or of its closest ancestor."""
        p = tuple(path)
        while p not in self.values and p:
            p = p[:-1]
        return self.values.get(p)

    def key(self, path: Path) -> Pos | None:
        """Position of the key naming ``path`` (falls back to the value's position)."""
        return self.keys.get(tuple(path)) or self.value(path)


def _pos(node: yaml.Node) -> Pos:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


class _Builder:
    def __init__(self, file: str) -> None:
        self.file = file
        self.spans = Spans()
        self.constructor = yaml.SafeLoader("")
        self.count = 0

    def build(self, node: yaml.Node, path: Path) -> Any:
        self.count += 1
        if self.count > MAX_NODES or len(path) > MAX_DEPTH:
            line, column = _pos(node)
            raise RecipeError(
                f"the recipe expands to more than {MAX_NODES} values or {MAX_DEPTH} levels "
                "(aliases expanding without bound?)",
                file=self.file,
                line=line,
                column=column,
            )
        self.spans.values[path] = _pos(node)
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            first_seen: dict[str, Pos] = {}
            self.constructor.flatten_mapping(node)
            for key_node, value_node in node.value:
                key = self.constructor.construct_object(key_node, deep=True)
                if not isinstance(key, str):
                    # keys such as `3.10:` or `on:` read as numbers/booleans: keep the text
                    key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else str(key)
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
        loader = yaml.SafeLoader(text)
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
