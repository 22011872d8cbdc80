"""The gate on wheel files, as ``build``, ``buildkit check`` (:mod:`buildkit.service.check`) and
``publish`` (:mod:`buildkit.publish.trust`) run it: each wheel inspected (streaming), judged against a
torch's exports (``torch-abi``) and its tag's claim (``py3-none``/``abi3``), and gated.

Light on purpose (``buildkit check``'s start-up, ``tests/unit/test_check_startup.py``): the torch's
exports, the abi3 audit and their dataclasses load only when a configuration asks for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from buildkit.errors import WheelReadError
from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.gate.report import ReadFailure
from buildkit.gate.verdict import Verdict
from buildkit.inspect import inspect_wheel
from buildkit.inspect.models import WheelReport

if TYPE_CHECKING:
    # the torch-abi reader (demangler, symbol tables, export cache) loads only when a torch is asked
    # for: a plain check does not pay for its import
    from buildkit.compare.torch_exports import ImageReader
    from buildkit.gate.pyabi import PythonAbiResult
    from buildkit.gate.torchabi import TorchAbiResult, TorchExports
    from buildkit.gate.torchshim import StableAbiResult


def torch_abi_for(wheel: Path, report: WheelReport, torch: TorchExports) -> TorchAbiResult:
    """``wheel`` (inspected as ``report``) judged against ``torch``: what it needs from torch
    (:func:`~buildkit.gate.torchabi.wheel_torch_needs`, streamed) and what that torch exports."""
    from buildkit.gate.torchabi import judge, wheel_torch_needs

    return judge(wheel_torch_needs(wheel, report, extra_torch=torch.names()), torch)


def torch_stable_of(
    wheel: Path, report: WheelReport, config: GateConfig, torch: TorchExports | None = None
) -> StableAbiResult | None:
    """A stable-ABI wheel's needs from torch (streamed) judged against its declared lowest torch by
    the table of shim functions (:func:`~buildkit.gate.torchshim.judge_stable`; ``torch``: the torch
    checked against, its exports telling torch's names from other libraries'); None for any other."""
    if config.torch_stable is None:
        return None
    from buildkit.gate.torchabi import wheel_torch_needs
    from buildkit.gate.torchshim import judge_stable, shim_table

    needs = wheel_torch_needs(wheel, report, extra_torch=torch.names() if torch is not None else ())
    return judge_stable(needs, config.torch_stable, shim_table(), torch)


def python_abi_of(wheel: Path, report: WheelReport, config: GateConfig) -> PythonAbiResult | None:
    """A Python-independent job's wheel (``py3-none``, ``cp312-abi3``) judged against what its tag
    claims (:func:`~buildkit.gate.pyabi.python_abi_for`, streamed); None for any other configuration."""
    identity = config.identity
    if identity is None or identity.wheel_tag is None:
        return None
    from buildkit.gate.pyabi import python_abi_for  # abi3audit loads only for such a job

    return python_abi_for(wheel, report, identity.wheel_tag)


def check_wheels(
    wheels: Sequence[Path],
    config: GateConfig,
    *,
    verify_record: bool = True,
    image_reader: ImageReader | None = None,
    torch: TorchExports | None = None,
) -> tuple[list[Verdict], list[ReadFailure]]:
    """Inspect and gate each wheel; one that cannot be read becomes a ReadFailure (the rest go on).
    With ``config.torch_abi`` the torch's exports are read once (``torch``, when the caller read
    them already; ``image_reader`` reads an image's,
    :func:`~buildkit.compare.torch_exports.load_torch_exports`) and every wheel is judged against
    them by the ``torch-abi`` rule."""
    if torch is None and config.torch_abi:
        from buildkit.compare.torch_exports import load_torch_exports  # only when a torch is asked for

        torch = load_torch_exports(config.torch_abi, image_reader=image_reader)
    verdicts: list[Verdict] = []
    failures: list[ReadFailure] = []
    for wheel in wheels:
        try:
            report = inspect_wheel(wheel, verify_record=verify_record)
            result = None if torch is None else torch_abi_for(wheel, report, torch)
            python_abi = python_abi_of(wheel, report, config)
            stable = torch_stable_of(wheel, report, config, torch)
        except WheelReadError as exc:
            # the message names the wheel (inspect_wheel's rule); the report names it on its own
            failures.append(ReadFailure(wheel.name, str(exc).removeprefix(f"{wheel.name}: ")))
            continue
        verdicts.append(
            evaluate(report, config, torch_abi=result, python_abi=python_abi, torch_stable=stable)
        )
    return verdicts, failures
