"""One judgement of a wheel file: opened once, inspected, read again from the same open file only
for what the configuration asks (:func:`torch_needs`, :func:`python_abi_for`), then evaluated. Light
for ``check``'s start-up: the symbol-table reader, the torch and abi3 modules load only when asked for."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from buildkit.errors import WheelReadError
from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.gate.report import ReadFailure
from buildkit.gate.verdict import Verdict
from buildkit.inspect.models import WheelReport
from buildkit.inspect.wheel import WheelHandle, inspect_wheel, open_wheel
from buildkit.judge.needers import reader

if TYPE_CHECKING:
    from buildkit.gate.pyabi import PythonAbiResult
    from buildkit.gate.torchabi import TorchExports, TorchNeeds


class Judgement(NamedTuple):
    """The inspection of one wheel and the gate's verdict on it."""

    report: WheelReport
    verdict: Verdict


def judge_wheel(
    path: str | os.PathLike[str],
    config: GateConfig,
    *,
    torch: TorchExports | None = None,
    verify_record: bool = True,
) -> Judgement:
    """``path`` inspected and gated with ``config`` (module docstring), its file opened once;
    ``torch``: the exports the ``torch-abi`` rule judges the wheel against (None: not judged). A
    wheel that cannot be read is a :class:`~buildkit.errors.WheelReadError` naming it (exit 6)."""
    with open_wheel(path) as wheel:
        report = inspect_wheel(wheel, verify_record=verify_record)
        torch_abi = stable = None
        if torch is not None or config.torch_stable is not None:
            # the torch modules load only when a torch or a stable-ABI range is asked for (start-up)
            from buildkit.gate.torchabi import judge
            from buildkit.gate.torchshim import judge_stable, shim_table

            needs = torch_needs(wheel, report, extra_torch=torch.names() if torch is not None else ())
            torch_abi = judge(needs, torch) if torch is not None else None
            if config.torch_stable is not None:
                stable = judge_stable(needs, config.torch_stable, shim_table(), torch)
        claim = config.identity.wheel_tag if config.identity is not None else None  # py3-none, abi3
        python_abi = python_abi_for(wheel, report, claim) if claim is not None else None
        host_isa = None
        if config.isa_scan:
            from buildkit.inspect.isa import host_isa_of  # the disassembler only when asked (start-up time)

            host_isa = host_isa_of(wheel.zip, report, True)
        verdict = evaluate(report, config, torch_abi=torch_abi, python_abi=python_abi, torch_stable=stable,
                           host_isa=host_isa, needers=reader(wheel))  # fmt: skip
    return Judgement(report, verdict)


def judge_wheels(
    paths: Sequence[str | os.PathLike[str]],
    config: GateConfig,
    *,
    torch: TorchExports | None = None,
    verify_record: bool = True,
) -> tuple[list[Verdict], list[ReadFailure]]:
    """Each wheel judged (:func:`judge_wheel`, the same ``torch`` for all); one that cannot be read
    becomes a :class:`~buildkit.gate.report.ReadFailure` and the rest go on."""
    verdicts: list[Verdict] = []
    failures: list[ReadFailure] = []
    for path in paths:
        try:
            verdicts.append(judge_wheel(path, config, torch=torch, verify_record=verify_record).verdict)
        except WheelReadError as exc:
            # the message names the wheel (inspect_wheel's rule); the report names it on its own
            name = os.path.basename(path)
            failures.append(ReadFailure(name, str(exc).removeprefix(f"{name}: ")))
    return verdicts, failures


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
