"""The ``ceiling`` rule: no host ELF requires a symbol version above the ceilings the wheel is held to
(the target policy's numeric GLIBC/GLIBCXX/CXXABI/GCC ceilings, each overridden by a configured one),
and, with a configured policy, none that policy does not allow (other prefixes, non-numeric versions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from buildkit.gate.config import GateConfig
from buildkit.gate.demangle import demangle
from buildkit.gate.facts import Facts, needs
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule
from buildkit.gate.rules.tags import disallowed, offenders, some
from buildkit.policy import (
    Policy,
    best_symbol_policy,
    split_symbol_version,
    symbol_version_key,
    version_tuple,
)

CEILING = Rule(
    "ceiling",
    ("error",),
    checks=(
        "No host ELF requires a numeric symbol version above a ceiling (GLIBC, GLIBCXX, CXXABI, "
        "GCC: the target policy's, each overridden by a `--max-*` flag or the job's ceilings); "
        "with a configured policy, also no version that policy does not allow (other prefixes "
        "such as `ZLIB_1.2.9`, non-numeric ones such as `GLIBC_ABI_DT_RELR`, `GLIBC_PRIVATE`). "
        "A numeric finding names the member and, read from its dynamic symbols, the (demangled) "
        "symbols that need the version."
    ),
    prevents=(
        "ImportError on an undefined symbol version on the oldest distro the release must "
        "support, e.g. `version 'GLIBC_2.34' not found` or `'GLIBCXX_3.4.30' not found`."
    ),
)

RULES = (CEILING,)


def check(facts: Facts) -> Iterator[Finding]:
    if not facts.judged:
        return
    yield from _numeric(facts)
    if facts.config.policy is not None and facts.target is not None:
        yield from _policy_symbols(facts, facts.target)


def has_errors(facts: Facts) -> bool:
    """Whether the rule finds a symbol version above the ceilings (the job-identity rule's hint)."""
    return any(f.severity == "error" for f in check(facts))


def _numeric(facts: Facts) -> Iterator[Finding]:
    config, target = facts.config, facts.target
    ceilings = dict(target.ceilings()) if target else {}
    ceilings.update(config.ceilings)
    source = f"policy {target.name}" if target else "flags"
    above = []
    for prefix, ceiling in sorted(ceilings.items()):
        top = version_tuple(ceiling)
        assert top is not None
        origin = "flag" if prefix in config.ceilings else source
        for e in facts.host:
            for lib, versions in sorted(needs(e).items()):
                for sv in sorted(versions, key=lambda s: symbol_version_key(s) or ()):
                    p, v = split_symbol_version(sv)
                    key = version_tuple(v)
                    if p == prefix and key is not None and key > top:
                        above.append((e.member, sv, lib, f"above the {prefix} ceiling {ceiling} ({origin})"))
    wanted = {(member, sv) for member, sv, _, _ in above}
    named = facts.needers(wanted) if facts.needers is not None and wanted else {}
    for member, sv, lib, why in above:
        yield CEILING.error(
            f"{member} requires {sv} from {lib}{_by(named.get((member, sv), ()))}, {why}",
            file=member,
            library=lib,
            symbol=sv,
        )


#: the names a finding lists per (member, version) before "and N more"
SHOWN = 3


def _by(names: tuple[str, ...]) -> str:
    """`` for std::foo(), bar`` (demangled, the first :data:`SHOWN`), or nothing unread."""
    if not names:
        return ""
    shown = ", ".join(demangle(n) for n in names[:SHOWN])
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return f" for {shown}{more}"


def _left_to_policy(config: GateConfig, target: Policy) -> Callable[[str], bool]:
    """Whether the configured policy's symbol rule judges a symbol version: not a numeric version the
    numeric ceilings judge instead (above the effective ceiling: already an error; within an explicit
    ceiling that loosens the policy's: allowed by it)."""
    own = {p: version_tuple(v) or () for p, v in target.ceilings().items()}
    effective = {**own, **{p: version_tuple(v) or () for p, v in config.ceilings.items()}}

    def judged(sv: str) -> bool:
        prefix, version = split_symbol_version(sv)
        key = version_tuple(version)
        if key is None or prefix not in effective:
            return True
        if key > effective[prefix]:
            return False
        loosened = prefix in config.ceilings and (prefix not in own or key > own[prefix])
        return not loosened

    return judged


def _policy_symbols(facts: Facts, target: Policy) -> Iterator[Finding]:
    """Every symbol version the configured policy does not allow, beyond the numeric ceilings: other
    prefixes (``LIBATOMIC_1.0``, ``ZLIB_1.2.9``), non-numeric versions (``GLIBC_ABI_DT_RELR``,
    ``GLIBC_PRIVATE``) and versions the policy does not list (one finding per library)."""
    judged = [(target.tag, target)]
    for lib, _tags, users in disallowed(facts.host, judged, _left_to_policy(facts.config, target)):
        highest, members, more = offenders(users, "the policy does not allow")
        allowed = best_symbol_policy(highest, target.arch, target.libc)
        them = "it" if len(highest) == 1 else "them"
        where = (
            f"{allowed.name} is the oldest policy allowing {them}"
            if allowed.name != "linux"
            else f"no manylinux policy allows {them}"
        )
        verb = "requires" if len(members) == 1 else "require"
        yield CEILING.error(
            f"{some(members)} {verb} {', '.join(highest)} from {lib}, which policy {target.name} "
            f"does not allow ({where}){more}",
            file=members[0],
            library=lib,
            symbol=", ".join(highest),
        )
