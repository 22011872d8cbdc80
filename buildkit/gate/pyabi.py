"""What a Python-independent wheel's tag claims, checked on its host code (issue 30).

A ``py3-none-<platform>`` wheel claims it carries no CPython extension module: no host ELF may export
a ``PyInit_*`` symbol (the init function CPython's import calls). A ``cp312-abi3-<platform>`` wheel
claims every host ELF uses only the stable ABI of CPython 3.12: every ``Py*``/``_Py*`` symbol it
imports or defines must be a member of the limited API, added no later than 3.12.

The abi3 judgement is abi3audit's (PyPI ``abi3audit``, which cibuildwheel 4 runs; a dependency of
rocm-buildkit): its :func:`abi3audit._audit.audit` classifies each symbol against ``abi3info``'s
tables (the limited API and stable ABI of every CPython release). What abi3audit does not do our way
is reading: it extracts each shared object of the wheel to a file and parses it whole with
pyelftools. Here the dynamic symbol tables are streamed out of the wheel by the judge
(:func:`buildkit.judge.wheel.python_abi_for`, nothing extracted) and handed to abi3audit's
``audit`` through :class:`_StreamedObject`, which gives it the one interface ``audit`` uses (the
abi3 baseline and the symbols). Only ``.dynsym`` is read (what ``ld.so`` binds); abi3audit also
scans ``.symtab``, which release wheels strip: a non-limited function inlined into a wheel that
keeps its ``.symtab`` is found by abi3audit and not here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Set
from typing import Any, NamedTuple

from buildkit.records import Key, json_shape

#: an extension module's file name that only one CPython (or the stable ABI) imports
_VERSIONED_MODULE = re.compile(r"\.cpython-[0-9]+[a-z]*-[^/]*\.so$")
_ABI3_MODULE = re.compile(r"\.abi3\.so$")
_ABI3_TAG = re.compile(r"^cp3([0-9]+)-abi3$")


@json_shape("member", "init", "non_abi3", Key("future", convert=dict))
class MemberAbi(NamedTuple):
    """One host ELF member as the claim sees it: its ``PyInit_*`` exports, its symbols outside the
    stable ABI (abi3 only) and those of the stable ABI newer than the claimed floor, with the
    CPython that added each (abi3 only)."""

    member: str
    init: tuple[str, ...] = ()
    non_abi3: tuple[str, ...] = ()
    future: tuple[tuple[str, str], ...] = ()


@json_shape()
class PythonAbiResult(NamedTuple):
    """The wheel's host ELFs judged against the claim ``claim`` (``py3-none``, ``cp312-abi3``) by
    ``auditor`` (``abi3audit 0.0.26``, or the ``PyInit_*`` scan for ``py3-none``); only members with
    something to say are kept. NamedTuples, as the gate's other data: ``check``'s start-up imports this
    module and cannot afford a dataclass."""

    claim: str
    auditor: str
    members: tuple[MemberAbi, ...] = ()


def module_name_problem(member: str, claim: str) -> str | None:
    """Why the member's file name contradicts ``claim``: a ``*.cpython-*.so`` (one CPython imports
    it) in a ``py3-none`` or ``abi3`` wheel, an ``*.abi3.so`` in a ``py3-none`` one; else None."""
    if _VERSIONED_MODULE.search(member):
        return "a CPython extension module for one Python version"
    if claim == "py3-none" and _ABI3_MODULE.search(member):
        return "a CPython extension module (stable ABI)"
    return None


def abi3_floor(claim: str) -> tuple[int, int] | None:
    """``(3, 12)`` for ``cp312-abi3``; None for another claim."""
    m = _ABI3_TAG.match(claim)
    return (3, int(m.group(1))) if m else None


class _StreamedObject:
    """What :func:`abi3audit._audit.audit` reads of a shared object (its abi3 baseline and its
    symbols), from a streamed symbol table instead of an extracted file."""

    def __init__(self, member: str, names: frozenset[str], baseline: Any) -> None:
        self.member = member
        self.names = names
        self.baseline = baseline

    def abi3_version(self, assume_lowest: Any) -> Any:
        return self.baseline

    def __iter__(self) -> Iterator[Any]:
        from abi3info.models import Symbol

        # exports and imports of .dynsym: global or weak, never local (symtab keeps no local one)
        for name in sorted(self.names):
            yield Symbol(name, visibility="global")

    def __str__(self) -> str:
        return self.member


def judge_python_abi(claim: str, symbols: Mapping[str, tuple[Set[str], Set[str]]]) -> PythonAbiResult:
    """The host ELFs' dynamic symbols judged against ``claim``: ``symbols`` maps each member to its
    exported and imported names (:func:`buildkit.judge.wheel.python_abi_for` reads them: for
    ``py3-none`` only the ``PyInit_*`` exports). For ``py3-none`` the ``PyInit_*`` exports of each
    member; for ``cpXY-abi3`` abi3audit's audit of each member's names against the stable ABI of
    CPython 3.Y."""
    floor = abi3_floor(claim)
    if floor is None:
        found = tuple(
            MemberAbi(member, init=tuple(sorted(exported)))
            for member, (exported, _imported) in symbols.items()
            if exported
        )
        return PythonAbiResult(claim, "PyInit_* exports of .dynsym", found)
    # abi3audit (and abi3info's tables, rich, pefile) load only for an abi3 claim: start-up time
    import abi3audit
    from abi3audit._audit import audit
    from abi3info.models import PyVersion

    members = []
    for member, (exported, imported) in symbols.items():
        names = frozenset(exported) | frozenset(imported)
        if not any(n.startswith(("Py", "_Py")) for n in names):
            continue  # no CPython symbol at all: a plain library beside the module
        result = audit(_StreamedObject(member, names, PyVersion(*floor)))
        init = tuple(sorted(n for n in exported if n.startswith("PyInit_")))
        non_abi3 = tuple(sorted(s.name for s in result.non_abi3_symbols))
        future = tuple(sorted((o.symbol.name, str(o.added)) for o in result.future_abi3_objects))
        members.append(MemberAbi(member, init=init, non_abi3=non_abi3, future=future))
    return PythonAbiResult(claim, f"abi3audit {abi3audit.__version__}", tuple(members))
