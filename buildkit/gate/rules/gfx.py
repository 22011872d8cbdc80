"""The ``gfx-arch`` rule: with requested archs, every HIP host object carries code for each of them
(standalone code objects together), and nothing unrequested or narrower than requested goes unnoticed."""

from __future__ import annotations

from collections.abc import Iterator

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule

GFX_ARCH = Rule(
    "gfx-arch",
    ("error", "warning"),
    checks=(
        "With `--archs`/the job's archs: error when a HIP host object's offload bundles lack a "
        "requested target (standalone code objects must cover it together), or the wheel has no "
        "GPU code at all; warning when a target is present only in a narrower mode than requested"
        " (`gfx90a:xnack-` for `gfx90a`), or a target is present that was not requested. "
        "Processors match alone, and target-id features too with `--match-features`."
    ),
    prevents=(
        "A GPU arch missing: on that GPU the extension has no code to run and the kernel launch "
        "fails with `hipErrorNoBinaryForGpu`."
    ),
)

RULES = (GFX_ARCH,)


def check(facts: Facts) -> Iterator[Finding]:
    config, gfx = facts.config, facts.gfx
    if not config.archs:
        return
    # HIP host objects: each must carry every requested arch. Standalone code objects each hold one
    # target, so together they must cover the request.
    groups: list[tuple[str, tuple[str, ...]]] = [(g.file, g.targets) for g in gfx if g.kind == "bundle"]
    standalone = [g for g in gfx if g.kind == "code-object"]
    if standalone:
        union = tuple(sorted({t for g in standalone for t in g.targets}))
        groups.append((f"{len(standalone)} standalone code object(s)", union))
    if not groups:
        yield GFX_ARCH.error(
            f"archs {', '.join(config.archs)} requested but the wheel has no HIP object or code object"
        )
        return
    for where, targets in groups:
        member = where if not where.endswith("code object(s)") else None
        for want in config.archs:
            same = [t for t in targets if _matches(want, t, config.match_features)]
            if same and all(_narrower(want, t) for t in same):
                yield GFX_ARCH.warning(
                    f"{where} has {want} only as {', '.join(same)}: that code loads only in that "
                    f"mode, not wherever {want} is asked for",
                    file=member,
                    symbol=want,
                )
            if not same:
                yield GFX_ARCH.error(
                    f"{where} lacks code for requested arch {want} (has {', '.join(targets) or 'none'})",
                    file=member,
                    symbol=want,
                )
        for t in targets:
            if not any(_matches(want, t, config.match_features) for want in config.archs):
                yield GFX_ARCH.warning(f"{where} carries {t}, which was not requested", file=member, symbol=t)


def split_target(target_id: str) -> tuple[str, frozenset[str]]:
    """``gfx90a:xnack-`` -> ``("gfx90a", frozenset({"xnack-"}))``."""
    name, *features = target_id.split(":")
    return name, frozenset(features)


def _matches(requested: str, present: str, features: bool) -> bool:
    """Same processor and no contradicting feature (``xnack-`` code never serves ``xnack+``);
    with ``features``, exactly the same target-id features."""
    rname, rfeat = split_target(requested)
    pname, pfeat = split_target(present)
    if rname != pname:
        return False
    if features:
        return rfeat == pfeat
    flipped = {f[:-1] + ("-" if f.endswith("+") else "+") for f in rfeat}
    return not pfeat & flipped


def _narrower(requested: str, present: str) -> bool:
    """``present`` runs in fewer modes than ``requested`` asks for: ``gfx90a:xnack-`` code for a
    ``gfx90a`` request (any xnack mode), or ``xnack-`` code for an ``xnack+`` request."""
    _rname, rfeat = split_target(requested)
    _pname, pfeat = split_target(present)
    return not pfeat <= rfeat
