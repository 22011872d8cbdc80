"""What the gate judges beside the inspection, streamed from the wheel's open file (a
:class:`~buildkit.inspect.wheel.WheelHandle`, or a path opened for the call), nothing extracted: the
symbols a wheel needs from torch (:func:`torch_needs`) and the host symbols a ``py3-none``/``abi3``
claim is judged on (:func:`python_abi_for`). The readers load only when a configuration asks."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from buildkit.inspect.models import WheelReport

if TYPE_CHECKING:
    from buildkit.gate.pyabi import PythonAbiResult
    from buildkit.gate.torchabi import TorchNeeds
    from buildkit.inspect.wheel import WheelHandle


def torch_needs(
    wheel: str | os.PathLike[str] | WheelHandle, report: WheelReport, extra_torch: Iterable[str] = ()
) -> TorchNeeds:
    """What ``wheel`` (inspected as ``report``) needs from torch (conditions 1-4 of
    :mod:`buildkit.gate.torchabi`): its members linking a torch library are read whole (their
    dynamic symbol tables), the other ELF members only for exports of the names those need."""
    # the streaming reader and the torch-abi module: only when a torch is asked for (start-up)
    from buildkit.gate.torchabi import Needed, TorchNeeds, is_torch_library
    from buildkit.inspect.symtab import wheel_symbol_tables

    also = set(extra_torch)
    linking = {e.member: tuple(n for n in e.needed if is_torch_library(n, also)) for e in report.elves}
    linking = {m: links for m, links in linking.items() if links}
    if not linking:
        return TorchNeeds()
    first = wheel_symbol_tables(wheel, lambda n: n in linking)
    raw: list[Needed] = []
    for member, table in first.tables.items():
        for imp in table.imported:
            if imp.weak or (imp.version is not None and not is_torch_library(imp.library or "", also)):
                continue
            raw.append(Needed(imp.name, member, linking[member]))
    wanted = {n.name for n in raw}
    defined = {name for t in first.tables.values() for name in t.exported if name in wanted}
    others = {e.member for e in report.elves} - set(linking)
    if others and wanted:
        rest = wheel_symbol_tables(
            wheel, lambda n: n in others, keep_exported=wanted.__contains__, imports=False
        )
        defined |= {name for t in rest.tables.values() for name in t.exported}
    kept = sorted(
        {(n.member, n.name): n for n in raw if n.name not in defined}.values(),
        key=lambda n: (n.member, n.name),
    )
    return TorchNeeds(tuple(sorted(linking)), tuple(kept))


def python_abi_for(
    wheel: str | os.PathLike[str] | WheelHandle, report: WheelReport, claim: str
) -> PythonAbiResult:
    """``wheel`` (inspected as ``report``) judged against the tag claim ``claim`` (``py3-none``,
    ``cp312-abi3``): its host ELFs' dynamic symbols (for ``py3-none`` only the ``PyInit_*`` exports)
    read and handed to :func:`~buildkit.gate.pyabi.judge_python_abi`. A member that cannot be read is
    a :class:`~buildkit.errors.WheelReadError` (exit 6), as for the inspection."""
    # the streaming reader and abi3audit: only for such a claim (start-up)
    from buildkit.gate.pyabi import abi3_floor, judge_python_abi
    from buildkit.inspect.symtab import wheel_symbol_tables

    elves = {e.member for e in report.elves}
    if abi3_floor(claim) is None:
        tables = wheel_symbol_tables(
            wheel, elves.__contains__, keep_exported=lambda n: n.startswith("PyInit_"), imports=False
        )
    else:
        tables = wheel_symbol_tables(wheel, elves.__contains__)
    symbols = {m: (t.exported, {i.name for i in t.imported}) for m, t in tables.tables.items()}
    return judge_python_abi(claim, symbols)
