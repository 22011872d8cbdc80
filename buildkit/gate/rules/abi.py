"""The ABI rules auditwheel applies besides symbol versions and the library whitelist, as pure
functions of the inspection (:class:`~buildkit.inspect.models.ElfInfo`) and the policies of
:mod:`buildkit.policy`:

``blacklist`` (auditwheel's policy ``"blacklist"``; the tag becomes the best policy whose blacklist is
clean), ``pyfpe`` (CPython removed ``PyFPE_*`` in 3.7; the tag becomes ``linux``) and ``x86-isa``
(every manylinux policy's x86_64 baseline is v1; auditwheel's ``machine_policy``, reported as
``unsupported_isa``); their ``checks`` say what each judges.

Errors are raised against the policies the wheel is held to (``held``: the gate's target policy and
the policies of the manylinux/musllinux tags its file name claims); the tag lowering
(:func:`abi_policies`) chooses among ``candidates`` (the verdict's policies for the wheel's
architecture and libc, best first, ``linux`` last; default :func:`buildkit.policy.policies`), whatever
the wheel claims. Differences from auditwheel, on purpose: every host ELF of the wheel is
checked, while auditwheel checks only the ELFs no other member needs (Python extensions and
executables; a grafted library's reference fails at load time just the same) and ``pyfpe`` only in
Python extensions; ``pyfpe`` counts non-weak references of any symbol type (auditwheel: function or
untyped ones, weak included).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule
from buildkit.inspect.models import ElfInfo
from buildkit.inspect.symbols import PYFPE_SYMBOLS
from buildkit.policy import Policy, policies

BLACKLIST = Rule(
    "blacklist",
    ("error",),
    checks=(
        "No host ELF references a symbol that a held policy (target or claimed) blacklists for a "
        "library in its DT_NEEDED (e.g. `uncompress2` of `libz.so.1`, absent from the zlib of "
        "older baselines; `*` blacklists the whole library)."
    ),
    prevents=(
        "ImportError `undefined symbol: uncompress2` with the older system zlib of the distros "
        "the tag claims."
    ),
)

PYFPE = Rule(
    "pyfpe",
    ("error",),
    checks=(
        "With a manylinux/musllinux policy held, no host ELF references `PyFPE_jbuf`, "
        "`PyFPE_dummy` or `PyFPE_counter`."
    ),
    prevents=(
        "ImportError `undefined symbol: PyFPE_jbuf`: no manylinux Python provides these (CPython "
        "removed them in 3.7)."
    ),
)

X86_ISA = Rule(
    "x86-isa",
    ("error",),
    checks=(
        "With a policy held, no x86_64 host ELF declares (GNU property `X86_ISA_1_NEEDED`) more "
        "than the x86-64 baseline (v2, v3, v4 or unknown bits)."
    ),
    prevents=(
        "On a CPU below that level (no AVX2 for v3) glibc 2.33+ refuses to load the object (CPU "
        "ISA level is lower than required); older glibc loads it and it dies with SIGILL."
    ),
)

RULES = (BLACKLIST, PYFPE, X86_ISA)
#: auditwheel's wildcard blacklist entry: every ELF needing the library is concerned
WILDCARD = "*"
# GNU_PROPERTY_X86_ISA_1_NEEDED bits (binutils' include/elf/common.h, GNU_PROPERTY_X86_ISA_1_*)
ISA_BASELINE, ISA_V2, ISA_V3, ISA_V4 = 1, 2, 4, 8
_ISA_LEVELS = ((ISA_V4, "x86-64-v4"), (ISA_V3, "x86-64-v3"), (ISA_V2, "x86-64-v2"))


class AbiPolicies(NamedTuple):
    """The best policy each rule allows, as auditwheel computes ``blacklist_policy``,
    ``pyfpe_policy`` and ``machine_policy``; ``overall`` is the worst of them (the gate's overall
    tag is the minimum of it, the symbol policy and the library policy: auditwheel's ``overall_tag``)."""

    blacklist: Policy
    pyfpe: Policy
    isa: Policy
    best: Policy  # the best candidate: what a rule that lowers nothing allows

    @property
    def overall(self) -> Policy:
        return min((self.blacklist, self.pyfpe, self.isa), key=lambda p: p.priority)

    def lowered_by(self) -> tuple[str, ...]:
        """The rules that lower the tag below the best candidate (``("blacklist",)``), in RULES order."""
        chosen = (self.blacklist, self.pyfpe, self.isa)
        return tuple(
            rule.id for rule, p in zip(RULES, chosen, strict=True) if p.priority < self.best.priority
        )


class AbiVerdict(NamedTuple):
    """The ABI rules' findings and the policies they judged the wheel against."""

    findings: tuple[Finding, ...]
    policies: AbiPolicies


def check_abi(
    host: Sequence[ElfInfo],
    arch: str,
    held: Iterable[Policy | None] = (),
    candidates: Sequence[Policy] | None = None,
) -> AbiVerdict:
    """All three rules for the gate: the findings against the ``held`` policies (``None`` and
    ``linux`` entries are skipped, duplicates merged) and the policies they allow among
    ``candidates`` (``AbiVerdict.policies.overall`` lowers the overall tag)."""
    pols = held_to(held)
    cands = tuple(candidates) if candidates is not None else policies(arch)
    return AbiVerdict(tuple(_findings(host, arch, pols, cands)), abi_policies(host, arch, cands))


def check(facts: Facts) -> Iterator[Finding]:
    """The three rules against the policies the wheel is held to: the target and the claimed tags'."""
    if facts.judged and facts.arch is not None:
        held = held_to((facts.target, *(p for _, p in facts.claimed)))
        yield from _findings(facts.host, facts.arch, held, facts.pols)


def _findings(
    host: Sequence[ElfInfo], arch: str, held: Sequence[Policy], candidates: Sequence[Policy]
) -> list[Finding]:
    return [
        *check_blacklist(host, held, candidates),
        *check_pyfpe(host, held),
        *check_x86_isa(host, arch, held),
    ]


def held_to(held: Iterable[Policy | None]) -> tuple[Policy, ...]:
    """The distinct policies among ``held`` that constrain anything (not ``None``, not ``linux``),
    best first."""
    found: dict[str, Policy] = {}
    for policy in held:
        if policy is not None and policy.name != "linux":
            found.setdefault(policy.name, policy)
    return tuple(sorted(found.values(), key=lambda p: p.priority, reverse=True))


# --------------------------------------------------------------------------- blacklist
def blacklisted(elf: ElfInfo, policy: Policy) -> list[tuple[str, str]]:
    """``(library, symbol)`` pairs of ``elf`` that ``policy`` blacklists: for each library both in
    the policy's blacklist and in the ELF's DT_NEEDED, the blacklisted names the ELF leaves undefined
    (auditwheel's ``filter_undefined_symbols``: ``"*"`` always matches)."""
    undefined = set(elf.undefined_of_interest) | {WILDCARD}
    out: list[tuple[str, str]] = []
    for library in sorted(set(elf.needed) & set(policy.blacklist)):
        out.extend((library, symbol) for symbol in sorted(policy.blacklist[library] & undefined))
    return out


def check_blacklist(
    host: Sequence[ElfInfo], held: Sequence[Policy], candidates: Sequence[Policy]
) -> list[Finding]:
    """One error per (ELF, library, symbol) some held policy blacklists, naming those policies and
    the best candidate that allows the symbol."""
    findings = []
    for elf in host:
        hits: dict[tuple[str, str], list[Policy]] = {}
        for policy in held:
            for pair in blacklisted(elf, policy):
                hits.setdefault(pair, []).append(policy)
        for (library, symbol), by in sorted(hits.items()):
            allowed = _first_allowing(library, symbol, candidates)
            what = f"needs {library}" if symbol == WILDCARD else f"references {symbol} of {library}"
            findings.append(
                BLACKLIST.error(
                    f"{elf.member} {what}, blacklisted by {', '.join(p.name for p in by)}: the {library} "
                    f"of those distributions lacks it (best tag for it: {allowed.tag}); avoid the call, "
                    "link that code statically or target a newer policy",
                    file=elf.member,
                    library=library,
                    symbol=symbol,
                )
            )
    return findings


def _first_allowing(library: str, symbol: str, candidates: Sequence[Policy]) -> Policy:
    """The best candidate whose blacklist does not name ``symbol`` of ``library``."""
    return next(
        (p for p in candidates if not ({symbol, WILDCARD} & p.blacklist.get(library, frozenset()))),
        candidates[-1],
    )


def blacklist_policy(host: Sequence[ElfInfo], candidates: Sequence[Policy]) -> Policy:
    """auditwheel's ``blacklist_policy``: the best candidate no ELF's blacklisted symbol breaks."""
    return next(
        (p for p in candidates if not any(blacklisted(elf, p) for elf in host)),
        candidates[-1],
    )


# --------------------------------------------------------------------------- pyfpe
def pyfpe_symbols(elf: ElfInfo) -> tuple[str, ...]:
    return tuple(s for s in elf.undefined_of_interest if s in PYFPE_SYMBOLS)


def check_pyfpe(host: Sequence[ElfInfo], held: Sequence[Policy]) -> list[Finding]:
    """One error per (ELF, ``PyFPE_*`` symbol) it references, when the wheel is held to a policy."""
    if not held:
        return []
    return [
        PYFPE.error(
            f"{elf.member} references {symbol}, which no manylinux Python provides (only a CPython "
            "before 3.7 configured --with-fpectl has it): auditwheel tags such a wheel linux; rebuild "
            "against a Python without fpectl",
            file=elf.member,
            symbol=symbol,
        )
        for elf in host
        for symbol in pyfpe_symbols(elf)
    ]


def pyfpe_policy(host: Sequence[ElfInfo], candidates: Sequence[Policy]) -> Policy:
    """auditwheel's ``pyfpe_policy``: ``linux`` (the last candidate) when an ELF references
    ``PyFPE_*``, else the best candidate."""
    return candidates[-1] if any(pyfpe_symbols(elf) for elf in host) else candidates[0]


# --------------------------------------------------------------------------- x86 ISA level
def isa_level(mask: int | None) -> str | None:
    """The x86-64 level a ``GNU_PROPERTY_X86_ISA_1_NEEDED`` mask needs beyond the baseline
    (``0x7`` -> ``"x86-64-v3"``); ``None`` for no mask or the baseline alone; ``"unknown ISA bits
    0x10"`` for bits no level defines (auditwheel stops on those: "unknown x86_64 ISA")."""
    if mask is None:
        return None
    above = mask & ~ISA_BASELINE
    for bit, name in _ISA_LEVELS:
        if above & bit:
            return name
    return f"unknown ISA bits {above:#x}" if above else None


def _above_baseline(elf: ElfInfo, arch: str) -> str | None:
    return isa_level(elf.x86_isa_needed) if arch == "x86_64" else None


def check_x86_isa(host: Sequence[ElfInfo], arch: str, held: Sequence[Policy]) -> list[Finding]:
    """One error per x86_64 ELF needing more than the x86-64 baseline of the held policies."""
    if not held:
        return []
    findings = []
    for elf in host:
        level = _above_baseline(elf, arch)
        if level is None:
            continue
        findings.append(
            X86_ISA.error(
                f"{elf.member} needs the {level} instruction set (GNU_PROPERTY_X86_ISA_1_NEEDED "
                f"{elf.x86_isa_needed:#x}), above the x86-64 baseline of {', '.join(p.name for p in held)}: "
                "auditwheel tags it linux (unsupported_isa); build without -mneeded / -Wl,-z,x86-64-vN "
                "or select the instructions at run time",
                file=elf.member,
                symbol=level,
            )
        )
    return findings


def isa_policy(host: Sequence[ElfInfo], arch: str, candidates: Sequence[Policy]) -> Policy:
    """auditwheel's ``machine_policy`` for the wheel's own ELFs: ``linux`` (the last candidate) when
    one needs more than the x86-64 baseline, else the best candidate."""
    return candidates[-1] if any(_above_baseline(elf, arch) for elf in host) else candidates[0]


def abi_policies(
    host: Sequence[ElfInfo], arch: str, candidates: Sequence[Policy] | None = None
) -> AbiPolicies:
    """The best policy each rule allows among ``candidates`` (best first, ``linux`` last; default
    ``policies(arch)``): see :class:`AbiPolicies`."""
    cands = tuple(candidates) if candidates is not None else policies(arch)
    return AbiPolicies(
        blacklist=blacklist_policy(host, cands),
        pyfpe=pyfpe_policy(host, cands),
        isa=isa_policy(host, arch, cands),
        best=cands[0],
    )
