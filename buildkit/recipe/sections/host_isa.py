"""The recipe's ``host_isa:``: the x86-64 level of the wheel's host code, held at build time by the
build's compiler launcher (``buildkit/building/hip_launcher.sh``): a compile asking for more is refused
(or, with ``rewrite: true``, rewritten to the level), except for the sources ``allow`` names.
``report``/``strict``: the gate's static report of the levels the host code's instructions use (the
``host-isa`` rule; ``strict`` refuses an instruction above the level)."""

from __future__ import annotations

from dataclasses import dataclass

from buildkit.recipe.section import Context, Section


@dataclass(frozen=True)
class HostIsa:
    level: str = "x86-64"
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
        str(data.get("level", "x86-64")),
        bool(data.get("rewrite", False)),
        tuple(data.get("allow", ())),
        report=bool(data.get("report", False)),
        strict=bool(data.get("strict", False)),
    )


SECTION = Section("host_isa", ("host_isa",), _parse_host_isa, "host_isa")
