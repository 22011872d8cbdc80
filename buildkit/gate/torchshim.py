"""A wheel built on the libtorch stable ABI, judged: the ``torch-stable-abi`` rule's facts.

A stable-ABI torch extension loads under every torch from its declared lowest one on when all it needs
from torch is torch's stable C shim, each function already in that torch. :func:`judge_stable`
decides it from the symbols the wheel needs from torch (:class:`~buildkit.gate.torchabi.TorchNeeds`)
and the table of shim functions with the release each appeared in (:func:`shim_table`:
``torch_shim.json``, made from real torch wheels by :mod:`buildkit.compare.torch_shim`); the reasons
a symbol is refused (``cxx``, ``newer``, ``not-shim``) are those of docs/GATE-RULES.md. The wheel
serves torch from the newest release its shim functions need, with no upper bound
(:attr:`StableAbiResult.serves`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from buildkit.gate.demangle import demangle
from buildkit.gate.torchabi import Needed, TorchNeeds, torch_owned
from buildkit.records import Key, json_shape

if TYPE_CHECKING:
    from buildkit.gate.torchabi import TorchExports

#: the table of shim functions (package data; :mod:`buildkit.compare.torch_shim` regenerates it)
TABLE_PATH = Path(__file__).with_name("torch_shim.json")
#: the release recorded for a function declared outside any version block: torch versions its shim
#: from 2.10 on, so such a function was in a release before 2.10
UNVERSIONED = "2.9"
_SHIM_PREFIXES = ("aoti_torch_", "torch_")
Refusal = Literal["newer", "cxx", "not-shim"]


def version_key(version: str) -> tuple[int, ...]:
    """``"2.10"`` -> ``(2, 10)``."""
    return tuple(int(p) for p in version.split("."))


@dataclass(frozen=True)
class ShimTable:
    functions: dict[str, str]  # function -> the torch release it appeared in ("2.13")
    source: dict[str, object]

    @property
    def wheels(self) -> str:
        """The torch wheels the table was made from: ``2.13.0+cpu, 2.14.1+cu130``."""
        records = self.source.get("wheels")
        if not isinstance(records, list):
            return "(unknown)"
        return ", ".join(str(r.get("version")) for r in records if isinstance(r, dict))


@functools.cache
def shim_table(path: Path = TABLE_PATH) -> ShimTable:
    """The table of shim functions and the torch release each appeared in."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return ShimTable(functions=dict(data["functions"]), source=dict(data["source"]))


@json_shape(Key("symbol", "symbol.name"), "demangled", Key("member", "symbol.member"), "reason", "detail")
@dataclass(frozen=True)
class StableRefused:
    symbol: Needed
    demangled: str
    reason: Refusal
    detail: str


@json_shape(
    "lowest",
    Key("serves", "serves"),
    Key("shim", convert=lambda shim: {n.name: v for n, v in shim}),
    "refused",
    Key("left_to_other_libraries", "others", convert=lambda others: sorted({n.name for n in others})),
    "table",
)
@dataclass(frozen=True)
class StableAbiResult:
    """A wheel judged as a stable-ABI torch extension whose declared lowest torch is ``lowest``."""

    lowest: str  # "2.10"
    linking: tuple[str, ...]
    shim: tuple[tuple[Needed, str], ...]  # each shim function needed, with the release it appeared in
    refused: tuple[StableRefused, ...]
    others: tuple[Needed, ...]
    table: str  # the torch wheels the table was made from

    @property
    def newest(self) -> tuple[str, str] | None:
        """The needed shim function that appeared last, with its release (None: none needed)."""
        if not self.shim:
            return None
        need, version = max(self.shim, key=lambda s: (version_key(s[1]), s[0].name))
        return need.name, version

    @property
    def serves(self) -> str | None:
        """The torch range the wheel serves (``torch>=2.10``); None when a refusal voids the claim."""
        if self.refused:
            return None
        newest = self.newest
        floor = max(self.lowest, newest[1], key=version_key) if newest else self.lowest
        return f"torch>={floor}"


def judge_stable(
    needs: TorchNeeds, lowest: str, table: ShimTable, torch: TorchExports | None = None
) -> StableAbiResult:
    """What ``needs`` (a wheel's needs from torch) says of its claim to serve every torch from
    ``lowest`` on, by ``table``; ``torch``: the torch it was built against, whose exports tell
    torch's names from other libraries' (without it, the names alone)."""
    shim: list[tuple[Needed, str]] = []
    refused: list[StableRefused] = []
    others: list[Needed] = []
    exports = torch.exports if torch is not None else frozenset()
    for need in needs.symbols:
        name = need.name
        since = table.functions.get(name)
        if since is not None:
            shim.append((need, since))
            if version_key(since) > version_key(lowest):
                refused.append(
                    StableRefused(
                        need,
                        name,
                        "newer",
                        f"the shim function {name} appeared in torch {since}, after the declared lowest "
                        f"torch {lowest}: build with TORCH_TARGET_VERSION of torch {lowest}, or declare "
                        f"from: {since!r}",
                    )
                )
        elif torch_owned(name) or (name.startswith("_Z") and name in exports):
            text = demangle(name)
            refused.append(
                StableRefused(
                    need,
                    text,
                    "cxx",
                    f"a libtorch C++ symbol ({text}): its ABI is one torch release's; use the stable "
                    "API (torch/csrc/stable, torch/headeronly) and build with -DTORCH_STABLE_ONLY",
                )
            )
        elif name.startswith(_SHIM_PREFIXES) or name in exports:
            refused.append(
                StableRefused(
                    need,
                    name,
                    "not-shim",
                    f"{name} is torch's but not a function of its stable C shim (table of torch "
                    f"{table.wheels})",
                )
            )
        else:
            others.append(need)
    return StableAbiResult(lowest, needs.linking, tuple(shim), tuple(refused), tuple(others), table.wheels)


def summary_line(result: StableAbiResult) -> str:
    """The report's line: what the wheel needs from torch's shim and the torch range it serves."""
    head = f"declared lowest torch {result.lowest}"
    if not result.linking:
        return f"{head}: the wheel needs nothing from torch (no ELF member links a torch library)"
    counts = f"{len(result.shim)} shim function(s) needed"
    newest = result.newest
    if newest is not None:
        counts += f", the newest from torch {newest[1]} ({newest[0]})"
    if result.refused:
        return f"{head}: {counts}; {len(result.refused)} REFUSED: serves no torch range"
    return f"{head}: {counts}; serves {result.serves} (no upper bound)"
