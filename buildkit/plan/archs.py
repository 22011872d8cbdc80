"""GPU arch resolution: which AMDGPU targets a build compiles for, and why (the sources, by
precedence: docs/REFERENCE.md, ``buildkit archs``; the first that yields anything wins, the trail
records every one tried, ``gfx000``, the CPU agent, is ignored).

A set environment variable that loses with another list is warned about (aiter's setup reads
``GPU_ARCHS``, PyTorch's extensions ``PYTORCH_ROCM_ARCH``). Entries are canonical target IDs
(:func:`buildkit.targets.parse_target_id`), deduplicated; a bare processor next to a featured
variant of itself is dropped (clang refuses that combination); sorted by
:func:`buildkit.rocm.processor_sort_key`.

Intersection, in order, each drop recorded with its reason: the pinned ROCm release's ``archs``
(or, when a toolchain is given, the toolchain's compilable archs instead -- a distribution
toolchain such as Debian's 5.7.1 is not AMD's release), then the recipe's allow-list.
Nothing left is an :class:`~buildkit.errors.ArchError` naming what was asked and what is supported.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from buildkit import rocm as rocmdata
from buildkit.errors import ArchError
from buildkit.records import json_shape, to_data
from buildkit.targets import TargetId, parse_target_id, split_arch_list

#: the environment variables that can name archs, by precedence
_ENV_SOURCES = ("PYTORCH_ROCM_ARCH", "GPU_ARCHS")


@json_shape()
@dataclass(frozen=True)
class Decision:
    """What happened to one requested arch."""

    arch: str
    kept: bool
    reason: str

    def __str__(self) -> str:
        return f"{self.arch}: {self.reason}"


@dataclass(frozen=True)
class ArchSet:
    """The resolved archs of one build, with the reasons for each arch kept or dropped."""

    rocm: str
    kept: tuple[TargetId, ...]
    dropped: tuple[Decision, ...]
    source: str
    requested: tuple[str, ...]
    trail: tuple[str, ...]
    decisions: tuple[Decision, ...] = ()
    #: environment variables that were set but lost to a higher-precedence source with another list
    warnings: tuple[str, ...] = ()

    def pytorch_rocm_arch(self) -> str:
        """The kept archs ``;``-joined: PYTORCH_ROCM_ARCH, GPU_ARCHS and CMAKE_HIP_ARCHITECTURES."""
        return ";".join(str(t) for t in self.kept)

    gpu_archs = cmake_hip_architectures = pytorch_rocm_arch

    def offload_arch_flags(self) -> list[str]:
        return [f"--offload-arch={t}" for t in self.kept]

    def exported(self, export: Sequence[tuple[str, str]]) -> dict[str, str]:
        """The kept archs joined for each ``(variable, separator)`` (the recipe's ``archs.export``)."""
        return {name: sep.join(str(t) for t in self.kept) for name, sep in export}

    def to_json(self) -> dict[str, Any]:
        # hand-written, no JsonShape (buildkit/records.py): the exported variables are computed
        return {
            "rocm": self.rocm,
            "source": self.source,
            "requested": list(self.requested),
            "kept": [str(t) for t in self.kept],
            "dropped": to_data(self.dropped),
            "PYTORCH_ROCM_ARCH": self.pytorch_rocm_arch(),
            "GPU_ARCHS": self.gpu_archs(),
            "offload_arch_flags": self.offload_arch_flags(),
            "CMAKE_HIP_ARCHITECTURES": self.cmake_hip_architectures(),
            "trail": list(self.trail),
            "warnings": list(self.warnings),
        }


def host_enumerator() -> list[str]:
    """Run ``rocm_agent_enumerator`` if it is on PATH; [] otherwise or when it fails."""
    exe = shutil.which("rocm_agent_enumerator")
    if exe is None:
        return []
    try:
        out = subprocess.run([exe], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode != 0:
        return []
    return split_arch_list(out.stdout)


def _precedence(name: str) -> str:
    return "the recipe's archs.list" if name == "recipe" else name


def _ignored(
    chosen: str,
    chosen_values: Sequence[str],
    env: Mapping[str, str],
    trail: list[str],
    warnings: list[str],
) -> None:
    """Name every environment variable that is set but loses to ``chosen``; warn when its list
    differs from the chosen one (another tool reading that variable would build other archs)."""
    for var in _ENV_SOURCES:
        if var == chosen or var not in env:
            continue
        values = split_arch_list(env[var])
        if not values:
            continue
        shown = ";".join(values)
        trail.append(f"source {var}={shown}: set but ignored ({_precedence(chosen)} takes precedence)")
        if {v.lower() for v in values} != {v.lower() for v in chosen_values}:
            warnings.append(
                f"{var}={shown}: set but ignored ({_precedence(chosen)} takes precedence: "
                f"{';'.join(chosen_values)})"
            )


def _choose_source(
    cli_archs: str | None,
    recipe_archs: Sequence[str] | None,
    env: Mapping[str, str],
    enumerator: Callable[[], list[str]],
    trail: list[str],
    warnings: list[str],
) -> tuple[str, list[str]]:
    candidates: list[tuple[str, Callable[[], list[str] | None]]] = [
        ("--archs", lambda: split_arch_list(cli_archs) if cli_archs is not None else None),
        ("recipe", lambda: [a for r in recipe_archs for a in split_arch_list(r)] if recipe_archs else None),
        *((var, lambda var=var: split_arch_list(env[var]) if var in env else None) for var in _ENV_SOURCES),
    ]
    for name, get in candidates:
        values = get()
        if values is None:
            trail.append(f"source {name}: not set")
        elif not values:
            trail.append(f"source {name}: set but empty, skipped")
        else:
            trail.append(f"source {name}: {';'.join(values)} (chosen: highest precedence that is set)")
            _ignored(name, values, env, trail, warnings)
            return name, values
    agents = enumerator()
    found = [a for a in agents if a.strip() and a.strip() != "gfx000"]
    if "gfx000" in agents:
        trail.append("source rocm_agent_enumerator: gfx000 (the CPU agent) ignored")
    if found:
        trail.append(f"source rocm_agent_enumerator: {';'.join(found)} (chosen: the GPUs of this host)")
        return "rocm_agent_enumerator", found
    trail.append("source rocm_agent_enumerator: no GPU agent found")
    raise ArchError(
        "no GPU arch requested: pass --archs, list archs in the recipe, set PYTORCH_ROCM_ARCH or "
        "GPU_ARCHS, or run where rocm_agent_enumerator reports a GPU"
    )


def _normalise(
    source: str, values: Sequence[str], trail: list[str], decisions: list[Decision]
) -> list[TargetId]:
    parsed: list[TargetId] = []
    for value in values:
        try:
            target = parse_target_id(value)
        except ArchError as exc:
            raise ArchError(f"{exc} (from {source})") from None
        if str(target) != value:
            trail.append(f"{value}: written canonically as {target}")
        if target in parsed:
            trail.append(f"{target}: listed more than once, kept once")
            continue
        parsed.append(target)
    by_name: dict[str, list[TargetId]] = {}
    for target in parsed:
        by_name.setdefault(target.name, []).append(target)
    result: list[TargetId] = []
    for target in parsed:
        variants = by_name[target.name]
        featured = [v for v in variants if v.features]
        if not target.features and featured:
            decisions.append(
                Decision(
                    str(target),
                    False,
                    f"dropped: listed together with {', '.join(map(str, featured))}; clang rejects a "
                    "processor both with and without target-ID features",
                )
            )
            continue
        keysets = {tuple(f[:-1] for f in v.features) for v in featured}
        if len(keysets) > 1:
            raise ArchError(
                f"conflicting target IDs for {target.name} (from {source}): "
                f"{', '.join(map(str, featured))}; every variant of a processor must name the same "
                "features (e.g. gfx90a:xnack+ and gfx90a:xnack-)"
            )
        result.append(target)
    return sorted(result, key=lambda t: t.sort_key)


def _pinned(rocm: str, toolchain_archs: Sequence[str] | None) -> tuple[rocmdata.RocmRelease | None, str]:
    """The release data and the pinned version; with a toolchain an unknown release is allowed."""
    if toolchain_archs is None:
        release = rocmdata.get_release(rocm)
        return release, release.version
    try:
        release = rocmdata.get_release(rocm)
    except rocmdata.UnknownRelease:
        return None, rocm
    return release, release.version


def _supported(
    release: rocmdata.RocmRelease | None,
    pinned: str,
    toolchain_archs: Sequence[str] | None,
    toolchain: str | None,
    trail: list[str],
) -> tuple[str, ...]:
    """The archs that can be built: the toolchain's (replacing the release's list), else the release's."""
    if toolchain_archs is not None:
        label = toolchain or "the toolchain"
        supported = tuple(sorted(set(toolchain_archs), key=rocmdata.processor_sort_key))
        trail.append(
            f"supported set: {label} (ROCm {pinned}) can compile {len(supported)} processors; "
            "it replaces AMD's release list"
        )
        return supported
    assert release is not None
    trail.append(
        f"supported set: ROCm {pinned} archs (official + rocBLAS kernel targets): {', '.join(release.archs)}"
    )
    trail.extend(f"ROCm {pinned} data marked unverified: {text}" for text in release.unverified)
    return release.archs


def _unsupported_reason(
    target: TargetId,
    release: rocmdata.RocmRelease | None,
    pinned: str,
    toolchain_archs: Sequence[str] | None,
    toolchain: str | None,
) -> str:
    """Why ``target`` is not in the supported set."""
    if toolchain_archs is not None:
        withheld = _toolchain_withheld(toolchain).get(rocmdata.processor_of(str(target)))
        if withheld:
            return f"withheld by toolchain {toolchain} (ROCm {pinned}): {withheld}"
        return f"not compilable by toolchain {toolchain or '?'} (ROCm {pinned})"
    assert release is not None
    first = rocmdata.min_release_for(target.name)
    withheld = release.withheld.get(target.name)
    if first is not None and rocmdata.version_key(first) > rocmdata.version_key(pinned):
        reason = f"needs ROCm >= {first}, pinned {pinned}"
    else:
        reason = f"not supported by ROCm {pinned}"
    return reason + (f" ({withheld})" if withheld else "")


def _allowed(
    kept: list[TargetId], allow: Sequence[str], trail: list[str], decisions: list[Decision]
) -> list[TargetId]:
    """``kept`` intersected with the recipe's allow-list (a bare processor allows its variants)."""
    allowed = [parse_target_id(a) for a in allow]
    trail.append(f"allow-list: {', '.join(map(str, allowed))}")
    still: list[TargetId] = []
    for target in kept:
        if any(a == target or (not a.features and a.name == target.name) for a in allowed):
            still.append(target)
        else:
            decisions.append(
                Decision(
                    str(target),
                    False,
                    f"dropped: not in the recipe's allow-list ({', '.join(map(str, allowed))})",
                )
            )
    return still


def resolve(
    *,
    rocm: str,
    cli_archs: str | None = None,
    recipe_archs: Sequence[str] | None = None,
    allow: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    enumerator: Callable[[], list[str]] | None = None,
    toolchain_archs: Sequence[str] | None = None,
    toolchain: str | None = None,
) -> ArchSet:
    """Resolve the archs of a build pinned to ROCm ``rocm`` (see the module docstring; with
    ``toolchain_archs``, named ``toolchain``, ``rocm`` need not be a known release). ``env`` defaults to
    ``os.environ``; ``enumerator`` to :func:`host_enumerator`."""
    env = os.environ if env is None else env
    enumerator = host_enumerator if enumerator is None else enumerator
    trail: list[str] = []
    warnings: list[str] = []
    decisions: list[Decision] = []

    release, pinned = _pinned(rocm, toolchain_archs)
    source, values = _choose_source(cli_archs, recipe_archs, env, enumerator, trail, warnings)
    targets = _normalise(source, values, trail, decisions)
    supported = _supported(release, pinned, toolchain_archs, toolchain, trail)

    kept: list[TargetId] = []
    for target in targets:
        if target.name in supported:
            kept.append(target)
        else:
            reason = _unsupported_reason(target, release, pinned, toolchain_archs, toolchain)
            decisions.append(Decision(str(target), False, f"dropped: {reason}"))
    if allow:
        kept = _allowed(kept, allow, trail, decisions)

    for target in kept:
        decisions.append(
            Decision(str(target), True, f"kept: supported by {_basis(toolchain_archs, toolchain, pinned)}")
        )
    ordered = sorted(decisions, key=lambda d: (rocmdata.processor_sort_key(d.arch), not d.kept))
    trail.extend(f"{d.arch}: {d.reason}" for d in ordered)
    dropped = tuple(d for d in ordered if not d.kept)

    if not kept:
        why = "; ".join(str(d) for d in dropped)
        raise ArchError(
            f"no GPU arch left for ROCm {pinned}: asked {';'.join(values)} (from {source}); {why}. "
            f"Supported: {', '.join(supported)}"
            + (f"; allowed by the recipe: {', '.join(allow)}" if allow else "")
        )
    return ArchSet(
        rocm=pinned,
        kept=tuple(kept),
        dropped=dropped,
        source=source,
        requested=tuple(values),
        trail=tuple(trail),
        decisions=tuple(ordered),
        warnings=tuple(warnings),
    )


def _toolchain_withheld(toolchain: str | None) -> Mapping[str, str]:
    """The processors ``toolchain`` compiles but buildkit withholds, with the reason ({} if unknown)."""
    if toolchain is None:
        return {}
    try:
        return rocmdata.get_toolchain(toolchain).withheld
    except rocmdata.UnknownToolchain:
        return {}


def _basis(toolchain_archs: Sequence[str] | None, toolchain: str | None, pinned: str) -> str:
    if toolchain_archs is not None:
        return f"toolchain {toolchain or '?'}"
    return f"ROCm {pinned}"
