"""One gate finding: which rule, how bad, what and where, and the recipe's waiver that accepted it.
Shared by :mod:`buildkit.gate` (which re-exports it) and the rule modules it calls
(:mod:`buildkit.gate.rules.integrity`).

A :class:`~buildkit.gatespec.Waiver` is one entry of a recipe's ``gate.waive`` list; what a waived
finding becomes is :mod:`buildkit.gate.rules.waivers`'s (:attr:`Finding.fails`).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from buildkit.gatespec import Waiver
from buildkit.records import json_shape

Severity = Literal["error", "warning"]

#: what the ``symbol`` field holds, per rule, as the human report labels it (``symbol`` otherwise:
#: a symbol version such as GLIBC_2.34, or a gfx target id). The JSON keeps the field name ``symbol``.
SYMBOL_LABELS: dict[str, str] = {
    "rpath": "rpath",  # the RPATH/RUNPATH entry
    "load-order": "provided by",  # the member providing the needed library
    "record": "hash",  # RECORD's hash of the member
    "wheel-tags": "tags",  # the tags WHEEL and the file name disagree on
    "torch-pin": "requirement",  # the Requires-Dist line
    "x86-isa": "isa level",  # x86-64-v2 .. v4
    "torch-abi": "mangled",  # the missing symbol as the loader names it
}


@json_shape("rule", "severity", "file", "library", "symbol", "message", "waived")
class Finding(NamedTuple):
    """One thing a rule found in a wheel: which rule, how bad, what, and where (member, library, symbol)."""

    rule: str  # "ceiling", "platform-tag", "external-library", "gfx-arch", "size", "record", "rpath", ...
    severity: Severity
    message: str
    file: str | None = None  # wheel member
    library: str | None = None
    #: the symbol version (GLIBC_2.34), target id, requirement, hash, tags or path concerned: see
    #: :data:`SYMBOL_LABELS` and :attr:`symbol_label`
    symbol: str | None = None
    #: the recipe's waiver that accepted this finding (None: not waived)
    waived: Waiver | None = None

    @property
    def fails(self) -> bool:
        """An error no waiver accepted: the wheel fails the gate."""
        return self.severity == "error" and self.waived is None

    @property
    def symbol_label(self) -> str:
        """What :attr:`symbol` is for this rule: ``rpath`` for an RPATH entry, ``symbol`` for a
        symbol version, ... (the human report's word for it)."""
        return SYMBOL_LABELS.get(self.rule, "symbol")
