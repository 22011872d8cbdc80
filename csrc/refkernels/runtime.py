"""Which AMD GPUs this machine has, asked of ROCm's command-line tools.

:func:`get_gfx_runtime` runs ``rocminfo`` (gfx name and compute-unit count of every GPU
agent), else ``rocm_agent_enumerator`` (gfx names only; ``cu_num`` unknown), whichever is
found on ``PATH`` first in that order. It never raises: when no tool is found, the tool fails,
or it lists no GPU agent, the result has ``available=False`` and ``reason`` says why.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["GfxAgent", "GfxRuntime", "get_gfx_runtime", "parse_rocm_agent_enumerator", "parse_rocminfo"]

TIMEOUT_S = 30.0
_HOST_AGENT = "gfx000"  # rocm_agent_enumerator lists the CPU as gfx000
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # rocminfo colours its error messages


@dataclass(frozen=True)
class GfxAgent:
    """One GPU agent: its gfx target (features stripped by the tools) and CU count if known."""

    gfx: str
    cu_num: int | None


@dataclass(frozen=True)
class GfxRuntime:
    """The GPUs found at run time. ``available`` is False, with a ``reason``, when there are none."""

    available: bool
    agents: tuple[GfxAgent, ...]
    source: str | None  # the tool that answered: "rocminfo", "rocm_agent_enumerator" or None
    reason: str

    @property
    def gfx_archs(self) -> tuple[str, ...]:
        """Distinct gfx names, in agent order."""
        return tuple(dict.fromkeys(agent.gfx for agent in self.agents))

    def __bool__(self) -> bool:
        return self.available


def parse_rocminfo(text: str) -> list[GfxAgent]:
    """GPU agents from ``rocminfo`` output (agents whose Device Type is GPU)."""
    agents = []
    for block in re.split(r"\n\*{5,}\s*\n", text):
        if not re.search(r"^\s*Device Type:\s*GPU\s*$", block, re.MULTILINE):
            continue
        name = re.search(r"^\s*Name:\s*(gfx[0-9a-z-]+)\s*$", block, re.MULTILINE)
        if name is None:
            continue
        cus = re.search(r"^\s*Compute Unit:\s*(\d+)\s*$", block, re.MULTILINE)
        agents.append(GfxAgent(name.group(1), int(cus.group(1)) if cus else None))
    return agents


def parse_rocm_agent_enumerator(text: str) -> list[GfxAgent]:
    """GPU agents from ``rocm_agent_enumerator`` output (one gfx name per line, gfx000 = CPU)."""
    names = [line.strip() for line in text.splitlines()]
    return [GfxAgent(name, None) for name in names if name.startswith("gfx") and name != _HOST_AGENT]


def _run(argv: Sequence[str]) -> tuple[str | None, str]:
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=TIMEOUT_S, check=False, errors="replace"
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{argv[0]} could not run: {exc}"
    if done.returncode != 0:
        tail = _ANSI.sub("", done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        return None, f"{argv[0]} exited with status {done.returncode}: {tail[0]}"
    return done.stdout, ""


def get_gfx_runtime(path: str | None = None) -> GfxRuntime:
    """The AMD GPUs visible now. ``path`` replaces ``PATH`` for finding the tools (tests)."""
    problems = []
    tools = (("rocminfo", parse_rocminfo), ("rocm_agent_enumerator", parse_rocm_agent_enumerator))
    for tool, parse in tools:
        exe = shutil.which(tool, path=path)
        if exe is None:
            continue
        output, problem = _run([exe])
        if output is None:
            problems.append(problem)
            continue
        agents = tuple(parse(output))
        if agents:
            return GfxRuntime(True, agents, tool, f"{len(agents)} GPU agent(s) reported by {tool}")
        problems.append(f"{tool} reported no GPU agent")
    if not problems:
        reason = "no AMD GPU: neither rocminfo nor rocm_agent_enumerator is on PATH"
    else:
        reason = "no AMD GPU: " + "; ".join(problems)
    return GfxRuntime(False, (), None, reason)
