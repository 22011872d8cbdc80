"""The imported symbols behind a symbol version: what a ``ceiling`` finding names beside the version.

``GLIBCXX_3.4.26 from libstdc++.so.6`` says what to lower but not where: the inspection keeps each
member's version needs (``.gnu.version_r``), not which undefined symbol binds to which version. When
the ``ceiling`` rule finds a version above a ceiling, it asks the reader :func:`judge_wheel
<buildkit.judge.wheel.judge_wheel>` gave the gate (:func:`reader`): the dynamic symbol tables of the
members concerned (:func:`buildkit.inspect.symtab.wheel_symbol_tables`: streamed from the judgement's
open file, nothing extracted, imports only), per (member, version), the symbol names that need it.
Only then, and only those members: a passing wheel is never read twice. A gate run without a reader
(a stored report, ``diff`` of a JSON report) names the version alone.
"""

from __future__ import annotations

from collections.abc import Collection

from buildkit.errors import WheelReadError
from buildkit.gate.facts import Needers
from buildkit.inspect.wheel import WheelHandle


def reader(wheel: WheelHandle) -> Needers:
    """What the gate is given to name the symbols behind a version (``evaluate(needers=...)``): the
    lookup below on the judgement's open ``wheel``, each answer kept (the ceiling rule runs again for
    job-identity's hint)."""
    cache: dict[frozenset[tuple[str, str]], dict[tuple[str, str], tuple[str, ...]]] = {}

    def needers(wanted: Collection[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, ...]]:
        key = frozenset(wanted)
        if key and key not in cache:
            cache[key] = symbols_needing(wheel, key)
        return cache.get(key, {})

    return needers


def symbols_needing(
    wheel: WheelHandle, wanted: Collection[tuple[str, str]]
) -> dict[tuple[str, str], tuple[str, ...]]:
    """(member, symbol version) -> the sorted names of the member's imports bound to that version,
    for each pair of ``wanted`` found; empty when the members cannot be read."""
    from buildkit.inspect.symtab import wheel_symbol_tables  # the streaming reader: only when asked

    members = {member for member, _ in wanted}
    try:
        tables = wheel_symbol_tables(wheel, members.__contains__, keep_exported=lambda _name: False)
    except (OSError, WheelReadError):
        return {}
    found: dict[tuple[str, str], set[str]] = {}
    for member, table in tables.tables.items():
        for imp in table.imported:
            if imp.version is not None and (member, imp.version) in wanted:
                found.setdefault((member, imp.version), set()).add(imp.name)
    return {key: tuple(sorted(names)) for key, names in found.items()}
