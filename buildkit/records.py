"""One way to turn a record (a NamedTuple or a dataclass) into JSON data: its :class:`JsonShape`,
declared on the class with :func:`json_shape` and rendered by :func:`to_data`.

A record states its JSON once, as data, instead of a hand-written ``to_json``::

    @json_shape()  # every field, in field order: {"record_entries": ..., "files": ..., ...}
    class Integrity(NamedTuple):
        record_entries: int
        files: int
        hashes_verified: bool

    # these keys in this order; a key may read another attribute (a field, a property, a dotted
    # path through a nested record), be converted first, and be left out when None
    @json_shape("name", "version", Key("python_tag", "python"), Key("wheel_tag", omit="none"))
    class JobIdentity(NamedTuple): ...

Values are converted as :func:`json.dumps` would see them, a record by its shape (or its own
``to_json``, kept only where its JSON is no projection of its attributes, saying why); anything else is
a TypeError naming the record and the key (give the key a ``convert``: ``Key("wheel", convert=str)``).

No import of :mod:`dataclasses` here: ``buildkit check`` defines no dataclass and must not load that
module for its NamedTuples (``tests/unit/test_check_startup.py``); a dataclass's fields are read
from the class it already is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple, TypeVar

#: when a key is left out: never (None), when its value is None ("none"), None or "" ("empty"), or
#: the field's default ("default": the JSON of records that never set it stays what it was)
_Omit = Literal["none", "empty", "default"] | None
_EMPTY: dict[str, tuple[object, ...]] = {"none": (None,), "empty": (None, "")}


class Key(NamedTuple):
    """One key of a :class:`JsonShape`: the JSON ``name``, the attribute it reads (``attr``; empty:
    ``name``; ``"identity.job"``: a path, None as soon as one step is None), an optional
    ``convert`` applied to the attribute's value (not to None) before the usual conversion, and
    ``omit``."""

    name: str
    attr: str = ""
    omit: _Omit = None
    convert: Callable[[Any], Any] | None = None

    def read(self, record: object) -> Any:
        value: Any = record
        for step in (self.attr or self.name).split("."):
            if value is None:
                return None
            value = getattr(value, step)
        return value


def record_fields(cls: type) -> tuple[str, ...]:
    """The fields of a NamedTuple or dataclass type, in declaration order (a TypeError otherwise)."""
    named = getattr(cls, "_fields", None)
    if isinstance(named, tuple):
        return named
    fields = getattr(cls, "__dataclass_fields__", None)
    if isinstance(fields, dict):
        # ClassVar and InitVar pseudo-fields are no data of the record; "_FIELD" is what the
        # dataclasses module names a real one (read by name: that module is not imported here)
        return tuple(name for name, f in fields.items() if getattr(f._field_type, "name", None) == "_FIELD")
    raise TypeError(f"{cls.__name__} is neither a NamedTuple nor a dataclass")


def _field_default(cls: type, name: str) -> Any:
    """The default of field ``name`` of a NamedTuple or dataclass type (a KeyError without one)."""
    named = getattr(cls, "_field_defaults", None)
    if isinstance(named, dict):
        if name not in named:
            raise KeyError(f"{cls.__name__}.{name} has no default")
        return named[name]
    field = cls.__dataclass_fields__[name]  # type: ignore[attr-defined]
    # dataclasses.MISSING, known by its type's name: that module is not imported here
    if type(field.default).__name__ != "_MISSING_TYPE":
        return field.default
    if type(field.default_factory).__name__ != "_MISSING_TYPE":
        return field.default_factory()
    raise KeyError(f"{cls.__name__}.{name} has no default")


#: how :func:`json_shape` writes some fields: field name -> its key, or the keys standing for it
Written = Mapping[str, str | Key | tuple[str | Key, ...]]


class JsonShape:
    """A record's JSON, as data: the keys given, each a name or a :class:`Key`; none given, every
    field in field order, those named in ``fields`` written as it says (a new field is in the JSON
    by being declared). ``omit``: the rule of the keys given by name. :func:`json_shape` declares
    it on the class, :func:`to_data` renders it."""

    __slots__ = ("_fields", "_given", "_keys", "_omit")

    def __init__(self, *keys: str | Key, omit: _Omit = None, fields: Written | None = None) -> None:
        if keys and fields:
            raise TypeError("give the keys, or how some fields are written, not both")
        self._given = keys
        self._omit = omit
        self._fields = dict(fields or {})
        self._keys: dict[type, tuple[Key, ...]] = {}

    def keys(self, cls: type) -> tuple[Key, ...]:
        """The keys for records of ``cls`` (resolved once per class)."""
        found = self._keys.get(cls)
        if found is None:
            found = tuple(k if isinstance(k, Key) else Key(k, omit=self._omit) for k in self._names(cls))
            self._keys[cls] = found
        return found

    def _names(self, cls: type) -> list[str | Key]:
        if self._given:
            return list(self._given)
        names = record_fields(cls)
        unknown = sorted(set(self._fields) - set(names))
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {', '.join(unknown)}")
        out: list[str | Key] = []
        for name in names:
            written = self._fields.get(name, name)
            if isinstance(written, (str, Key)):  # a Key is a tuple too
                out.append(written)
            else:
                out.extend(written)
        return out

    def render(self, record: object) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in self.keys(type(record)):
            value = key.read(record)
            if key.omit == "default":
                if value == _field_default(type(record), key.attr or key.name):
                    continue
            elif key.omit is not None and value in _EMPTY[key.omit]:
                continue
            if key.convert is not None and value is not None:
                value = key.convert(value)
            try:
                out[key.name] = to_data(value)
            except TypeError as exc:
                raise TypeError(f"{type(record).__name__}.{key.name}: {exc}") from None
        return out


T = TypeVar("T", bound=type)


def json_shape(*keys: str | Key, omit: _Omit = None, fields: Written | None = None) -> Callable[[T], T]:
    """The class decorator declaring a record's :class:`JsonShape` (the same for a NamedTuple,
    whose body may hold only fields and methods, and a dataclass)."""

    def declare(cls: T) -> T:
        cls.__json_shape__ = JsonShape(*keys, omit=omit, fields=fields)  # type: ignore[attr-defined]
        return cls

    return declare


def shape_of(cls: type) -> JsonShape | None:
    """The shape :func:`json_shape` declared on ``cls`` (None: none)."""
    shape = getattr(cls, "__json_shape__", None)
    return shape if isinstance(shape, JsonShape) else None


def to_data(value: Any) -> Any:
    """``value`` as JSON data (the module docstring says how)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    shape = shape_of(type(value))
    if shape is not None:
        return shape.render(value)
    to_json = getattr(value, "to_json", None)  # a record's own, where its JSON is no projection
    if to_json is not None:
        return to_json()
    if isinstance(value, Mapping):
        return {k: to_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_data(v) for v in value]
    raise TypeError(f"{type(value).__name__} is not JSON data (give the key a convert)")


def by_key(mapping: Mapping[Any, Any]) -> dict[Any, Any]:
    """A mapping's items sorted by key: a ``convert`` for a key whose JSON is sorted."""
    return dict(sorted(mapping.items()))
