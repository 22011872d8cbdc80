"""The shape of a gate rule: what it is called, how bad its findings are, what it checks and the
failure it prevents.

A rule module of :mod:`buildkit.gate.rules` defines its :class:`Rule` objects and makes every finding
through them (``SIZE.error("wheel is 1.2 GiB ...")``), so that no finding carries an id the registry
does not know, nor a severity its rule does not declare. The registry
(:data:`buildkit.gate.rules.FAMILIES`) fixes the order the rules run in, and from it come the rule-id
enum of the check report's JSON schema and the table of ``docs/GATE-RULES.md``.
"""

from __future__ import annotations

from typing import NamedTuple

from buildkit.gate.findings import Finding, Severity


class Rule(NamedTuple):
    """One gate rule. ``severities``: what its findings can be, the usual one first.
    ``never_waived``: why a recipe's ``gate.waive`` may not accept this rule's findings (None: it
    may); the recipe schema refuses such a waiver with this reason."""

    id: str  # "ceiling", "platform-tag", "inspect:not-elf-library"
    severities: tuple[Severity, ...]
    checks: str  # what it checks (one paragraph, Markdown)
    prevents: str  # the failure it prevents: what a user of a wheel it refuses would have hit
    never_waived: str | None = None

    def finding(
        self,
        severity: Severity,
        message: str,
        *,
        file: str | None = None,
        library: str | None = None,
        symbol: str | None = None,
    ) -> Finding:
        if severity not in self.severities:
            raise ValueError(f"rule {self.id} declares {'/'.join(self.severities)}, not {severity}")
        return Finding(self.id, severity, message, file=file, library=library, symbol=symbol)

    def error(
        self, message: str, *, file: str | None = None, library: str | None = None, symbol: str | None = None
    ) -> Finding:
        return self.finding("error", message, file=file, library=library, symbol=symbol)

    def warning(
        self, message: str, *, file: str | None = None, library: str | None = None, symbol: str | None = None
    ) -> Finding:
        return self.finding("warning", message, file=file, library=library, symbol=symbol)
