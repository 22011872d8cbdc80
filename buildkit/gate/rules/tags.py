"""The platform rules: the file name is a wheel name, the host code is one architecture and one libc
that auditwheel's policies cover, the configured policy fits it, and every manylinux/musllinux tag the
file name claims holds for its symbol versions and libraries.

The facts come from :func:`buildkit.gate.facts.gather`; this module words what they show.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from buildkit.gate.facts import Facts, needs
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule
from buildkit.gate.verdict import prefix_order
from buildkit.inspect.models import ElfInfo
from buildkit.policy import Libc, Policy, split_symbol_version, symbol_version_key

WHEEL_NAME = Rule(
    "wheel-name",
    ("error",),
    checks=(
        "The file name parses as a wheel file name "
        "(`name-version[-build]-python-abi-platform.whl`, via "
        "`packaging.utils.parse_wheel_filename`)."
    ),
    prevents='pip refuses the file ("Invalid wheel filename"), and no platform rule can judge it.',
    never_waived="no installer accepts such a file: fix the name the build gives the wheel",
)

ELF_MACHINE = Rule(
    "elf-machine",
    ("error",),
    checks=(
        "Every host ELF is for one architecture that a manylinux/musllinux policy covers, and "
        "that architecture is the one the file name's platform tag names."
    ),
    prevents=(
        "An extension for another CPU (aarch64 code in an `x86_64` wheel, ppc64 big-endian, "
        "several architectures mixed) that pip installs because of the tag and that then fails to"
        " load with an ImportError."
    ),
)

ELF_LIBC = Rule(
    "elf-libc",
    ("error",),
    checks=(
        "Host ELFs do not mix musl (`libc.musl-*`, `ld-musl-*`) and glibc (`libc.so.6`, "
        "`ld-linux*`, `ld64.so.*`) in their DT_NEEDED."
    ),
    prevents=(
        "Half the wheel fails to load on either system: `libc.so.6` not found on Alpine, "
        "`libc.musl-x86_64.so.1` not found on a glibc distro."
    ),
)

POLICY = Rule(
    "policy",
    ("error", "warning"),
    checks=(
        "Error: the configured policy names another architecture (`manylinux_2_28_aarch64` for "
        "x86_64 code) or another libc (a musllinux policy for glibc code) than the wheel's host "
        "code. Warning: auditwheel has no policy that close to the name (older or newer than "
        "every policy it knows), so the wheel is judged by the nearest one."
    ),
    prevents=(
        "Error: the wheel would be held to rules that do not apply to it and pass a gate that "
        "says nothing about where it loads."
    ),
)

PLATFORM_TAG = Rule(
    "platform-tag",
    ("error", "warning"),
    checks=(
        "Error: each manylinux/musllinux tag in the file name is of the ELF code's architecture "
        "and libc, and holds for the wheel: no host ELF requires a symbol version the tag's "
        "policy lacks, and no external or whitelisted DT_NEEDED library is off that policy's "
        "whitelist. Warning: a tag names a policy older or newer than every policy auditwheel "
        "knows (judged by the nearest one)."
    ),
    prevents=(
        "pip installing the wheel on a distro its tag claims but where it cannot load: "
        "ImportError `version 'GLIBC_2.34' not found` on an older distro, a missing library, or "
        "code for another CPU/libc."
    ),
)

RULES = (WHEEL_NAME, ELF_MACHINE, ELF_LIBC, POLICY, PLATFORM_TAG)

_LIBC_NAMES: dict[Libc, str] = {"glibc": "glibc", "musl": "musl libc"}
#: at most this many members are named in a finding about many of them (the rest are counted)
MEMBERS_NAMED = 3


def some(members: Sequence[str]) -> str:
    """``a.so``, ``a.so and b.so``, ``a.so, b.so, c.so and 7 more``: at most :data:`MEMBERS_NAMED`."""
    shown = list(members[:MEMBERS_NAMED])
    rest = len(members) - len(shown)
    if rest:
        return f"{', '.join(shown)} and {rest} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def check(facts: Facts) -> Iterator[Finding]:
    yield from _name_and_machine(facts)
    yield from _libc_and_claims(facts)
    yield from _configured_policy(facts)
    if facts.judged:
        yield from _tag_symbols(facts.host, facts.claimed)
        yield from _tag_libraries(facts)


def _name_and_machine(facts: Facts) -> Iterator[Finding]:
    if facts.name_error is not None:
        yield WHEEL_NAME.error(f"not a valid wheel file name: {facts.name_error}")
    for machine, members in facts.unknown_machines:
        yield ELF_MACHINE.error(
            f"{some(members)} {'is' if len(members) == 1 else 'are'} {machine} machine code, an "
            "architecture no manylinux or musllinux policy covers: no platform tag can be judged",
            file=members[0],
        )
    if len(facts.machines) > 1:
        yield ELF_MACHINE.error(f"host ELF members for several architectures: {', '.join(facts.machines)}")
    e = facts.arch_mismatch
    if e is not None:
        yield ELF_MACHINE.error(
            f"{e.member} is {facts.arch} ({e.machine}) but the wheel is tagged for {facts.tag_arch}",
            file=e.member,
        )


def _libc_and_claims(facts: Facts) -> Iterator[Finding]:
    if facts.mixed_libc is not None:
        musl, glibc = facts.mixed_libc
        yield ELF_LIBC.error(
            f"{some(musl)} link{'s' if len(musl) == 1 else ''} musl libc but {some(glibc)} "
            f"link{'s' if len(glibc) == 1 else ''} glibc: a wheel serves one libc",
            file=musl[0],
        )
    if facts.uncovered:
        yield ELF_MACHINE.error(
            f"auditwheel's {facts.libc} policies do not cover {facts.arch}: no platform tag can be judged",
            file=facts.host[0].member,
        )
    for tag, note in facts.claim_notes:
        yield PLATFORM_TAG.warning(f"file name tag {tag}: {note}")
    if facts.other_arch_tags:
        yield PLATFORM_TAG.error(
            f"file name tag {', '.join(facts.other_arch_tags)} but the ELF code is {facts.arch}"
        )
    if facts.other_libc_tags and facts.libc_known:
        yield PLATFORM_TAG.error(
            f"file name tag {', '.join(facts.other_libc_tags)} but the ELF code links "
            f"{_LIBC_NAMES[facts.libc]}"
        )


def _configured_policy(facts: Facts) -> Iterator[Finding]:
    name = facts.config.policy
    for problem in facts.policy_problems:
        if problem.kind == "arch":
            yield POLICY.error(
                f"policy {name} is for {problem.value}, but the wheel's host code is {facts.arch}"
            )
        elif problem.kind == "libc":
            policy_libc: Libc = "musl" if problem.value == "musl" else "glibc"
            yield POLICY.error(
                f"policy {name} is a {_LIBC_NAMES[policy_libc]} policy, but the wheel's host "
                f"code links {_LIBC_NAMES[facts.libc]}"
            )
        else:
            yield POLICY.warning(f"policy {name}: {problem.value}")


def disallowed(
    host: Sequence[ElfInfo],
    claimed: Sequence[tuple[str, Policy]],
    judged: Callable[[str], bool] = lambda _: True,
) -> list[tuple[str, list[str], dict[str, set[str]]]]:
    """Per library (sorted): the tags some required symbol version breaks (in claim order) and each
    offending version with the members requiring it; ``judged`` filters the versions looked at."""
    tags: dict[str, dict[str, None]] = {}  # library -> tags broken (ordered set)
    users: dict[str, dict[str, set[str]]] = {}  # library -> offending version -> members
    for e in host:
        for lib, versions in sorted(needs(e).items()):
            mine = [sv for sv in versions if judged(sv)]
            for tag, pol in claimed:
                for sv in pol.disallowed(mine):
                    tags.setdefault(lib, {})[tag] = None
                    users.setdefault(lib, {}).setdefault(sv, set()).add(e.member)
    order = [t for t, _ in claimed]
    return [(lib, [t for t in order if t in tags[lib]], users[lib]) for lib in sorted(users)]


def offenders(
    users: Mapping[str, set[str]], disallowing: str = "the tags do not allow"
) -> tuple[list[str], list[str], str]:
    """The highest offending version per prefix (each non-numeric one on its own), the members
    requiring one of them, and a note counting the other offending members."""
    top: dict[str, str] = {}
    for sv in users:
        key = symbol_version_key(sv)
        prefix = split_symbol_version(sv)[0] if key is not None else sv
        if prefix not in top or (key or ()) > (symbol_version_key(top[prefix]) or ()):
            top[prefix] = sv
    highest = [top[p] for p in sorted(top, key=prefix_order)]
    members = sorted({m for sv in highest for m in users[sv]})
    others = len({m for ms in users.values() for m in ms} - set(members))
    more = f" (+{others} other member(s) requiring lower versions {disallowing})" if others else ""
    return highest, members, more


def _tag_symbols(host: Sequence[ElfInfo], claimed: Sequence[tuple[str, Policy]]) -> Iterator[Finding]:
    """Per library: the tags some required symbol version breaks, the highest such version per
    prefix, and the members requiring one of them."""
    for lib, tags, users in disallowed(host, claimed):
        highest, members, more = offenders(users)
        yield PLATFORM_TAG.error(
            f"file name claims {', '.join(tags)} but {some(members)} "
            f"require{'s' if len(members) == 1 else ''} {', '.join(highest)} from {lib}{more}",
            file=members[0],
            library=lib,
            symbol=", ".join(highest),
        )


def _tag_libraries(facts: Facts) -> Iterator[Finding]:
    """Each claimed tag must allow every counted library: one finding per library, naming every tag
    it breaks (not one per tag)."""
    for use in facts.libraries:
        if use.status not in ("external", "whitelisted"):
            continue
        broken = [(tag, pol) for tag, pol in facts.claimed if not pol.allows_library(use.library)]
        if broken:
            policies_named = ", ".join(dict.fromkeys(pol.name for _, pol in broken))
            yield PLATFORM_TAG.error(
                f"file name claims {', '.join(tag for tag, _ in broken)} but {some(use.needed_by)} "
                f"need{'s' if len(use.needed_by) == 1 else ''} {use.library}, not on the whitelist of "
                f"{policies_named}",
                file=use.needed_by[0],
                library=use.library,
            )
