"""What a wheel's host code is, before any rule judges it: the facts every gate rule reads.

:func:`gather` turns a :class:`~buildkit.inspect.models.WheelReport` and a
:class:`~buildkit.gate.config.GateConfig` into :class:`Facts`: the file name's platform tags, the
host ELFs' architecture and libc (auditwheel's mappings), the verdict policies for them, the best
symbol and library policies, each DT_NEEDED classified (grafted, excluded, whitelisted, external),
the policies the file name claims and the target policy. What does not fit (an unparsable file name,
host ELFs of several architectures, a tag of another libc...) is recorded as data here; the rules
of :mod:`buildkit.gate.rules.tags` word the findings.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, NamedTuple

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from buildkit.gate.config import GateConfig
from buildkit.gate.device import DeviceCode, device_code
from buildkit.gate.loading import Resolution, resolve_libraries
from buildkit.gate.sdk import RocmFromPip, installed_closure, provider, sdk_requirements
from buildkit.gate.verdict import GfxObject, LibraryStatus, LibraryUse, SymbolMax
from buildkit.inspect.models import CodeObject, ElfInfo, WheelReport
from buildkit.policy import (
    Libc,
    Policy,
    best_symbol_policy,
    is_dynamic_loader,
    known_archs,
    libc_of,
    parse_policy_tag,
    policy_for,
    split_policy_name,
    split_symbol_version,
    symbol_version_key,
    verdict_policies,
)

if TYPE_CHECKING:
    from buildkit.gate.pyabi import PythonAbiResult
    from buildkit.gate.torchabi import TorchAbiResult
    from buildkit.gate.torchshim import StableAbiResult
    from buildkit.inspect.isa import ElfIsa

#: what a caller that holds the wheel gives the gate to name the symbols behind a version
#: (:func:`buildkit.judge.needers.reader`): (member, symbol version) pairs -> the imports' names
Needers = Callable[[Collection[tuple[str, str]]], dict[tuple[str, str], tuple[str, ...]]]

# (ELF machine as the inspection names it, ELF class) -> (wheel-tag architecture, byte order), as
# auditwheel's lddtree._get_platform maps them; EM_PPC64 is decided by the byte order (elf_arch)
_ELF_ARCHES: dict[tuple[str, int], tuple[str, str]] = {
    ("x86_64", 64): ("x86_64", "little"),
    ("386", 32): ("i686", "little"),
    ("aarch64", 64): ("aarch64", "little"),
    ("s390", 64): ("s390x", "big"),
    ("arm", 32): ("armv7l", "little"),
    ("riscv", 64): ("riscv64", "little"),
    ("loongarch", 64): ("loongarch64", "little"),
}
_MUSL_NEEDS = ("libc.musl-", "ld-musl-")
_GLIBC_NEEDS = ("ld-linux", "ld64.so.")


class PolicyProblem(NamedTuple):
    """The configured policy does not fit the wheel: ``kind`` ``arch`` (``value``: the architecture
    the policy names), ``libc`` (``value``: the policy's libc; no target then) or ``note``
    (``value``: why auditwheel's closest policy stands for it)."""

    kind: str
    value: str


class Facts(NamedTuple):
    """Everything the rules judge. ``judged``: the wheel has host code of an architecture and libc
    auditwheel's policies cover, so the policy fields are set."""

    report: WheelReport
    config: GateConfig
    resolution: Resolution
    name_error: str | None = None  # why the file name is not a wheel file name
    file_tags: tuple[str, ...] = ()  # the file name's platform tags
    tag_arch: str | None = None
    tag_libc: Libc | None = None
    unknown_machines: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (machine described, members)
    machines: tuple[str, ...] = ()  # the architectures of the host ELFs
    arch: str | None = None
    arch_mismatch: ElfInfo | None = None  # a host ELF of ``arch`` when the file name names another
    host: tuple[ElfInfo, ...] = ()
    libc: Libc = "glibc"
    libc_known: bool = False  # the ELFs decided the libc (a static binary runs under either)
    mixed_libc: tuple[tuple[str, ...], tuple[str, ...]] | None = None  # (musl members, glibc members)
    uncovered: bool = False  # auditwheel's policies of that libc do not cover the architecture
    pols: tuple[Policy, ...] = ()  # the verdict policies for arch and libc, best first
    sym: Policy | None = None
    lib: Policy | None = None
    libraries: tuple[LibraryUse, ...] = ()
    symbols: tuple[SymbolMax, ...] = ()
    claimed: tuple[tuple[str, Policy], ...] = ()  # file name tag -> the policy it stands for
    claim_notes: tuple[tuple[str, str], ...] = ()  # (tag, why the closest policy stands for it)
    other_arch_tags: tuple[str, ...] = ()
    other_libc_tags: tuple[str, ...] = ()
    target: Policy | None = None
    policy_problems: tuple[PolicyProblem, ...] = ()
    gfx: tuple[GfxObject, ...] = ()
    #: the ``torch-abi`` judgement (None: no torch to check against)
    torch_abi: TorchAbiResult | None = None
    #: a Python-independent wheel's host code judged against its tag's claim (``job-identity``;
    #: :func:`buildkit.judge.wheel.python_abi_for`), None: not read (no such claim, or ``diff``)
    python_abi: PythonAbiResult | None = None
    device: DeviceCode = DeviceCode()  # device code per gfx target and per bundle
    #: a stable-ABI wheel's needs from torch judged against its declared lowest torch
    #: (``torch-stable-abi``; :func:`buildkit.gate.torchshim.judge_stable`), None: not one
    torch_stable: StableAbiResult | None = None
    #: the disassembly of each x86_64 host ELF (``host-isa``; :func:`buildkit.inspect.isa.host_isa_of`),
    #: None: not scanned
    host_isa: tuple[ElfIsa, ...] | None = None
    #: (member, symbol version) pairs -> the imports bound to them, read from the wheel by the caller
    #: (:func:`buildkit.judge.needers.reader`) only for a ``ceiling`` error; None: not named
    needers: Needers | None = None

    @property
    def judged(self) -> bool:
        return bool(self.pols)


def needs(elf: ElfInfo) -> dict[str, tuple[str, ...]]:
    """Version needs without the dynamic loader's (auditwheel ignores ``ld-linux*``)."""
    return {lib: tuple(vs) for lib, vs in elf.version_needs.items() if not is_dynamic_loader(lib)}


def gather(
    report: WheelReport,
    config: GateConfig,
    *,
    torch_abi: TorchAbiResult | None = None,
    python_abi: PythonAbiResult | None = None,
    torch_stable: StableAbiResult | None = None,
    host_isa: tuple[ElfIsa, ...] | None = None,
    needers: Needers | None = None,
) -> Facts:
    """The facts of one inspected wheel under one configuration (``torch_abi``: the wheel judged
    against a torch, :func:`buildkit.gate.torchabi.judge`; ``python_abi``: against its tag's claim;
    ``torch_stable``: against its stable-ABI claim)."""
    values: dict[str, object] = {
        "torch_abi": torch_abi,
        "python_abi": python_abi,
        "torch_stable": torch_stable,
        "host_isa": host_isa,
        "needers": needers,
    }
    resolution = resolve_libraries(report.elves)
    try:
        _, _, _, tags = parse_wheel_filename(report.filename)
    except InvalidWheelFilename as exc:
        values["name_error"] = str(exc)
        tag_arch, tag_libc = None, None
    else:
        values["file_tags"], tag_arch, tag_libc = _file_platform_tags(tuple(t.platform for t in tags))
    values.update(tag_arch=tag_arch, tag_libc=tag_libc)
    arch = _host_arch(report.elves, tag_arch, values)
    host = tuple(e for e in report.elves if arch is not None and elf_arch(e) == arch)
    values.update(arch=arch, host=host, libc=tag_libc or "glibc")
    if arch is not None and host:
        _platform(host, arch, tag_libc, report, config, resolution, values)
    values["gfx"] = _gfx_objects(report.elves, report.code_objects)
    values["device"] = device_code(report)
    return Facts(report=report, config=config, resolution=resolution, **values)  # type: ignore[arg-type]


def _platform(
    host: Sequence[ElfInfo],
    arch: str,
    tag_libc: Libc | None,
    report: WheelReport,
    config: GateConfig,
    resolution: Resolution,
    values: dict[str, object],
) -> None:
    libc, libc_known = _wheel_libc(host, tag_libc, values)
    values.update(libc=libc, libc_known=libc_known)
    if arch not in known_archs(libc):
        values["uncovered"] = True
        return
    pols = verdict_policies(arch, libc)
    all_versions = {v for e in host for vs in needs(e).values() for v in vs}
    libraries = _classify_libraries(host, config.exclude_globs, pols, resolution)
    if config.rocm_pip is not None:
        libraries = _from_dependency(libraries, host, config.rocm_pip, report.metadata_requires)
    file_tags: tuple[str, ...] = values.get("file_tags", ())  # type: ignore[assignment]
    claimed = _claimed_policies(file_tags, arch, libc, values)
    values.update(
        pols=tuple(pols),
        sym=best_symbol_policy(all_versions, arch, libc),
        libraries=libraries,
        lib=_library_policy(libraries, pols),
        symbols=_symbol_maxima(host),
        claimed=claimed,
        target=_target_policy(config, claimed, arch, libc, values),
    )


def _file_platform_tags(platforms_found: Sequence[str]) -> tuple[tuple[str, ...], str | None, Libc | None]:
    """The file name's platform tags, the architecture they name and the libc a musllinux or
    manylinux tag implies (None: no such tag)."""
    platforms = tuple(sorted(set(platforms_found)))
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


def elf_arch(e: ElfInfo) -> str | None:
    """The wheel architecture of a host ELF (auditwheel's mapping), None for a machine, class and byte
    order no policy covers."""
    if (e.machine, e.elf_class) == ("ppc64", 64):
        return "ppc64le" if e.endian == "little" else "ppc64"
    arch, order = _ELF_ARCHES.get((e.machine, e.elf_class), (None, None))
    return arch if order == e.endian else None


def _host_arch(elves: Sequence[ElfInfo], tag_arch: str | None, values: dict[str, object]) -> str | None:
    """The wheel's architecture: the host ELFs', the file name's when they agree or there are none."""
    unknown: dict[str, list[str]] = {}
    arches: dict[str, list[ElfInfo]] = {}
    for e in elves:
        arch = elf_arch(e)
        if arch is None:
            unknown.setdefault(f"{e.machine} ({e.elf_class}-bit, {e.endian}-endian)", []).append(e.member)
        else:
            arches.setdefault(arch, []).append(e)
    values["unknown_machines"] = tuple((m, tuple(ms)) for m, ms in sorted(unknown.items()))
    machines = sorted(arches)
    values["machines"] = tuple(machines)
    if not machines:
        return tag_arch
    arch = tag_arch if tag_arch in machines else machines[0]
    if tag_arch is not None and tag_arch != arch:
        values["arch_mismatch"] = arches[arch][0]
    return arch


def _wheel_libc(
    host: Sequence[ElfInfo], tag_libc: Libc | None, values: dict[str, object]
) -> tuple[Libc, bool]:
    """The libc the host ELFs link (auditwheel's rule, from DT_NEEDED), else the file name's; and
    whether the ELFs decided it (a static binary links no libc: it runs under either)."""
    musl = tuple(e.member for e in host if any(n.startswith(_MUSL_NEEDS) for n in e.needed))
    glibc = tuple(
        e.member for e in host if any(n == "libc.so.6" or n.startswith(_GLIBC_NEEDS) for n in e.needed)
    )
    if musl and glibc:
        values["mixed_libc"] = (musl, glibc)
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


def _from_dependency(
    libraries: Sequence[LibraryUse], host: Sequence[ElfInfo], pip: RocmFromPip, requires: Sequence[str]
) -> tuple[LibraryUse, ...]:
    """ROCm from pip: a library every needing member reaches in an installed SDK wheel is
    ``dependency``, its detail the wheel and file ("rocm-sdk-core 7.2.4: _rocm_sdk_core/lib/...")."""
    installed = installed_closure(sdk_requirements(requires, pip.release), pip.release)
    by_member = {e.member: e for e in host}
    out = []
    for use in libraries:
        if use.status != "grafted":
            found = {provider(by_member[m], use.library, pip.release, installed) for m in use.needed_by}
            if None not in found and found:
                first = sorted(found, key=str)[0]
                assert first is not None
                detail = f"{first.dist} {pip.release.version}: {first.path}"
                use = LibraryUse(use.library, "dependency", use.needed_by, detail)
        out.append(use)
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
        for lib, versions in needs(e).items():
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
    file_tags: Sequence[str], arch: str, libc: Libc, values: dict[str, object]
) -> tuple[tuple[str, Policy], ...]:
    """The policies the file name's manylinux/musllinux tags of the wheel's architecture and libc
    stand for (:func:`policy_for`: never an error for a PEP 600 name auditwheel has no entry for);
    tags of another architecture or libc are recorded (the ``platform-tag`` rule judges them)."""
    claimed: list[tuple[str, Policy]] = []
    notes: list[tuple[str, str]] = []
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
                notes.append((tag, note))
            claimed.append((tag, pol))
    values.update(
        claim_notes=tuple(notes), other_arch_tags=tuple(other_arch), other_libc_tags=tuple(other_libc)
    )
    return tuple(claimed)


def _target_policy(
    config: GateConfig,
    claimed: Sequence[tuple[str, Policy]],
    arch: str,
    libc: Libc,
    values: dict[str, object],
) -> Policy | None:
    """The configured policy for the wheel's architecture (problems recorded when it names another
    architecture or libc, or auditwheel has nothing that close), else the strictest claimed tag's."""
    if config.policy is None:
        # the strictest claim is the most compatible tag (highest priority): the wheel must hold it
        return max((pol for _, pol in claimed), key=lambda p: p.strictness, default=None)
    problems: list[PolicyProblem] = []
    base, named_arch = split_policy_name(config.policy)
    if named_arch is not None and named_arch != arch:
        problems.append(PolicyProblem("arch", named_arch))
    if base != "linux" and libc_of(base) != libc:
        problems.append(PolicyProblem("libc", libc_of(base)))
        values["policy_problems"] = tuple(problems)
        return None
    pol, note = policy_for(base, arch, libc)
    if note:
        problems.append(PolicyProblem("note", note))
    values["policy_problems"] = tuple(problems)
    return pol


def _gfx_objects(elves: Sequence[ElfInfo], code_objects: Sequence[CodeObject]) -> tuple[GfxObject, ...]:
    out = [GfxObject(e.member, "bundle", e.gfx_targets) for e in elves if e.gfx_targets]
    out += [GfxObject(c.member, "code-object", (c.target_id,)) for c in code_objects]
    return tuple(sorted(out, key=lambda g: g.file))
