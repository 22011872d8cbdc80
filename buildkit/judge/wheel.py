"""One judgement of a wheel file: opened once (:func:`~buildkit.inspect.wheel.open_wheel`), inspected
in one streaming pass, then, from the same open file and only when the configuration asks, its needs
from torch (read once for ``torch-abi`` and ``torch-stable-abi``) and a ``py3-none``/``abi3`` claim's
host symbols (:mod:`~buildkit.judge.readers`), and evaluated. A torch's exports are the caller's to
read (:func:`buildkit.compare.torch_exports.load_torch_exports`, once for many wheels). Light for
``check``'s start-up: the torch and abi3 modules load only when asked for."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from buildkit.errors import WheelReadError
from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.gate.report import ReadFailure
from buildkit.gate.verdict import Verdict
from buildkit.inspect.models import WheelReport
from buildkit.inspect.wheel import inspect_wheel, open_wheel
from buildkit.judge.readers import python_abi_for, torch_needs

if TYPE_CHECKING:
    from buildkit.gate.torchabi import TorchExports


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
    verdict = evaluate(report, config, torch_abi=torch_abi, python_abi=python_abi, torch_stable=stable)
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
