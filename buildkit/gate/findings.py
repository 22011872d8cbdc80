"""One gate finding: which rule, how bad, what and where. Shared by :mod:`buildkit.gate` (which
re-exports it) and the rule modules it calls (:mod:`buildkit.gate.rules.integrity`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

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
}


@dataclass(frozen=True)
class Finding:
    rule: str  # "ceiling", "platform-tag", "external-library", "gfx-arch", "size", "record", "rpath", ...
    severity: Severity
    message: str
    file: str | None = None  # wheel member
    library: str | None = None
    #: the symbol version (GLIBC_2.34), target id, requirement, hash, tags or path concerned: see
    #: :data:`SYMBOL_LABELS` and :attr:`symbol_label`
    symbol: str | None = None

    @property
    def symbol_label(self) -> str:
        """What :attr:`symbol` is for this rule: ``rpath`` for an RPATH entry, ``symbol`` for a
        symbol version, ... (the human report's word for it)."""
        return SYMBOL_LABELS.get(self.rule, "symbol")

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "file": self.file,
            "library": self.library,
            "symbol": self.symbol,
            "message": self.message,
        }
