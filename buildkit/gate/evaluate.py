"""The wheel gate: a :class:`WheelReport` and a :class:`GateConfig` in, a :class:`Verdict` out.

One function, :func:`evaluate`, serves ``build``, ``check``, CI and ``publish``. It never reads
the wheel itself: everything comes from the streaming inspection (:mod:`buildkit.inspect`).
Besides the platform rules below it applies the integrity rules of :mod:`buildkit.gate.rules.integrity`
(RECORD, WHEEL tags, RPATH/RUNPATH, load order, host code in pure wheels).

The verdict (the best manylinux or musllinux tag the wheel is consistent with) follows
auditwheel's rules, read from auditwheel's installed policy files (:mod:`buildkit.policy`):

* *architecture*: each host ELF's (machine, class, byte order) as auditwheel maps them
  (``EM_PPC64`` little-endian is ppc64le, big-endian ppc64; ``EM_386`` i686; ``EM_ARM`` armv7l;
  ``EM_S390`` s390x; ``EM_RISCV`` riscv64; ``EM_LOONGARCH`` loongarch64); a host ELF of any other
  machine is an ``elf-machine`` error, never "pure";
* *libc*: musl when the host ELFs need ``libc.musl-*``/``ld-musl-*``, glibc when they need
  ``libc.so.6``/``ld-linux*``/``ld64.so.*``, else the file name's tag says (``musllinux_*``); musl
  wheels are judged by the musllinux policies (musl has no symbol versions: the verdict is the
  newest musllinux policy the libraries allow, as ``auditwheel show`` gives on a host without musl);
* *symbol policy*: the best policy allowing every versioned symbol requirement of every host ELF
  in the wheel (grafted libraries included: they are ELF members too), every prefix and every
  version the policy lists counting, non-numeric ones (``GLIBC_ABI_DT_RELR``) included;
* *library policy*: the best policy under which every DT_NEEDED is whitelisted, found inside the
  wheel (grafted: ld.so finds a member of that FILE NAME in a directory the needing object's
  RPATH/RUNPATH reaches, :func:`buildkit.gate.rules.integrity.resolve_libraries`; a member that only has the
  name as its SONAME, or sits where no search path reaches, does not count: a ``load-order``
  warning says why), or excluded by a rule (fnmatch globs on the name, e.g. ``librocblas.so*``:
  provided at run time, not counted; their own requirements cannot be seen);
* the overall tag is the worse of the two.

The *target policy* is the configuration's (``--policy``, a job's) or else the strictest tag the
file name claims. A PEP 600 name auditwheel's file has no entry for (``manylinux_2_29``, a future
``manylinux_2_42``) stands for the closest policy below it (:func:`buildkit.policy.policy_for`;
a warning when it lies above or below every known one). With a configured policy every symbol
version it does not allow is a ``ceiling`` error (numeric ceilings and non-numeric versions alike:
``LIBATOMIC_1.0``, ``ZLIB_1.2.9``, ``GLIBC_ABI_DT_RELR``, ``GLIBC_PRIVATE``); the file name's tags
are checked the same way by the ``platform-tag`` rule.

Differences from ``auditwheel show`` (documented, tested in tests/agreement): exclusion rules
(auditwheel show has none); auditwheel also reads the symbol versions of non-whitelisted libraries
it finds on the *host* (this gate never looks at the host); blacklisted symbols, ``PyFPE_jbuf`` and
the x86-64 ISA level are checked on every host ELF (:mod:`buildkit.gate.rules.abi`; auditwheel checks only
the ELFs no other member needs, and PyFPE only in Python extensions); auditwheel's resolver
searches an extension's RUNPATH for the libraries its dependencies need too, ld.so (and this
gate) does not; auditwheel ignores host ELFs of another architecture or libc with a warning, this
gate fails them; the armv7l hard-float/EABI check is not made.
"""

from __future__ import annotations

import contextlib
import fnmatch
import posixpath
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from buildkit.gate.findings import Finding as Finding
from buildkit.gate.findings import Severity as Severity
from buildkit.gate.rules.abi import check_abi
from buildkit.gate.rules.integrity import (
    Resolution,
    check_integrity,
    compatible,
    not_elf_load,
    resolve_libraries,
)
from buildkit.inspect.models import CodeObject, ElfInfo, WheelReport
from buildkit.inspect.models import Finding as Oddity
from buildkit.policy import (
    Libc,
    Policy,
    best_symbol_policy,
    is_dynamic_loader,
    known_archs,
    libc_of,
    parse_platform_tag,
    parse_policy_tag,
    policy_for,
    split_policy_name,
    split_symbol_version,
    symbol_version_key,
    verdict_policies,
    version_tuple,
)

if TYPE_CHECKING:
    from packaging.requirements import Requirement
    from packaging.specifiers import Specifier, SpecifierSet


from buildkit.gate.config import DEFAULT_SIZE_WARN, GateConfig, JobIdentity, format_size
from buildkit.gate.verdict import (
    GfxObject,
    Integrity,
    LibraryStatus,
    LibraryUse,
    SymbolMax,
    Verdict,
    _prefix_order,
)

# (ELF machine as the inspection names it, ELF class) -> (wheel-tag architecture, byte order), as
# auditwheel's lddtree._get_platform maps them; EM_PPC64 is decided by the byte order (_elf_arch)
_ELF_ARCHES: dict[tuple[str, int], tuple[str, str]] = {
    ("x86_64", 64): ("x86_64", "little"),
    ("386", 32): ("i686", "little"),
    ("aarch64", 64): ("aarch64", "little"),
    ("s390", 64): ("s390x", "big"),
    ("arm", 32): ("armv7l", "little"),
    ("riscv", 64): ("riscv64", "little"),
    ("loongarch", 64): ("loongarch64", "little"),
}
_LIBC_NAMES: dict[Libc, str] = {"glibc": "glibc", "musl": "musl libc"}
#: at most this many members are named in a finding about many of them (the rest are counted)
MEMBERS_NAMED = 3


# --------------------------------------------------------------------------- evaluation
def evaluate(report: WheelReport, config: GateConfig) -> Verdict:
    """Apply every gate rule to one inspected wheel."""
    findings: list[Finding] = []
    file_tags, tag_arch, tag_libc = _file_platform_tags(report.filename, findings)
    arch = _host_arch(report.elves, tag_arch, findings)
    host = [e for e in report.elves if arch is not None and _elf_arch(e) == arch]
    identity_at = len(findings)  # the job-identity findings go here, once the ceilings are known
    resolution = resolve_libraries(report.elves)

    symbols: tuple[SymbolMax, ...] = ()
    libraries: tuple[LibraryUse, ...] = ()
    overall = sym = lib = target = None
    libc: Libc = tag_libc or "glibc"
    if arch is not None and host:
        libc, libc_known = _wheel_libc(host, tag_libc, findings)
        if arch not in known_archs(libc):
            findings.append(
                Finding(
                    "elf-machine",
                    "error",
                    f"auditwheel's {libc} policies do not cover {arch}: no platform tag can be judged",
                    file=host[0].member,
                )
            )
        else:
            pols = verdict_policies(arch, libc)
            all_versions = {v for e in host for vs in _needs(e).values() for v in vs}
            sym = best_symbol_policy(all_versions, arch, libc)
            libraries = _classify_libraries(host, config.exclude_globs, pols, resolution)
            lib = _library_policy(libraries, pols)
            overall = min(sym, lib, key=lambda p: p.priority)
            symbols = _symbol_maxima(host)
            claimed = _claimed_policies(file_tags, arch, libc, findings, libc_known=libc_known)
            target = _target_policy(config, claimed, arch, libc, findings)
            # auditwheel's other ABI checks: blacklisted symbols, PyFPE_jbuf, x86-64 ISA level
            abi = check_abi(host, arch, held=(target, *(p for _, p in claimed)), candidates=pols)
            findings.extend(abi.findings)
            overall = min(sym, lib, abi.policies.overall, key=lambda p: p.priority)
            _check_ceilings(host, config, target, findings)
            if config.policy is not None and target is not None:
                _check_policy_symbols(host, config, target, findings)
            _check_file_tags(host, libraries, claimed, findings)
            _check_libraries(libraries, target or pols[0], report.elves, findings)
    ceiling_errors = any(f.rule == "ceiling" and f.severity == "error" for f in findings)
    identity: list[Finding] = []
    _check_job_identity(report.filename, config.identity, identity, ceiling_errors=ceiling_errors)
    findings[identity_at:identity_at] = identity

    gfx = _gfx_objects(report.elves, report.code_objects)
    for odd in report.findings:  # oddities the inspection noticed (e.g. a ".so" that is not ELF)
        findings.append(_judge_oddity(odd, report.elves, resolution))
    _check_archs(gfx, config, findings)
    _check_size(report.size, config, findings)
    _check_torch(report, config, findings, machine=arch)
    _check_rocm_sonames(host, config, findings)
    findings.extend(check_integrity(report, resolution))

    return Verdict(
        wheel=report.filename,
        size=report.size,
        sha256=report.sha256,
        config=config,
        pure=not report.elves,
        arch=arch,
        overall_policy=overall,
        sym_policy=sym,
        lib_policy=lib,
        file_tags=file_tags,
        symbols=symbols,
        libraries=libraries,
        gfx=gfx,
        findings=tuple(findings),
        integrity=Integrity(
            record_entries=len(report.record),
            files=len(report.files) or sum(not m.endswith("/") for m in report.members),
            hashes_verified=report.record_verified,
        ),
        target_policy=target,
        libc=libc,
    )


def _judge_oddity(odd: Oddity, elves: Sequence[ElfInfo], resolution: Resolution) -> Finding:
    """Rule ``inspect:<kind>``: a warning, except a member named like a shared library that is not
    ELF where the installed wheel imports or loads it (:func:`buildkit.gate.rules.integrity.not_elf_load`):
    that load fails, an error."""
    rule = f"inspect:{odd.kind}"
    if odd.kind != "not-elf-library":
        return Finding(rule, "warning", odd.message, file=odd.member)
    load = not_elf_load(odd.member, elves, resolution)
    if load is None:
        message = f"{odd.message}; nothing imports or loads it from there (a linker script or a data file?)"
        return Finding(rule, "warning", message, file=odd.member)
    return Finding(rule, "error", f"{odd.message}: {load}, which fails", file=odd.member)


def _some(members: Sequence[str]) -> str:
    """``a.so``, ``a.so and b.so``, ``a.so, b.so, c.so and 7 more``: at most :data:`MEMBERS_NAMED`."""
    shown = list(members[:MEMBERS_NAMED])
    rest = len(members) - len(shown)
    if rest:
        return f"{', '.join(shown)} and {rest} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


# --------------------------------------------------------------------------- job identity
def _check_job_identity(
    filename: str, identity: JobIdentity | None, findings: list[Finding], *, ceiling_errors: bool = False
) -> None:
    """The wheel is the job's: its file name's version, Python tag and platform tag are the ones the
    plan gives the job, its distribution name the recipe's ``name`` (the schema defines it as the
    wheel's distribution name); each is an error naming expected and found. ``ceiling_errors``: the
    ceiling rule found symbol versions above the job's policy (the platform-tag hint points there)."""
    if identity is None:
        return
    try:
        name, version, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return  # the wheel-name rule says so
    job = f"job {identity.job}"

    def mismatch(what: str, expected: str, found: str, hint: str = "", severity: Severity = "error") -> None:
        message = f"{what}: expected {expected}, found {found}" + (f"; {hint}" if hint else "")
        findings.append(Finding("job-identity", severity, message))

    if identity.name is not None and canonicalize_name(identity.name) != name:
        mismatch(
            "distribution name",
            f"{canonicalize_name(identity.name)} (the recipe's name)",
            name,
            "set the recipe's name to the project's distribution name",
        )
    expected_version = _normal_version(identity.version)
    if str(version) != expected_version:
        mismatch(
            "version",
            f"{expected_version} (the plan's for {job})",
            str(version),
            "make the build read BUILDKIT_VERSION or SETUPTOOLS_SCM_PRETEND_VERSION",
        )
    if not _serves_python(tags, identity.python):
        pairs = ", ".join(sorted({f"{t.interpreter}-{t.abi}" for t in tags}))
        python = identity.python.removesuffix("t")
        mismatch("python tag", f"{python}-{identity.python} ({job}'s Python)", pairs)
    platforms = sorted({t.platform for t in tags})
    if not _has_platform(platforms, identity.platform_tag):
        repaired = all(parse_platform_tag(p) is not None for p in platforms)
        mismatch(
            "platform tag",
            f"{identity.platform_tag} ({job}'s policy)",
            ", ".join(platforms),
            _repair_hint(ceiling_errors) if repaired else "",
        )


def _repair_hint(ceiling_errors: bool) -> str:
    """Why a job's wheel carries another manylinux tag than the job's policy (build repairs to the
    best policy auditwheel allows when it refuses the job's)."""
    if ceiling_errors:
        return (
            "auditwheel tags a wheel it cannot repair to the policy for what its symbols allow: the "
            "ceiling errors name the symbol versions above the policy"
        )
    return (
        "no symbol version or library this gate reads is above the job's policy: see the blacklist, "
        "pyfpe and x86-isa findings if any, else the wheel was repaired with another --plat"
    )


def _normal_version(text: str) -> str:
    try:
        return str(Version(text))
    except InvalidVersion:
        return text


def _serves_python(tags: Iterable[Any], cp_tag: str) -> bool:
    """Every tag is the job's CPython (``cp312-cp312``; ``cp313-cp313t`` for ``cp313t``), or a
    stable-ABI tag (``cp39-abi3``) the job's Python satisfies."""
    m = re.fullmatch(r"cp3(\d+)(t?)", cp_tag)
    if m is None:
        return all(t.interpreter == cp_tag for t in tags)
    minor, threaded = int(m.group(1)), bool(m.group(2))
    for t in tags:
        if t.interpreter == f"cp3{minor}" and t.abi == cp_tag:
            continue
        floor = re.fullmatch(r"cp3(\d+)", t.interpreter)
        if t.abi == "abi3" and floor is not None and not threaded and int(floor.group(1)) <= minor:
            continue
        return False
    return True


def _has_platform(platforms: Sequence[str], expected: str) -> bool:
    """``expected`` is among the file name's platform tags and every other one is a manylinux tag
    of the same architecture (auditwheel adds the more compatible policies the wheel also meets;
    the platform-tag rule checks each against the symbols)."""
    want = parse_platform_tag(expected)
    if want is None:
        return list(platforms) == [expected]
    parsed = [parse_platform_tag(p) for p in platforms]
    return want in parsed and all(p is not None and p[1] == want[1] for p in parsed)


def _needs(elf: ElfInfo) -> dict[str, tuple[str, ...]]:
    """Version needs without the dynamic loader's (auditwheel ignores ``ld-linux*``)."""
    return {lib: tuple(vs) for lib, vs in elf.version_needs.items() if not is_dynamic_loader(lib)}


def _file_platform_tags(
    filename: str, findings: list[Finding]
) -> tuple[tuple[str, ...], str | None, Libc | None]:
    """The file name's platform tags, the architecture they name and the libc a musllinux or
    manylinux tag implies (None: no such tag)."""
    try:
        _, _, _, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as exc:
        findings.append(Finding("wheel-name", "error", f"not a valid wheel file name: {exc}"))
        return (), None, None
    platforms = tuple(sorted({t.platform for t in tags}))
    arch: str | None = None
    libcs: set[Libc] = set()
    for plat in platforms:
        parsed = parse_policy_tag(plat)
        if parsed:
            _, arch, tag_libc = parsed
            libcs.add(tag_libc)
        elif plat.startswith("linux_"):
            arch = plat.removeprefix("linux_")
    # a file name with manylinux and musllinux tags (a static binary that runs on either): glibc,
    # as auditwheel judges a wheel whose ELFs name no libc
    libc: Libc | None = "glibc" if "glibc" in libcs else "musl" if libcs else None
    return platforms, arch, libc


def _elf_arch(e: ElfInfo) -> str | None:
    """The wheel architecture of a host ELF (auditwheel's mapping), None for a machine, class and byte
    order no policy covers."""
    if (e.machine, e.elf_class) == ("ppc64", 64):
        return "ppc64le" if e.endian == "little" else "ppc64"
    arch, order = _ELF_ARCHES.get((e.machine, e.elf_class), (None, None))
    return arch if order == e.endian else None


def _host_arch(elves: Sequence[ElfInfo], tag_arch: str | None, findings: list[Finding]) -> str | None:
    """The wheel's architecture: the host ELFs', the file name's when they agree or there are none.
    Host ELFs of an unknown machine, or of several architectures, are ``elf-machine`` errors."""
    unknown: dict[str, list[str]] = {}
    arches: dict[str, list[ElfInfo]] = {}
    for e in elves:
        arch = _elf_arch(e)
        if arch is None:
            unknown.setdefault(f"{e.machine} ({e.elf_class}-bit, {e.endian}-endian)", []).append(e.member)
        else:
            arches.setdefault(arch, []).append(e)
    for machine, members in sorted(unknown.items()):
        findings.append(
            Finding(
                "elf-machine",
                "error",
                f"{_some(members)} {'is' if len(members) == 1 else 'are'} {machine} machine code, an "
                "architecture no manylinux or musllinux policy covers: no platform tag can be judged",
                file=members[0],
            )
        )
    machines = sorted(arches)
    if not machines:
        return tag_arch
    if len(machines) > 1:
        findings.append(
            Finding(
                "elf-machine", "error", f"host ELF members for several architectures: {', '.join(machines)}"
            )
        )
    arch = tag_arch if tag_arch in machines else machines[0]
    if tag_arch is not None and tag_arch != arch:
        e = arches[arch][0]
        findings.append(
            Finding(
                "elf-machine",
                "error",
                f"{e.member} is {arch} ({e.machine}) but the wheel is tagged for {tag_arch}",
                file=e.member,
            )
        )
    return arch


_MUSL_NEEDS = ("libc.musl-", "ld-musl-")
_GLIBC_NEEDS = ("ld-linux", "ld64.so.")


def _wheel_libc(host: Sequence[ElfInfo], tag_libc: Libc | None, findings: list[Finding]) -> tuple[Libc, bool]:
    """The libc the host ELFs link (auditwheel's rule, from DT_NEEDED), else the file name's; and
    whether the ELFs decided it (a static binary links no libc: it runs under either)."""
    musl = [e.member for e in host if any(n.startswith(_MUSL_NEEDS) for n in e.needed)]
    glibc = [e.member for e in host if any(n == "libc.so.6" or n.startswith(_GLIBC_NEEDS) for n in e.needed)]
    if musl and glibc:
        findings.append(
            Finding(
                "elf-libc",
                "error",
                f"{_some(musl)} link{'s' if len(musl) == 1 else ''} musl libc but {_some(glibc)} "
                f"link{'s' if len(glibc) == 1 else ''} glibc: a wheel serves one libc",
                file=musl[0],
            )
        )
        return tag_libc or "glibc", True
    if musl:
        return "musl", True
    if glibc:
        return "glibc", True
    # only code that needs no library at all (a static binary) runs under either libc: an extension
    # needing just libstdc++.so.6 is still judged against the libc of each of its tags
    static = all(not e.needed for e in host)
    return tag_libc or "glibc", not static


def _classify_libraries(
    host: Sequence[ElfInfo], excludes: Sequence[str], pols: Sequence[Policy], resolution: Resolution
) -> tuple[LibraryUse, ...]:
    """One entry per DT_NEEDED name: ``grafted`` when ld.so finds it in the wheel from every member
    needing it (``detail``: the member found), else, for the members that do not find it there,
    ``excluded`` / ``whitelisted`` / ``external`` (``needed_by``: those members)."""
    widest = pols[-2]  # the least compatible policy has the widest whitelist
    found: dict[str, dict[str, str | None]] = {}  # name -> needing member -> member found
    for e in host:
        for name in e.needed:
            if not is_dynamic_loader(name):
                found.setdefault(name, {})[e.member] = resolution.provider(e.member, name)
    out = []
    for name in sorted(found):
        users = found[name]
        missing = tuple(sorted(m for m, p in users.items() if p is None))
        if not missing:
            first = sorted(users)[0]
            out.append(LibraryUse(name, "grafted", tuple(sorted(users)), users[first]))
            continue
        glob = next((g for g in excludes if fnmatch.fnmatchcase(name, g)), None)
        status: LibraryStatus
        if glob is not None:
            status = "excluded"
        elif name in widest.whitelist:
            status = "whitelisted"
        else:
            status = "external"
        out.append(LibraryUse(name, status, missing, glob))
    return tuple(out)


def _library_policy(libraries: Sequence[LibraryUse], pols: Sequence[Policy]) -> Policy:
    counted = [u.library for u in libraries if u.status in ("external", "whitelisted")]
    for p in pols:
        if all(p.allows_library(name) for name in counted):
            return p
    return pols[-1]


def _symbol_maxima(host: Sequence[ElfInfo]) -> tuple[SymbolMax, ...]:
    """Per library and prefix the highest numeric version required; each non-numeric version
    (``GLIBC_ABI_DT_RELR``, ``GLIBC_PRIVATE``, ``CXXABI_TM_1``: not ordered) is its own entry, its
    ``prefix`` the whole name."""
    best: dict[tuple[str, str], tuple[tuple[int, ...], str, list[str]]] = {}
    for e in host:
        for lib, versions in _needs(e).items():
            for sv in versions:
                key = symbol_version_key(sv)
                prefix = split_symbol_version(sv)[0] if key is not None else sv
                cur = best.get((lib, prefix))
                if cur is None or (key or ()) > cur[0]:
                    best[(lib, prefix)] = (key or (), sv, [e.member])
                elif (key or ()) == cur[0]:
                    cur[2].append(e.member)
    return tuple(
        SymbolMax(lib, prefix, sv, sorted(files)[0], tuple(sorted(set(files))))
        for (lib, prefix), (_, sv, files) in sorted(best.items())
    )


def _claimed_policies(
    file_tags: Sequence[str], arch: str, libc: Libc, findings: list[Finding], *, libc_known: bool = True
) -> list[tuple[str, Policy]]:
    """The policies the file name's manylinux/musllinux tags of the wheel's architecture and libc
    stand for (:func:`policy_for`: never an error for a PEP 600 name auditwheel has no entry for);
    tags of another architecture are errors, and of another libc when the ELFs link one (code that
    links no libc, such as a static Go or Rust binary, may carry both manylinux and musllinux tags)."""
    claimed: list[tuple[str, Policy]] = []
    other_arch: list[str] = []
    other_libc: list[str] = []
    for tag in file_tags:
        parsed = parse_policy_tag(tag)
        if parsed is None:
            continue
        base, tag_arch, tag_libc = parsed
        if tag_arch != arch:
            other_arch.append(tag)
        elif tag_libc != libc:
            other_libc.append(tag)
        else:
            pol, note = policy_for(base, arch)
            if note:
                findings.append(Finding("platform-tag", "warning", f"file name tag {tag}: {note}"))
            claimed.append((tag, pol))
    if other_arch:
        findings.append(
            Finding(
                "platform-tag", "error", f"file name tag {', '.join(other_arch)} but the ELF code is {arch}"
            )
        )
    if other_libc and libc_known:
        findings.append(
            Finding(
                "platform-tag",
                "error",
                f"file name tag {', '.join(other_libc)} but the ELF code links {_LIBC_NAMES[libc]}",
            )
        )
    return claimed


def _target_policy(
    config: GateConfig, claimed: Sequence[tuple[str, Policy]], arch: str, libc: Libc, findings: list[Finding]
) -> Policy | None:
    """The configured policy for the wheel's architecture (a ``policy`` finding when it names another
    architecture or libc, or auditwheel has nothing that close), else the strictest claimed tag's."""
    if config.policy is None:
        # the strictest claim is the most compatible tag (highest priority): the wheel must hold it
        return max((pol for _, pol in claimed), key=lambda p: p.strictness, default=None)
    base, named_arch = split_policy_name(config.policy)
    if named_arch is not None and named_arch != arch:
        findings.append(
            Finding(
                "policy",
                "error",
                f"policy {config.policy} is for {named_arch}, but the wheel's host code is {arch}",
            )
        )
    if base != "linux" and libc_of(base) != libc:
        findings.append(
            Finding(
                "policy",
                "error",
                f"policy {config.policy} is a {_LIBC_NAMES[libc_of(base)]} policy, but the wheel's host "
                f"code links {_LIBC_NAMES[libc]}",
            )
        )
        return None
    pol, note = policy_for(base, arch, libc)
    if note:
        findings.append(Finding("policy", "warning", f"policy {config.policy}: {note}"))
    return pol


def _check_ceilings(
    host: Sequence[ElfInfo], config: GateConfig, target: Policy | None, findings: list[Finding]
) -> None:
    ceilings = dict(target.ceilings()) if target else {}
    ceilings.update(config.ceilings)
    source = f"policy {target.name}" if target else "flags"
    for prefix, ceiling in sorted(ceilings.items()):
        top = version_tuple(ceiling)
        assert top is not None
        origin = "flag" if prefix in config.ceilings else source
        for e in host:
            for lib, versions in sorted(_needs(e).items()):
                for sv in sorted(versions, key=lambda s: symbol_version_key(s) or ()):
                    p, v = split_symbol_version(sv)
                    key = version_tuple(v)
                    if p == prefix and key is not None and key > top:
                        findings.append(
                            Finding(
                                "ceiling",
                                "error",
                                f"{e.member} requires {sv} from {lib}, above the {prefix} ceiling "
                                f"{ceiling} ({origin})",
                                file=e.member,
                                library=lib,
                                symbol=sv,
                            )
                        )


def _left_to_policy(config: GateConfig, target: Policy) -> Callable[[str], bool]:
    """Whether the configured policy's symbol rule judges a symbol version: not a numeric version the
    ceiling rule judges instead (above the effective ceiling: already an error; within an explicit
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


def _check_policy_symbols(
    host: Sequence[ElfInfo], config: GateConfig, target: Policy, findings: list[Finding]
) -> None:
    """Every symbol version the configured policy does not allow, beyond the numeric ceilings: other
    prefixes (``LIBATOMIC_1.0``, ``ZLIB_1.2.9``), non-numeric versions (``GLIBC_ABI_DT_RELR``,
    ``GLIBC_PRIVATE``) and versions the policy does not list (``ceiling`` errors, one per library)."""
    judged = [(target.tag, target)]
    for lib, _tags, users in _disallowed(host, judged, _left_to_policy(config, target)):
        highest, members, more = _offenders(users, "the policy does not allow")
        allowed = best_symbol_policy(highest, target.arch, target.libc)
        them = "it" if len(highest) == 1 else "them"
        where = (
            f"{allowed.name} is the oldest policy allowing {them}"
            if allowed.name != "linux"
            else f"no manylinux policy allows {them}"
        )
        verb = "requires" if len(members) == 1 else "require"
        findings.append(
            Finding(
                "ceiling",
                "error",
                f"{_some(members)} {verb} {', '.join(highest)} from {lib}, which policy {target.name} "
                f"does not allow ({where}){more}",
                file=members[0],
                library=lib,
                symbol=", ".join(highest),
            )
        )


def _check_file_tags(
    host: Sequence[ElfInfo],
    libraries: Sequence[LibraryUse],
    claimed: Sequence[tuple[str, Policy]],
    findings: list[Finding],
) -> None:
    """Each manylinux/musllinux tag of the file name must hold for the symbols and libraries: one
    finding per library, naming every tag it breaks (not one per tag)."""
    _check_tag_symbols(host, claimed, findings)
    for use in libraries:
        if use.status not in ("external", "whitelisted"):
            continue
        broken = [(tag, pol) for tag, pol in claimed if not pol.allows_library(use.library)]
        if broken:
            policies_named = ", ".join(pol.name for _, pol in broken)
            findings.append(
                Finding(
                    "platform-tag",
                    "error",
                    f"file name claims {', '.join(tag for tag, _ in broken)} but {_some(use.needed_by)} "
                    f"need{'s' if len(use.needed_by) == 1 else ''} {use.library}, not on the whitelist of "
                    f"{policies_named}",
                    file=use.needed_by[0],
                    library=use.library,
                )
            )


def _disallowed(
    host: Sequence[ElfInfo],
    claimed: Sequence[tuple[str, Policy]],
    judged: Callable[[str], bool] = lambda _: True,
) -> list[tuple[str, list[str], dict[str, set[str]]]]:
    """Per library (sorted): the tags some required symbol version breaks (in claim order) and each
    offending version with the members requiring it; ``judged`` filters the versions looked at."""
    tags: dict[str, dict[str, None]] = {}  # library -> tags broken (ordered set)
    users: dict[str, dict[str, set[str]]] = {}  # library -> offending version -> members
    for e in host:
        for lib, versions in sorted(_needs(e).items()):
            mine = [sv for sv in versions if judged(sv)]
            for tag, pol in claimed:
                for sv in pol.disallowed(mine):
                    tags.setdefault(lib, {})[tag] = None
                    users.setdefault(lib, {}).setdefault(sv, set()).add(e.member)
    order = [t for t, _ in claimed]
    return [(lib, [t for t in order if t in tags[lib]], users[lib]) for lib in sorted(users)]


def _offenders(
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
    highest = [top[p] for p in sorted(top, key=_prefix_order)]
    members = sorted({m for sv in highest for m in users[sv]})
    others = len({m for ms in users.values() for m in ms} - set(members))
    more = f" (+{others} other member(s) requiring lower versions {disallowing})" if others else ""
    return highest, members, more


def _check_tag_symbols(
    host: Sequence[ElfInfo], claimed: Sequence[tuple[str, Policy]], findings: list[Finding]
) -> None:
    """Per library: the tags some required symbol version breaks, the highest such version per
    prefix, and the members requiring one of them."""
    for lib, tags, users in _disallowed(host, claimed):
        highest, members, more = _offenders(users)
        findings.append(
            Finding(
                "platform-tag",
                "error",
                f"file name claims {', '.join(tags)} but {_some(members)} "
                f"require{'s' if len(members) == 1 else ''} {', '.join(highest)} from {lib}{more}",
                file=members[0],
                library=lib,
                symbol=", ".join(highest),
            )
        )


def _check_libraries(
    libraries: Sequence[LibraryUse], target: Policy, elves: Sequence[ElfInfo], findings: list[Finding]
) -> None:
    """One finding per library the target policy does not allow, naming the members needing it (and
    a member carrying that name where ld.so does not find it: see the load-order warning)."""
    by_member = {e.member: e for e in elves}
    carriers: dict[str, list[ElfInfo]] = {}
    for e in elves:
        for name in {e.soname, posixpath.basename(e.member)} - {None}:
            carriers.setdefault(str(name), []).append(e)
    for use in libraries:
        if use.status in ("external", "whitelisted") and not target.allows_library(use.library):
            verb = "needs" if len(use.needed_by) == 1 else "need"
            needer = by_member[use.needed_by[0]]
            carrier = next((e.member for e in carriers.get(use.library, ()) if compatible(e, needer)), None)
            where = (
                f"not excluded by a rule, and ld.so does not find the wheel's {carrier} from "
                f"{'it' if len(use.needed_by) == 1 else 'them'} (see the load-order warning; "
                if carrier
                else "not grafted in the wheel and not excluded by a rule ("
            )
            findings.append(
                Finding(
                    "external-library",
                    "error",
                    f"{_some(use.needed_by)} {verb} {use.library}: not on the {target.name} whitelist, "
                    f"{where}graft it with auditwheel repair or exclude it with --exclude/--exclude-set)",
                    file=use.needed_by[0],
                    library=use.library,
                )
            )


# --------------------------------------------------------------------------- gfx targets
def _split_target(target_id: str) -> tuple[str, frozenset[str]]:
    name, *features = target_id.split(":")
    return name, frozenset(features)


def _gfx_objects(elves: Sequence[ElfInfo], code_objects: Sequence[CodeObject]) -> tuple[GfxObject, ...]:
    out = [GfxObject(e.member, "bundle", e.gfx_targets) for e in elves if e.gfx_targets]
    out += [GfxObject(c.member, "code-object", (c.target_id,)) for c in code_objects]
    return tuple(sorted(out, key=lambda g: g.file))


def _matches(requested: str, present: str, features: bool) -> bool:
    """Same processor and no contradicting feature (``xnack-`` code never serves ``xnack+``);
    with ``features``, exactly the same target-id features."""
    rname, rfeat = _split_target(requested)
    pname, pfeat = _split_target(present)
    if rname != pname:
        return False
    if features:
        return rfeat == pfeat
    flipped = {f[:-1] + ("-" if f.endswith("+") else "+") for f in rfeat}
    return not pfeat & flipped


def _narrower(requested: str, present: str) -> bool:
    """``present`` runs in fewer modes than ``requested`` asks for: ``gfx90a:xnack-`` code for a
    ``gfx90a`` request (any xnack mode), or ``xnack-`` code for an ``xnack+`` request."""
    _rname, rfeat = _split_target(requested)
    _pname, pfeat = _split_target(present)
    return not pfeat <= rfeat


def _check_archs(gfx: Sequence[GfxObject], config: GateConfig, findings: list[Finding]) -> None:
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
        findings.append(
            Finding(
                "gfx-arch",
                "error",
                f"archs {', '.join(config.archs)} requested but the wheel has no HIP object or code object",
            )
        )
        return
    for where, targets in groups:
        member = where if not where.endswith("code object(s)") else None
        for want in config.archs:
            same = [t for t in targets if _matches(want, t, config.match_features)]
            if same and all(_narrower(want, t) for t in same):
                findings.append(
                    Finding(
                        "gfx-arch",
                        "warning",
                        f"{where} has {want} only as {', '.join(same)}: that code loads only in that "
                        f"mode, not wherever {want} is asked for",
                        file=member,
                        symbol=want,
                    )
                )
            if not same:
                findings.append(
                    Finding(
                        "gfx-arch",
                        "error",
                        f"{where} lacks code for requested arch {want} (has {', '.join(targets) or 'none'})",
                        file=member,
                        symbol=want,
                    )
                )
        for t in targets:
            if not any(_matches(want, t, config.match_features) for want in config.archs):
                findings.append(
                    Finding(
                        "gfx-arch",
                        "warning",
                        f"{where} carries {t}, which was not requested",
                        file=member,
                        symbol=t,
                    )
                )


# --------------------------------------------------------------------------- size and torch
def _check_size(size: int, config: GateConfig, findings: list[Finding]) -> None:
    if config.size_limit is not None and size > config.size_limit:
        findings.append(
            Finding(
                "size",
                "error",
                f"wheel is {format_size(size)}, above the limit of {format_size(config.size_limit)}",
            )
        )
    elif config.size_warn is not None and size > config.size_warn:
        why = (
            "PyPI's default file limit; ask for an increase or publish to your own index"
            if config.size_warn == DEFAULT_SIZE_WARN
            else "the size budget's warn"
        )
        findings.append(
            Finding(
                "size",
                "warning",
                f"wheel is {format_size(size)}, above {format_size(config.size_warn)} ({why})",
            )
        )


def _floor(release: Sequence[int], epoch: int = 0) -> Version:
    """The lowest version of a release series: ``(2, 10)`` -> ``2.10.dev0`` (below 2.10.0rc1, 2.10.0)."""
    text = ".".join(str(p) for p in release) + ".dev0"
    return Version(f"{epoch}!{text}" if epoch else text)


def _bump(release: Sequence[int]) -> tuple[int, ...]:
    return (*release[:-1], release[-1] + 1)


def _clause_bounds(spec: Specifier) -> tuple[Version | None, tuple[Version, bool] | None]:
    """The smallest interval holding every version one clause admits (PEP 440 semantics):
    ``!=`` only removes versions, so it bounds nothing; ``<V`` excludes V's pre-releases."""
    op, text = spec.operator, spec.version
    try:
        if op == "!=":
            return None, None
        if op == "==" and text.endswith(".*"):
            prefix = Version(text[:-2])
            return _floor(prefix.release, prefix.epoch), (_floor(_bump(prefix.release), prefix.epoch), False)
        version = Version(text)
    except InvalidVersion:  # "===" with an arbitrary string: no bound we can reason about
        return None, None
    if op == "~=":  # ~=2.10.1 is >=2.10.1, ==2.10.*
        stem = version.release[:-1]
        return version, (_floor(_bump(stem), version.epoch), False)
    if op in ("==", "==="):
        return version, (version, True)
    if op in (">=", ">"):
        return version, None
    if op == "<=":
        return None, (version, True)
    # "<"
    plain = not (version.is_prerelease or version.is_postrelease)
    return None, ((_floor(version.release, version.epoch) if plain else version), False)


def _python_candidates(marker_text: str, python: SpecifierSet) -> list[tuple[str, str]]:
    """Every distinct case a marker can tell apart among the Pythons ``python`` admits:
    ``(python_version, python_full_version)`` at the version literals of the marker, their
    neighbours and the ends of each minor series (markers compare with those literals only)."""
    literals = [Version(v) for v in re.findall(r"""['"](\d+(?:\.\d+){1,2})['"]""", marker_text)]
    top = max([v.minor for v in literals if v.major == 3] + [14]) + 1
    out = []
    for minor in range(top + 1):
        patches = {0, 99}
        for v in literals:
            if v.release[:2] == (3, minor) and len(v.release) > 2:
                patches |= {max(v.micro - 1, 0), v.micro, v.micro + 1}
        for patch in sorted(patches):
            full = f"3.{minor}.{patch}"
            if python.contains(full, prereleases=True):
                out.append((f"3.{minor}", full))
    return out


def _marker_problem(requirement: Requirement, python: SpecifierSet, machine: str | None) -> str | None:
    """A marker that is false for some Python the wheel serves (or without extras) leaves torch
    unrequired there: the extension would then load against whatever torch is installed."""
    if requirement.marker is None:
        return None
    base = {"extra": "", "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"}
    if machine is not None:
        base["platform_machine"] = machine
    for short, full in _python_candidates(str(requirement.marker), python):
        env = {**base, "python_version": short, "python_full_version": full}
        if not requirement.marker.evaluate(env):
            where = f"Python {full}" + (" (no extra)" if "extra" in str(requirement.marker) else "")
            return (
                f"{requirement} does not require torch on {where}: its marker ({requirement.marker}) is "
                "false there, so the wheel could load against any torch"
            )
    return None


def torch_pin_problem(
    requirement: Requirement,
    pin: str,
    *,
    python: SpecifierSet | str | None = None,
    machine: str | None = None,
) -> str | None:
    """Why ``requirement`` (on torch) does not pin ``pin`` (``"2.10"``); ``None`` if it does.

    It must admit a 2.10.x release and nothing outside the 2.10 series, decided from the specifier
    set's structure: the tightest lower bound (over every clause) must be at least ``2.10.dev0`` and
    the tightest upper bound below ``2.11.dev0`` (``==2.10.*``, ``~=2.10.N``, ``<2.11``, ``<=2.10.N``);
    ``!=`` clauses only remove versions and never bound. Admitting a 2.10.x release is checked at
    2.10.0 up to one past the highest 2.10 patch the clauses name (between those the clauses cannot
    change their answer). ``python`` (the Pythons the wheel serves, e.g. ``==3.12.*``; ``""``: any
    Python; None: the running one's minor series) and ``machine``: a marker false for one of them
    is a problem too (:func:`evaluate` passes the wheel's own, :func:`wheel_pythons`).
    """
    from packaging.specifiers import SpecifierSet  # the torch rules only: imported when they run

    major, minor = (int(p) for p in pin.split("."))
    spec: SpecifierSet = requirement.specifier
    if python is None:
        python = f"=={sys.version_info.major}.{sys.version_info.minor}.*"
    python_set = python if isinstance(python, SpecifierSet) else SpecifierSet(python)
    literals = []
    for clause in spec:
        with contextlib.suppress(InvalidVersion):
            literals.append(Version(clause.version.removesuffix(".*")))
    last = max([v.micro for v in literals if v.release[:2] == (major, minor)] + [0])
    finals = [Version(f"{major}.{minor}.{p}") for p in range(last + 2)]
    extra = [v for v in literals if v.release[:2] == (major, minor)]
    if not any(spec.contains(v, prereleases=True) for v in [*finals, *extra]):
        return f"{requirement} does not admit any torch {pin} release"
    lows: list[tuple[Version, str]] = []
    highs: list[tuple[tuple[Version, bool], str]] = []
    for clause in spec:
        low, high = _clause_bounds(clause)
        if low is not None:
            lows.append((low, str(clause)))
        if high is not None:
            highs.append((high, str(clause)))
    floor, ceiling = _floor((major, minor)), _floor((major, minor + 1))
    tightest_low = max(lows, default=None)
    if tightest_low is None or tightest_low[0] < floor:
        below = "any older torch" if tightest_low is None else f"torch below {pin} ({tightest_low[1]})"
        return f"{requirement} also admits {below}, built against a different ABI than {pin}"
    tightest_high = min(highs, default=None)
    if tightest_high is None:
        return f"{requirement} also admits any newer torch, built against a different ABI than {pin}"
    (top, inclusive), clause_text = tightest_high
    if top >= ceiling if inclusive else top > ceiling:
        return (
            f"{requirement} also admits torch {major}.{minor + 1} ({clause_text} is its tightest upper "
            f"bound), built against a different ABI than {pin}"
        )
    return _marker_problem(requirement, python_set, machine)


def wheel_pythons(filename: str) -> SpecifierSet:
    """The Pythons a wheel serves, from its tags: ``cp312-cp312`` -> ``==3.12.*``, ``cp39-abi3`` ->
    ``>=3.9``; anything else (``py3``, an invalid name): any Python (empty set)."""
    from packaging.specifiers import SpecifierSet  # the torch rules only: imported when they run

    try:
        _, _, _, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return SpecifierSet()
    exact: set[int] = set()
    floors: set[int] = set()
    for tag in tags:
        m = re.fullmatch(r"cp3(\d+)", tag.interpreter)
        if m is None:
            return SpecifierSet()
        (floors if tag.abi == "abi3" else exact).add(int(m.group(1)))
    if len(exact) == 1 and not floors:
        return SpecifierSet(f"==3.{exact.pop()}.*")
    if floors and not exact:
        return SpecifierSet(f">=3.{min(floors)}")
    return SpecifierSet()


def _check_rocm_sonames(host: Sequence[ElfInfo], config: GateConfig, findings: list[Finding]) -> None:
    """A wheel for ROCm X links X's runtime SONAMEs: ``libamdhip64.so.6`` in a ROCm 7.2 job means it
    was compiled against another ROCm than its label says (and fails to load, or loads the wrong one)."""
    if not config.rocm_sonames:
        return
    for elf in host:
        for needed in elf.needed:
            base, sep, _major = needed.partition(".so.")
            expected = config.rocm_sonames.get(base)
            if sep and expected is not None and needed != expected:
                findings.append(
                    Finding(
                        "rocm-soname",
                        "error",
                        f"{elf.member} needs {needed}, but ROCm {config.rocm} ships {expected}: it was "
                        f"built against another ROCm release than {config.rocm}",
                        file=elf.member,
                        library=needed,
                    )
                )


def _check_torch(
    report: WheelReport, config: GateConfig, findings: list[Finding], *, machine: str | None = None
) -> None:
    """The torch pin against the wheel's ``Requires-Dist``, judged for the Pythons it serves."""
    if config.torch is None:
        return
    from packaging.requirements import InvalidRequirement, Requirement  # only with a torch pin

    python = wheel_pythons(report.filename)
    torch_reqs = []
    for line in report.metadata_requires:
        try:
            req = Requirement(line)
        except InvalidRequirement as exc:
            findings.append(
                Finding("torch-pin", "error", f"METADATA Requires-Dist {line!r} is invalid: {exc}")
            )
            continue
        if canonicalize_name(req.name) == "torch":
            torch_reqs.append(req)
    if not torch_reqs:
        findings.append(
            Finding(
                "torch-pin",
                "error",
                f"torch {config.torch} is pinned but METADATA has no Requires-Dist on torch "
                f"(expected e.g. torch=={config.torch}.*)",
                library="torch",
            )
        )
        return
    for req in torch_reqs:
        problem = torch_pin_problem(req, config.torch, python=python, machine=machine)
        if problem:
            findings.append(
                Finding(
                    "torch-pin",
                    "error",
                    f"{problem}; require torch=={config.torch}.* (or >={config.torch},<next minor)",
                    library="torch",
                    symbol=str(req),
                )
            )
