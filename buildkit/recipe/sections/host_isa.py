"""The recipe's ``host_isa:``: the x86-64 level of the wheel's host code, held at build time by the
build's compiler launcher (``buildkit/building/hip_launcher.sh``), and the gate's ``host-isa``
report (``report``/``strict``); docs/REFERENCE.md, "Every recipe key".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from buildkit.recipe.section import Context, Section

#: the policy's baseline (x86-64, v1, for every manylinux and musllinux policy): the level an x86_64
#: build holds when its recipe has no ``host_isa`` (``cibw.container_environment``)
BASELINE = "x86-64"
#: where the launcher appends the ISA flags of each compile (one ``ACTION FLAG [TO]`` a line), in the
#: build container's output folder, which cibuildwheel copies out beside the wheel (``--out`` never
#: gets it: the record step reads it into the manifest's ``host_isa``, :func:`summary`)
LOG_NAME = "buildkit-host-isa.log"


@dataclass(frozen=True)
class HostIsa:
    level: str = BASELINE
    rewrite: bool = False
    allow: tuple[str, ...] = ()
    report: bool = False
    strict: bool = False

    def environment(self) -> dict[str, str]:
        """What the launcher reads (``BUILDKIT_HOST_ISA``, ``_REWRITE``, ``_ALLOW``)."""
        env = {"BUILDKIT_HOST_ISA": self.level}
        if self.rewrite:
            env["BUILDKIT_HOST_ISA_REWRITE"] = "1"
        if self.allow:
            env["BUILDKIT_HOST_ISA_ALLOW"] = " ".join(self.allow)
        return env


def _parse_host_isa(ctx: Context) -> HostIsa | None:
    data = ctx.data.get("host_isa")
    if data is None:
        return None
    return HostIsa(
        str(data.get("level", BASELINE)),
        bool(data.get("rewrite", False)),
        tuple(data.get("allow", ())),
        report=bool(data.get("report", False)),
        strict=bool(data.get("strict", False)),
    )


def summary(log: str | None, level: str | None) -> dict[str, Any]:
    """The manifest's ``host_isa`` (docs/REFERENCE.md, "Host CPU baseline"): the ``level`` the build held
    (None: not an x86_64 build) and what the launcher's log (:data:`LOG_NAME`) says, sorted, each once.
    """
    seen: set[str] = set()
    rewritten: set[str] = set()
    allowed: set[str] = set()
    for line in (log or "").splitlines():
        action, _, rest = line.partition(" ")
        flag, _, to = rest.partition(" ")
        if not flag:
            continue
        seen.add(flag)
        if action in ("rewrote", "dropped"):
            rewritten.add(f"{flag} -> {to or '(dropped)'}")
        elif action == "allowed":
            allowed.add(flag)
    return {
        "level": level,
        "flags_seen": sorted(seen),
        "rewritten": sorted(rewritten),
        "allowed": sorted(allowed),
    }


SECTION = Section("host_isa", ("host_isa",), _parse_host_isa, "host_isa")
