"""The recipe's JSON Schema (shipped in the package) and its errors turned into positioned messages:
:class:`Spans` maps jsonschema's instance path back to the YAML line and column, with "did you
mean" for unknown keys and enum values.

buildkit's own keywords (editors ignore them: unknown keywords are annotations):
``"x-target-id": true`` checks an arch with :func:`buildkit.targets.parse_target_id`;
``"x-never-waived": {rule: reason}`` refuses a ``gate.waive`` rule the gate never lets be waived
(the map and the rule enum are generated from the gate's rule registry: the recipe layer does not
import the gate); ``"x-profile": "builder"`` is an ``enum`` of the builder profiles of
``docker/profiles.toml`` (:func:`buildkit.profiles.builder_names`), so a new profile is one table
of that file; ``x-enum-expected`` words an ``enum`` error instead of listing every value.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from importlib import resources
from typing import Any, cast

import jsonschema
import jsonschema.validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from buildkit import profiles
from buildkit.errors import ArchError, RecipeError, UsageError
from buildkit.recipe.yamlspan import Path, Spans
from buildkit.targets import parse_target_id

# Lower sorts first among errors reported at the same position: the specific before the general.
_PRIORITY = {"additionalProperties": 0, "propertyNames": 0, "type": 1, "enum": 2, "const": 2, "pattern": 3}
# Errors about a whole mapping come after errors about one of its values or keys: an unknown key
# 'pythn' explains a missing 'python' better than the other way round.
_CONTAINER = {"required", "oneOf", "anyOf", "dependentRequired", "minProperties", "maxProperties"}


@cache
def recipe_schema() -> dict[str, Any]:
    """The recipe JSON Schema (draft 2020-12) as shipped in ``buildkit/schema/``."""
    text = resources.files("buildkit").joinpath("schema/recipe.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _target_id(
    validator: Validator, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """``x-target-id``: a target ID whose processor and features are real (the syntax is the
    ``pattern``'s job: a string it rejects is left to it)."""
    pattern = schema.get("pattern")
    if value is not True or not isinstance(instance, str) or (pattern and not re.search(pattern, instance)):
        return
    try:
        parse_target_id(instance)
    except ArchError as exc:
        yield ValidationError(str(exc))


def _never_waived(
    validator: Validator, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """``x-never-waived``: the rule of a waiver is not one whose findings may never be waived."""
    if isinstance(value, Mapping) and isinstance(instance, str) and instance in value:
        yield ValidationError(f"rule {instance!r} cannot be waived: {value[instance]}")


def _profile(
    validator: Validator, value: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """``x-profile``: the name of a builder profile of ``profiles.toml``, reported as an ``enum`` of
    them. When the profiles cannot be read, nothing is checked here: the image section reports it
    at the recipe's value, and a command that needs the image says what is wrong with the file."""
    try:
        names = profiles.builder_names()
    except UsageError:
        return
    if instance not in names:
        yield ValidationError(
            f"{instance!r} is not a builder profile", validator="enum", validator_value=list(names)
        )


@cache
def _validator() -> jsonschema.Draft202012Validator:
    schema = recipe_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    # jsonschema's stubs leave extend() untyped: it returns a subclass of the validator it extends
    extend = cast(Callable[..., type[jsonschema.Draft202012Validator]], jsonschema.validators.extend)
    keywords = {"x-target-id": _target_id, "x-never-waived": _never_waived, "x-profile": _profile}
    return extend(jsonschema.Draft202012Validator, keywords)(schema)


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """A "did you mean" hint for ``word`` among ``choices`` (difflib), or None."""
    close = difflib.get_close_matches(word, sorted(choices), n=3, cutoff=0.6)
    if not close:
        return None
    return "did you mean " + " or ".join(repr(c) for c in close) + "?"


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"a number ({value})"
    if isinstance(value, float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


_TYPE_NAMES = {
    "string": "a string",
    "object": "a mapping",
    "array": "a list",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


def where_of(path: Path) -> str:
    """A JSON path as the recipe writes it: ``torch[0].index_url`` (``the recipe`` for the root)."""
    if not path:
        return "the recipe"
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_Problem = tuple[tuple[int, int, int, int], str, str | None]


def _problems(err: ValidationError, spans: Spans) -> list[tuple[_Problem, str | None]]:
    """One problem per unknown key / missing key, else one per jsonschema error; each with the
    top-level key whose value it makes unusable (a missing or malformed ``archs``: ``"archs"``)."""
    path: Path = tuple(err.absolute_path)
    top = str(path[0]) if path else None
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = err.schema.get("properties", {}) if isinstance(err.schema, Mapping) else {}
        return [(_error_for(err, spans, key=k), top) for k in err.instance if k not in allowed]
    if err.validator == "required" and isinstance(err.instance, dict):
        required: Any = err.validator_value
        missing = [k for k in required if k not in err.instance]
        named = [k for k in missing if err.message.startswith(repr(k))]
        allowed = err.schema.get("properties", {}) if isinstance(err.schema, Mapping) else {}
        unknown = [k for k in err.instance if isinstance(k, str) and k not in allowed]
        out: list[tuple[_Problem, str | None]] = []
        for k in named or missing[:1]:
            # a misspelt key ('pythn') is reported as unknown, with "did you mean 'python'?": its
            # missing twin would be the same typo counted twice
            if not any(did_you_mean(u, [k]) for u in unknown):
                out.append((_error_for(err, spans, key=k), top or str(k)))
            elif top is None:
                out.append((((9, 0, 0, 9), "", None), str(k)))  # unusable, but not reported
        return out
    return [(_error_for(err, spans), top)]


#: a validator whose error only needs words -> (the error, ``where``) -> (message, hint); those that
#: move the position to a key or an item, or read the recipe's text, are handled in :func:`_error_for`
_Message = Callable[[ValidationError, str], tuple[str, "str | None"]]


def _enum_message(err: ValidationError, where: str) -> tuple[str, str | None]:
    options: Any = err.validator_value if err.validator == "enum" else [err.validator_value]
    shown = ", ".join(json.dumps(o) for o in options)
    schema = err.schema if isinstance(err.schema, Mapping) else {}
    expected = schema.get("x-enum-expected") or f"{'one of ' if len(options) > 1 else ''}{shown}"
    hint = did_you_mean(err.instance, [str(o) for o in options]) if isinstance(err.instance, str) else None
    return f"{where}: expected {expected}, got {_kind(err.instance)}", hint


def _pattern_message(err: ValidationError, where: str) -> tuple[str, str | None]:
    schema = err.schema if isinstance(err.schema, Mapping) else {}
    expected = schema.get("x-expected") or f"a string matching {err.validator_value}"
    return f"{where}: expected {expected}, got {err.instance!r}", None


def _target_id_message(err: ValidationError, where: str) -> tuple[str, str | None]:
    # parse_target_id's message: "invalid GPU arch 'gfx905': gfx905 is not ...; did you mean ...?"
    detail = err.message.removeprefix(f"invalid GPU arch {err.instance!r}: ")
    detail, _, suggestion = detail.partition("; did you mean ")
    return f"{where}: {detail}", f"did you mean {suggestion}" if suggestion else None


def _one_of_message(err: ValidationError, where: str) -> tuple[str, str | None]:
    value: Any = err.validator_value
    keys = [sub.get("required", [None])[0] for sub in value if isinstance(sub, Mapping)]
    present = [k for k in keys if isinstance(err.instance, dict) and k in err.instance]
    if all(keys) and present:
        return f"{where}: give only one of {', '.join(map(repr, keys))}, not {' and '.join(present)}", None
    if all(keys):
        return f"{where}: expected one of the keys {', '.join(map(repr, keys))}", None
    return f"{where}: {err.message}", None


def _count_message(err: ValidationError, where: str) -> tuple[str, str | None]:
    n: Any = err.validator_value
    if err.validator != "maxProperties":
        what = {"minItems": "item", "minLength": "character", "minProperties": "key"}[str(err.validator)]
        return f"{where}: expected at least {n} {what}{'s' if n != 1 else ''}", None
    instance: Any = err.instance
    if n == 1:
        schema = err.schema if isinstance(err.schema, Mapping) else {}
        choices = ", ".join(schema.get("properties", {}))
        return f"{where}: give only one of {choices}; got {' and '.join(instance)}", None
    return f"{where}: expected at most {n} keys, got {len(instance)}", None


_MESSAGES: dict[str, _Message] = {
    "enum": _enum_message,
    "const": _enum_message,
    "x-never-waived": lambda err, where: (f"{where}: {err.message}", "remove the waiver"),
    "pattern": _pattern_message,
    "x-target-id": _target_id_message,
    "oneOf": _one_of_message,
    **dict.fromkeys(("minItems", "minLength", "minProperties", "maxProperties"), _count_message),
}


def _error_for(err: ValidationError, spans: Spans, key: str | None = None) -> _Problem:
    """``(sort key, message, hint)`` for one jsonschema error (``key``: the unknown/missing key)."""
    path: Path = tuple(err.absolute_path)
    schema = err.schema if isinstance(err.schema, Mapping) else {}
    where = where_of(path)
    hint: str | None = None
    pos = spans.value(path)
    validator = str(err.validator)
    instance = err.instance
    value: Any = err.validator_value

    if validator == "additionalProperties" and isinstance(instance, dict):
        allowed = list(schema.get("properties", {}))
        key = key or next((k for k in instance if k not in allowed), "?")
        pos = spans.key((*path, key))
        message = f"unknown key {key!r} in {where}"
        hint = did_you_mean(key, allowed)
        if hint is None and allowed:
            hint = "expected one of: " + ", ".join(allowed)
    elif validator == "propertyNames":
        key = str(instance)
        pos = spans.key((*path, key))
        expected = schema.get("x-expected") or f"a name matching {schema.get('pattern')}"
        message = f"bad name {key!r} in {where}: expected {expected}"
    elif validator == "required":
        message, hint = _missing(err, schema, where, key)
    elif validator == "dependentRequired":
        present_key = next((k for k in value if isinstance(instance, dict) and k in instance), "")
        needs = value.get(present_key, []) if present_key else []
        message = f"{where}: {present_key!r} needs {', '.join(map(repr, needs))} as well"
        pos = spans.key((*path, present_key)) if present_key else pos
    elif validator == "uniqueItems" and isinstance(instance, list):
        seen = [json.dumps(item, sort_keys=True) for item in instance]
        dup_index = next((i for i, k in enumerate(seen) if k in seen[:i]), 0)
        pos = spans.value((*path, dup_index))
        message = f"{where}: duplicate item {instance[dup_index]!r}"
    elif validator == "type":
        wanted = value if isinstance(value, list) else [value]
        names = " or ".join(_TYPE_NAMES.get(str(w), str(w)) for w in wanted)
        message = f"{where}: expected {names}, got {_kind(instance)}"
        hint = _quote_hint(instance, spans.text.get(path)) if "string" in wanted else None
    elif validator in _MESSAGES and (validator != "maxProperties" or isinstance(instance, dict)):
        message, hint = _MESSAGES[validator](err, where)
    else:
        message = f"{where}: {err.message}"
    line, column = pos if pos else (0, 0)
    return (int(validator in _CONTAINER), line, column, _PRIORITY.get(validator, 5)), message, hint


def _quote_hint(instance: Any, text: str | None) -> str | None:
    """A string expected, a number or a boolean found: YAML read the text so; quote it."""
    if not isinstance(instance, (int, float, bool)) or text is None:
        return None
    if isinstance(instance, float) and str(instance) != text:
        return f'YAML reads {text} as the number {instance!r}; quote it: "{text}"'
    if isinstance(instance, bool):
        return f'YAML reads {text} as a boolean; quote it: "{text}"'
    return f'quote it: "{text}"'


def _missing(
    err: ValidationError, schema: Mapping[str, Any], where: str, key: str | None
) -> tuple[str, str | None]:
    """A required key missing (``key``, or the first the instance lacks), and a key of the instance
    that may be its misspelling."""
    instance = err.instance
    value: Any = err.validator_value
    missing = [key] if key else [k for k in value if isinstance(instance, dict) and k not in instance]
    message = f"{where}: missing required key {missing[0]!r}" if missing else err.message
    hint = None
    props = list(schema.get("properties", {}))
    if missing and isinstance(instance, dict):
        for k in instance:
            if k not in props and did_you_mean(k, missing):
                hint = f"is {k!r} a misspelling of {missing[0]!r}?"
    return message, hint


def problems(data: Any, spans: Spans, file: str) -> tuple[list[RecipeError], set[str]]:
    """Every schema violation as a positioned :class:`RecipeError` (at most the most specific ones
    at one place), and the top-level keys those violations leave unusable (missing or malformed)."""
    found: list[tuple[_Problem, str | None]] = [
        p for e in _validator().iter_errors(data) for p in _problems(e, spans)
    ]
    unusable = {top for _, top in found if top is not None}
    best: dict[tuple[int, int], int] = {}
    for (sort, message, _), _top in found:
        if message:
            best[sort[1], sort[2]] = min(best.get((sort[1], sort[2]), 99), sort[3])
    errors = [
        RecipeError(message, file=file, line=line or None, column=column or None, hint=hint)
        for ((_, line, column, priority), message, hint), _top in sorted(found, key=lambda t: t[0][1:])
        if message and priority == best[line, column]
    ]
    return errors, unusable


def validate(data: Any, spans: Spans, file: str) -> None:
    """Raise :class:`RecipeError` reporting every schema violation (sorted by position), if any."""
    errors, _ = problems(data, spans, file)
    if errors:
        raise RecipeError.combine(errors)
