"""One gate finding: which rule, how bad, what and where. Shared by :mod:`buildkit.gate` (which
re-exports it) and the rule modules it calls (:mod:`buildkit.integrity`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    rule: str  # "ceiling", "platform-tag", "external-library", "gfx-arch", "size", "record", "rpath", ...
    severity: Severity
    message: str
    file: str | None = None  # wheel member
    library: str | None = None
    symbol: str | None = None  # the symbol version (GLIBC_2.34), target id, requirement or path concerned

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "file": self.file,
            "library": self.library,
            "symbol": self.symbol,
            "message": self.message,
        }
