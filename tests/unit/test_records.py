"""One serialisation mechanism (buildkit/records.py): every record's JSON is a shape declared on its
class; a shape names only what the class has, and renders what json.dumps would write with the
record's own keys, order and omissions."""

from __future__ import annotations

import importlib
import json
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, NamedTuple

import pytest

import buildkit
from buildkit.records import JsonShape, Key, json_shape, record_fields, shape_of, to_data


def _shaped_classes() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(buildkit.__path__, "buildkit."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        found += [
            v
            for v in vars(module).values()
            if isinstance(v, type) and v.__module__ == info.name and "__json_shape__" in v.__dict__
        ]
    return found


SHAPED = _shaped_classes()


def test_records_declare_their_json_as_shapes() -> None:
    # the records of the gate, the inspection, the plan, the build, the images and publish
    names = {c.__name__ for c in SHAPED}
    assert {"GateConfig", "Finding", "Waiver", "WheelReport", "ElfInfo", "Skipped", "Resolution"} <= names
    assert len(SHAPED) >= 30


@pytest.mark.parametrize("cls", SHAPED, ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_a_shape_names_only_what_its_class_has_and_the_class_writes_no_json_of_its_own(cls: type) -> None:
    shape = shape_of(cls)
    assert isinstance(shape, JsonShape)
    fields = set(record_fields(cls))
    for key in shape.keys(cls):
        first = (key.attr or key.name).split(".")[0]
        assert first in fields or hasattr(cls, first), f"{cls.__name__}: {key.name} reads {first!r}"
    # a hand-written to_json beside the shape would be a second truth
    assert "to_json" not in cls.__dict__, f"{cls.__name__} has a shape and a to_json"
    assert len({k.name for k in shape.keys(cls)}) == len(shape.keys(cls)), "a key is declared twice"


@json_shape()
class _Point(NamedTuple):
    x: int
    label: str | None = None


class _Pair(NamedTuple):  # no shape: as json.dumps writes a tuple
    a: int
    b: int


@json_shape(
    Key("where", convert=str),
    Key("x", "point.x"),
    Key("note", omit="none"),
    Key("empty", omit="empty"),
    Key("rate", convert=lambda r: round(r, 2)),
    "pairs",
    "point",
)
@dataclass(frozen=True)
class _Record:
    where: Path
    point: _Point | None
    note: str | None
    empty: str
    rate: float | None
    pairs: tuple[_Pair, ...]


def test_keys_rename_read_paths_convert_and_omit() -> None:
    record = _Record(Path("a/b"), _Point(3), None, "", 1.234, (_Pair(1, 2),))
    assert to_data(record) == {
        "where": "a/b",
        "x": 3,
        "rate": 1.23,
        "pairs": [[1, 2]],
        "point": {"x": 3, "label": None},
    }
    assert list(to_data(record)) == ["where", "x", "rate", "pairs", "point"]
    # a path through None is None; convert leaves None alone; omit keeps a value that is there
    other = _Record(Path("c"), None, "kept", "also", None, ())
    assert to_data(other) == {
        "where": "c",
        "x": None,
        "note": "kept",
        "empty": "also",
        "rate": None,
        "pairs": [],
        "point": None,
    }


def test_every_field_in_order_without_keys_and_omit_for_all() -> None:
    @json_shape(omit="none")
    @dataclass(frozen=True)
    class Sparse:
        b: int | None
        a: int | None

    assert json.dumps(to_data(Sparse(1, None))) == '{"b": 1}'
    assert json.dumps(to_data(Sparse(None, 2))) == '{"a": 2}'


def test_what_is_no_json_data_is_refused_naming_the_record_and_key() -> None:
    @json_shape()
    @dataclass(frozen=True)
    class Bad:
        path: Path

    with pytest.raises(TypeError, match=r"Bad\.path: PosixPath is not JSON data"):
        to_data(Bad(Path("x")))


def test_a_record_with_its_own_to_json_is_asked_for_it() -> None:
    class Own:
        def to_json(self) -> dict[str, int]:
            return {"own": 1}

    assert to_data({"k": (Own(), None, 1.5, True)}) == {"k": [{"own": 1}, None, 1.5, True]}


def test_fields_of_a_dataclass_leave_class_variables_out() -> None:
    @dataclass
    class WithClassVar:
        kept: int
        shared: ClassVar[int] = 0

    assert record_fields(WithClassVar) == ("kept",)
    with pytest.raises(TypeError, match="neither a NamedTuple nor a dataclass"):
        record_fields(int)


def test_a_key_left_out_at_its_fields_default() -> None:
    from dataclasses import field

    @json_shape("a", Key("mode", omit="default"), Key("tags", omit="default"))
    @dataclass(frozen=True)
    class WithDefaults:
        a: int
        mode: str = "none"
        tags: tuple[str, ...] = field(default_factory=tuple)

    assert to_data(WithDefaults(1)) == {"a": 1}
    assert to_data(WithDefaults(1, "per-target", ("x",))) == {"a": 1, "mode": "per-target", "tags": ["x"]}

    @json_shape("x", Key("label", omit="default"))
    class Named(NamedTuple):
        x: int
        label: str | None = "dflt"

    assert to_data(Named(1)) == {"x": 1} and to_data(Named(1, None)) == {"x": 1, "label": None}
    with pytest.raises(KeyError, match=r"Named\.x has no default"):
        to_data(json_shape(Key("x", omit="default"))(Named)(2))
