"""The recipe's ``wheel:`` section: what the project's wheel is tagged for (``abi``, ``from``,
``split``: docs/REFERENCE.md, "Key: wheel").

A ``py3-none`` or ``abi3`` cell records every Python its wheel serves
(:attr:`buildkit.plan.models.Job.serves`); the gate's ``job-identity`` rule accepts exactly that tag.
The schema checks the keys and the syntax of ``from``; :func:`_parse_wheel` adds what a schema cannot
say: ``from`` only with ``abi3`` (and required there), every planned Python at least ``from``, and no
``{python}``/``{cp}`` placeholder in ``version.local`` (one wheel serves every Python, so its version
cannot name one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from buildkit import version as ver
from buildkit.recipe.section import Context, ErrorAt, Section
from buildkit.records import Key, json_shape

_Abi = Literal["cpython", "py3-none", "abi3"]
Split = Literal["none", "per-target"]
#: the version placeholders that name one Python (:data:`buildkit.version.PLACEHOLDERS`)
_PER_PYTHON_PLACEHOLDERS: tuple[str, ...] = ("python", "cp")


def _minor(python: str) -> tuple[int, int]:
    major, minor = python.split(".")
    return int(major), int(minor)


# a recipe without wheel.split keeps its plans and keys: split left out at its default
@json_shape("abi", Key("from", "from_python"), "tag", Key("split", omit="default"))
@dataclass(frozen=True)
class WheelAbi:
    """What the wheel is tagged for: ``cpython`` (one wheel per Python: ``cp312-cp312``),
    ``py3-none`` or ``abi3`` from CPython ``from_python`` (``"3.12"``: ``cp312-abi3``)."""

    abi: _Abi = "cpython"
    from_python: str | None = None
    #: ``per-target``: each job's wheel is split into a host wheel and one device wheel per gfx target
    split: Split = "none"

    @property
    def per_python(self) -> bool:
        """One wheel (and one job) per CPython."""
        return self.abi == "cpython"

    @property
    def tag(self) -> str | None:
        """The interpreter-abi pair of the wheel's tag (``py3-none``, ``cp312-abi3``); None per Python."""
        prefix = self.id_prefix
        return None if prefix is None else "py3-none" if prefix == "py3" else f"{prefix[5:]}-abi3"

    @property
    def id_prefix(self) -> str | None:
        """The job id's first part (``py3``, ``abi3-cp312``); None per Python (``cp312``)."""
        if self.abi == "abi3":
            assert self.from_python is not None
            return f"abi3-cp{ver.nodot(self.from_python)}"
        return "py3" if self.abi == "py3-none" else None


def _parse_wheel(
    raw: Mapping[str, Any] | None, pythons: Sequence[str], local_template: str, err: ErrorAt
) -> WheelAbi:
    """The schema-valid ``wheel`` value (None: not given) as :class:`WheelAbi`, checked against the
    recipe's ``python`` list and ``version.local`` template."""
    if raw is None:
        return WheelAbi()
    abi: _Abi = raw["abi"]
    start = raw.get("from")
    if abi != "abi3" and start is not None:
        raise err(
            f"wheel.from applies to abi: abi3 only, not {abi}",
            ("wheel", "from"),
            key=True,
            hint='remove wheel.from, or write wheel: {abi: abi3, from: "3.12"}',
        )
    if abi == "abi3":
        if start is None:
            lowest = min(pythons, key=_minor)
            raise err(
                "wheel: abi3 needs from: the lowest CPython whose stable ABI the wheel uses",
                ("wheel", "abi"),
                hint=f'write wheel: {{abi: abi3, from: "{lowest}"}} (the Py_LIMITED_API the project '
                "builds with: scikit-build-core's wheel.py-api, setuptools' py_limited_api)",
            )
        for i, python in enumerate(pythons):
            if _minor(python) < _minor(start):
                raise err(
                    f"python[{i}]: CPython {python} is below wheel.from {start}: a cp{ver.nodot(start)}-abi3 "
                    f"wheel does not install on it",
                    ("python", i),
                    hint=f"remove {python} from python:, or lower wheel.from to {python} if the project "
                    "builds with that limited API",
                )
    if abi != "cpython":
        try:
            fields = ver.template_fields(local_template)
        except ver.VersionProblem:
            fields = []  # the version section reports it
        for name in fields:
            if name in _PER_PYTHON_PLACEHOLDERS:
                raise err(
                    f"version.local uses {{{name}}}, but a {abi} wheel serves every planned Python",
                    ("version", "local"),
                    hint=f"drop {{{name}}}: the one wheel of a cell cannot name one Python",
                )
    return WheelAbi(abi=abi, from_python=start if abi == "abi3" else None, split=raw.get("split", "none"))


def _parse(ctx: Context) -> WheelAbi:
    version = ctx.part("version")
    return _parse_wheel(ctx.data.get("wheel"), ctx.data["python"], version.local if version else "", ctx.err)


SECTION = Section("wheel", ("wheel", "python", "version"), _parse, "wheel")
