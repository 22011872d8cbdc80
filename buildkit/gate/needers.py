"""The imported symbols behind a symbol version: what a ``ceiling`` finding names beside the version.

``GLIBCXX_3.4.26 from libstdc++.so.6`` says what to lower but not where: the inspection keeps each
member's version needs (``.gnu.version_r``), not which undefined symbol binds to which version. When
a rule finds a version above a ceiling, :func:`symbols_needing` reads the dynamic symbol tables of the
members concerned (:func:`buildkit.inspect.symtab.wheel_symbol_tables`: streamed, nothing extracted,
imports only) and returns, per (member, version), the symbol names that need it. Only then, and only
those members: a passing wheel is never read twice. A report whose wheel is not on disk any more (a
stored report, ``diff`` of a JSON report) or no longer the inspected bytes (another size) gives
nothing, and the finding names the version alone.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from pathlib import Path

from buildkit.errors import WheelReadError
from buildkit.inspect.models import WheelReport

#: the names a finding lists per (member, version) before "and N more"
SHOWN = 3


def symbols_needing(
    report: WheelReport, wanted: Collection[tuple[str, str]]
) -> dict[tuple[str, str], tuple[str, ...]]:
    """(member, symbol version) -> the sorted names of the member's imports bound to that version,
    for each pair of ``wanted`` found; empty when the wheel cannot be read as inspected."""
    if not wanted:
        return {}
    return _read(report.path, report.size, frozenset(wanted))


@functools.lru_cache(maxsize=8)  # the ceiling rule runs again for job-identity's hint: read once
def _read(path: str, size: int, wanted: frozenset[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, ...]]:
    from buildkit.inspect.symtab import wheel_symbol_tables  # the streaming reader: only when asked

    wheel = Path(path)
    try:
        if not wheel.is_file() or wheel.stat().st_size != size:
            return {}
        members = {member for member, _ in wanted}
        tables = wheel_symbol_tables(wheel, members.__contains__, keep_exported=lambda _name: False)
    except (OSError, WheelReadError):
        return {}
    found: dict[tuple[str, str], set[str]] = {}
    for member, table in tables.tables.items():
        for imp in table.imported:
            if imp.version is not None and (member, imp.version) in wanted:
                found.setdefault((member, imp.version), set()).add(imp.name)
    return {key: tuple(sorted(names)) for key, names in found.items()}
