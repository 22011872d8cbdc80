"""The ``rocm-pip-*`` rules: a wheel whose ROCm comes from pip (the recipe's ``rocm: {from: pip}``)
gets every ROCm library it needs from a declared ``Requires-Dist`` at the pinned release, reached
through its own RPATH as ld.so would, and a device package exists for each of its targets.

The facts are the pinned release's wheels and the other releases known (:mod:`buildkit.gate.sdk`,
gathered by :mod:`buildkit.judge.rocm_pip` from the build's lock or the index); nothing here reads a
file or the network.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule
from buildkit.gate.sdk import (
    SELECTOR,
    RocmFromPip,
    admitted,
    installed_closure,
    provider,
    sdk_requirements,
    search_entries,
)
from buildkit.inspect.models import ElfInfo

if TYPE_CHECKING:
    from packaging.requirements import Requirement

PROVIDED = Rule(
    "rocm-pip-provided",
    ("error",),
    checks=(
        "With ROCm from pip, every ROCm library a host ELF needs is found, through that ELF's own "
        "RUNPATH/RPATH `$ORIGIN` entries as ld.so searches them, in a wheel of the pinned SDK release "
        "that the wheel's `Requires-Dist` installs (`_rocm_sdk_core/lib/libamdhip64.so.7` of "
        "`rocm-sdk-core`); the report names the dependency that provides each library."
    ),
    prevents=(
        "`libamdhip64.so.7: cannot open shared object file` on import where ROCm is only the pip "
        "dependency: an RPATH that misses `_rocm_sdk_core/lib`, or a library no SDK wheel ships."
    ),
)
DECLARED = Rule(
    "rocm-pip-declared",
    ("error",),
    checks=(
        "With ROCm from pip, the wheel declares `Requires-Dist` on `rocm` (with the extras it needs, "
        "`rocm[libraries]`) admitting the pinned release, and that requirement installs the SDK "
        "wheel each needed library comes from."
    ),
    prevents=(
        "A wheel that imports only where someone happened to install the right ROCm wheels: pip "
        "never installs its runtime, or installs a release it was not built against."
    ),
)
RANGE = Rule(
    "rocm-pip-range",
    ("error",),
    checks=(
        "With ROCm from pip, no release the `Requires-Dist` admits (the index's, and buildkit's ROCm "
        "data) ships another SONAME of a library the wheel needs: `rocm[libraries]>=7.2` admitting a "
        "release with `libamdhip64.so.10` fails, naming both."
    ),
    prevents=(
        "A later `pip install` resolving a newer ROCm release whose SONAMEs differ: the wheel stops "
        "loading although its requirement is satisfied."
    ),
)
DEVICE = Rule(
    "rocm-pip-device",
    ("error",),
    checks=(
        "With ROCm from pip, the pinned release has a device package (`rocm-sdk-device-gfx942`) for "
        "each gfx target of the job."
    ),
    prevents=(
        "A wheel built for a target whose ROCm kernels (rocBLAS, MIOpen...) the SDK does not ship: it "
        "installs, then fails on that GPU."
    ),
)

RULES = (PROVIDED, DECLARED, RANGE, DEVICE)


def _rocm_needs(facts: Facts, pip: RocmFromPip) -> list[tuple[ElfInfo, str]]:
    """(ELF, needed name) of each ROCm library the wheel does not find inside itself."""
    bases = set(pip.release.sonames()) | set(facts.config.rocm_sonames)
    for other in pip.others:
        bases |= set(other.sonames)
    out = []
    for elf in facts.host:
        for name in elf.needed:
            if facts.resolution.provider(elf.member, name) is not None:
                continue
            if pip.release.holders(name) or name.partition(".so")[0] in bases:
                out.append((elf, name))
    return out


def check(facts: Facts) -> Iterator[Finding]:
    pip = facts.config.rocm_pip
    if pip is None:
        return
    release = pip.release
    requirements = sdk_requirements(facts.report.metadata_requires, release)
    declared = ", ".join(str(r) for r in requirements) or "none"
    needs = _rocm_needs(facts, pip)
    if needs and not requirements:
        yield DECLARED.error(
            f"the wheel needs ROCm libraries ({', '.join(sorted({n for _, n in needs}))}) but declares no "
            f"Requires-Dist on {SELECTOR}: add {pip.requirement}",
        )
    for req in requirements:
        if not admitted(req, release.version):
            yield DECLARED.error(
                f"Requires-Dist {req} does not admit the pinned ROCm release {release.version} "
                f"(the recipe's {pip.requirement})"
            )
    installed = installed_closure(requirements, release)
    for elf, name in needs:
        found = provider(elf, name, release, installed)
        if found is not None:
            continue
        yield from _unprovided(elf, name, pip, installed, declared)
    yield from _ranges(requirements, needs, pip)
    for target in facts.config.archs:
        processor = target.split(":")[0]
        if processor not in release.devices():
            have = ", ".join(f"rocm-sdk-device-{t}" for t in release.devices()) or "none"
            yield DEVICE.error(
                f"job target {target}: ROCm {release.version} has no rocm-sdk-device-{processor} "
                f"({release.source or 'the SDK'} has {have})"
            )


def _unprovided(
    elf: ElfInfo, name: str, pip: RocmFromPip, installed: dict[str, str], declared: str
) -> Iterator[Finding]:
    release = pip.release
    entries = search_entries(elf)
    reach = ", ".join(f"{e} -> {d}" for e, d in entries) or "no $ORIGIN entry"
    holders = release.holders(name)
    if not holders:
        yield PROVIDED.error(
            f"{elf.member} needs {name}, which no wheel of ROCm {release.version} provides "
            f"({', '.join(sorted(release.wheels))})",
            file=elf.member,
            library=name,
        )
        return
    folders = {d for _, d in entries}
    for dist, path in holders:
        folder = path.rpartition("/")[0]
        if folder in folders and dist not in installed:
            yield DECLARED.error(
                f"{elf.member} needs {name} from {dist} {release.version} ({path}), which its "
                f"Requires-Dist ({declared}) does not install: require {pip.requirement}",
                file=elf.member,
                library=name,
            )
            return
    where = "; ".join(f"{dist} {release.version} has it at {path}" for dist, path in holders)
    yield PROVIDED.error(
        f"{elf.member} needs {name}: {where}, which its search path does not reach ({reach})",
        file=elf.member,
        library=name,
    )


def _ranges(
    requirements: list[Requirement], needs: list[tuple[ElfInfo, str]], pip: RocmFromPip
) -> Iterator[Finding]:
    needed = {name.partition(".so")[0]: name for _, name in needs}
    for req in requirements:
        for other in pip.others:
            if other.version == pip.release.version or not admitted(req, other.version):
                continue
            differ = [
                (needed[base], other.sonames[base])
                for base in sorted(needed)
                if base in other.sonames and other.sonames[base] != needed[base]
            ]
            if differ:
                pairs = ", ".join(f"{mine} vs {theirs}" for mine, theirs in differ)
                yield RANGE.error(
                    f"Requires-Dist {req} admits ROCm {other.version} ({other.source}), whose SONAMEs "
                    f"differ from the pinned {pip.release.version}'s the wheel links: {pairs}; "
                    f"pin it as {pip.requirement}",
                    library=differ[0][0],
                )
