"""manylinux and musllinux policies, read from the installed auditwheel package (never copied):
``auditwheel/policy/manylinux-policy.json`` and ``musllinux-policy.json``.

Consistency is auditwheel's own rule (:meth:`Policy.disallowed`); non-numeric entries
(``GLIBC_ABI_DT_RELR``, ``CXXABI_TM_1``) have no place in a numeric ceiling. :func:`policy_for`
answers for a PEP 600 name auditwheel has no entry for (``manylinux_2_29``).

musllinux: auditwheel's file whitelists ``libc.so``; like auditwheel (``_fixup_musl_libc_soname``)
that becomes the architecture's musl SONAME (``libc.musl-x86_64.so.1``). musl has no symbol versions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from pathlib import Path
from typing import Literal, NamedTuple

import auditwheel

from buildkit.errors import UsageError

#: the symbol-version prefixes the gate puts ceilings on
CEILING_PREFIXES: tuple[str, ...] = ("GLIBC", "GLIBCXX", "CXXABI", "GCC")
#: the library whose version definitions give each ceiling prefix
CEILING_PROVIDERS: dict[str, str] = {
    "GLIBC": "libc.so.6",
    "GLIBCXX": "libstdc++.so.6",
    "CXXABI": "libstdc++.so.6",
    "GCC": "libgcc_s.so.1",
}

Libc = Literal["glibc", "musl"]
LIBCS: tuple[Libc, ...] = ("glibc", "musl")
_POLICY_FILES: dict[Libc, str] = {"glibc": "manylinux-policy.json", "musl": "musllinux-policy.json"}
#: auditwheel's ``_fixup_musl_libc_soname``: the SONAME of musl's libc per wheel architecture
_MUSL_LIBC_SONAMES = {
    "x86_64": "libc.musl-x86_64.so.1",
    "i686": "libc.musl-x86.so.1",
    "aarch64": "libc.musl-aarch64.so.1",
    "s390x": "libc.musl-s390x.so.1",
    "ppc64le": "libc.musl-ppc64le.so.1",
    "armv7l": "libc.musl-armv7.so.1",
    "riscv64": "libc.musl-riscv64.so.1",
    "loongarch64": "libc.musl-loongarch64.so.1",
}

_VERSION_RE = re.compile(r"^\d+(?:\.\d+)*$")
_TAG_RE = re.compile(r"^(?P<base>manylinux(?:1|2010|2014|_\d+_\d+))_(?P<arch>.+)$")
# a policy name as --policy / a recipe / a file name's platform tag gives it
_NAME_RE = re.compile(
    r"^(?P<base>manylinux(?:1|2010|2014|_\d+_\d+)|musllinux_\d+_\d+|linux)(?:_(?P<arch>.+))?$"
)
_NUMBERED_RE = re.compile(r"^(?:many|musl)linux_(\d+)_(\d+)$")
_LEGACY_ALIASES = {
    "manylinux1": "manylinux_2_5",
    "manylinux2010": "manylinux_2_12",
    "manylinux2014": "manylinux_2_17",
}


def split_symbol_version(symbol_version: str) -> tuple[str, str]:
    """``"GLIBCXX_3.4.29"`` -> ``("GLIBCXX", "3.4.29")``; auditwheel splits at the first ``_``."""
    prefix, _, version = symbol_version.partition("_")
    return prefix, version


@lru_cache(maxsize=4096)  # a wheel names a few dozen versions thousands of times (scipy: 4,600 calls)
def version_tuple(version: str) -> tuple[int, ...] | None:
    """``"3.4.29"`` -> ``(3, 4, 29)``; ``None`` when it is not a dotted number (``TM_1``, ``PRIVATE``)."""
    if not _VERSION_RE.match(version):
        return None
    return tuple(int(part) for part in version.split("."))


def tighten(base: Mapping[str, str], *others: Mapping[str, str]) -> dict[str, str]:
    """Per prefix the lowest of the given ceilings (e.g. a policy's and an image's)."""
    out = dict(base)
    for other in others:
        for prefix, value in other.items():
            cur = out.get(prefix)
            if cur is None or (version_tuple(value) or ()) < (version_tuple(cur) or ()):
                out[prefix] = value
    return out


@lru_cache(maxsize=4096)
def symbol_version_key(symbol_version: str) -> tuple[int, ...] | None:
    """Sort key of a full symbol version (``"GLIBC_2.34"`` -> ``(2, 34)``), ``None`` if not numeric."""
    return version_tuple(split_symbol_version(symbol_version)[1])


def libc_of(base: str) -> Libc:
    """The libc a policy name is for: ``musllinux_1_2`` -> ``musl``, anything else ``glibc``."""
    return "musl" if base.startswith("musllinux") else "glibc"


def _numbered(base: str) -> tuple[int, int] | None:
    """``manylinux_2_28`` -> ``(2, 28)`` (the glibc version), ``musllinux_1_2`` -> ``(1, 2)``;
    legacy aliases too (``manylinux2014`` -> ``(2, 17)``); None for ``linux``."""
    m = _NUMBERED_RE.match(_LEGACY_ALIASES.get(base, base))
    return (int(m.group(1)), int(m.group(2))) if m else None


class Policy(NamedTuple):
    """One policy for one architecture, as auditwheel's policy file states it (or, for a PEP 600 name
    the file has no entry for, as :func:`policy_for` derives it: ``basis`` names the entry used)."""

    name: str  # "manylinux_2_28" (no architecture suffix); "linux" for the catch-all
    arch: str  # "x86_64"
    aliases: tuple[str, ...]  # ("manylinux2014",)
    priority: int  # higher = more compatible; "linux" is 0
    symbol_versions: Mapping[str, frozenset[str]]  # prefix -> {"2.2.5", ...}
    whitelist: frozenset[str]
    blacklist: Mapping[str, frozenset[str]]  # library -> symbol names
    libc: Libc = "glibc"
    basis: str | None = None  # the file's policy a derived one is built on ("manylinux_2_28")

    @property
    def tag(self) -> str:
        """The platform tag: ``manylinux_2_28_x86_64``."""
        return f"{self.name}_{self.arch}"

    @property
    def strictness(self) -> tuple[int, tuple[int, ...]]:
        """Sort key, larger = more compatible (stricter to meet): the priority, then the older name."""
        return self.priority, tuple(-n for n in _numbered(self.name) or ())

    def ceiling(self, prefix: str) -> str | None:
        """Highest numeric version the policy allows for ``prefix`` (``None`` if unconstrained)."""
        versions = [v for v in self.symbol_versions.get(prefix, ()) if version_tuple(v) is not None]
        if not versions:
            return None
        return max(versions, key=lambda v: version_tuple(v) or ())

    def ceilings(self) -> dict[str, str]:
        """Ceilings of :data:`CEILING_PREFIXES` (``{"GLIBC": "2.28", "GLIBCXX": "3.4.24", ...}``)."""
        out: dict[str, str] = {}
        for prefix in CEILING_PREFIXES:
            top = self.ceiling(prefix)
            if top is not None:
                out[prefix] = top
        return out

    def disallowed(self, symbol_versions: Iterable[str]) -> list[str]:
        """The symbol versions (``GLIBC_2.34``, ``GLIBC_ABI_DT_RELR``, ``LIBATOMIC_1.0``) this policy
        does not allow, auditwheel's rule: every prefix the policy lists is constrained to the
        versions listed (an empty list allows none); a prefix it does not list (``hip_4.2``) is not."""
        if self.name == "linux":
            return []
        bad = []
        for sv in symbol_versions:
            prefix, version = split_symbol_version(sv)
            allowed = self.symbol_versions.get(prefix)
            if allowed is not None and version not in allowed:
                bad.append(sv)
        return sorted(set(bad))

    def allows_library(self, soname: str) -> bool:
        if self.name == "linux":
            return True
        if self.libc == "musl" and _is_musl_builtin(soname):
            return True
        return soname in self.whitelist or is_dynamic_loader(soname)


#: the names musl's dynamic loader answers with itself (``reserved`` in musl's ldso/dynlink.c): a
#: musl program asking for ``libc.so`` (what Rust's musl target links) or ``libpthread.so`` gets
#: musl's libc, never a file. auditwheel maps only its whitelist's ``libc.so`` to musl's SONAME and,
#: on a glibc host, calls a DT_NEEDED ``libc.so`` external (a deliberate difference).
_MUSL_BUILTINS = re.compile(r"^lib(?:c|pthread|rt|m|dl|util|xnet)\.so(?:\.[0-9.]+)?$")


def _is_musl_builtin(soname: str) -> bool:
    """``libc.so``, ``libm.so``, ``libpthread.so.0`` ...: served by musl's loader itself."""
    return _MUSL_BUILTINS.match(soname) is not None


def is_dynamic_loader(soname: str) -> bool:
    """The ELF interpreter is never an external library (auditwheel's rule)."""
    return "ld-linux" in soname or soname in ("ld64.so.1", "ld64.so.2")


def _auditwheel_policy_folder() -> Path:
    """The installed auditwheel's ``policy/`` folder (a plain package on disk: read as files, without
    importlib.resources' import cost)."""
    return Path(auditwheel.__file__).parent / "policy"


def _auditwheel_version() -> str:
    from importlib import metadata  # only for reports that name auditwheel's version (start-up time)

    try:
        return metadata.version("auditwheel")
    except metadata.PackageNotFoundError:  # pragma: no cover - the policy files come from it
        return "(unknown version)"


@cache
def policy_json(libc: Libc = "glibc") -> list[dict[str, object]]:
    """auditwheel's policy file for ``libc``, parsed once per process (the policies here and the
    symbols of interest of :mod:`buildkit.inspect.symbols` both read it)."""
    data: list[dict[str, object]] = json.loads(
        (_auditwheel_policy_folder() / _POLICY_FILES[libc]).read_text("utf-8")
    )
    return data


@cache
def known_archs(libc: Libc = "glibc") -> frozenset[str]:
    """The architectures some policy of ``libc`` covers (``x86_64``, ``ppc64le``, ...)."""
    out: set[str] = set()
    for raw in policy_json(libc):
        sym = raw["symbol_versions"]
        assert isinstance(sym, dict)
        out |= {str(a) for a in sym}
    return frozenset(out)


def _whitelist(raw: object, libc: Libc, arch: str) -> frozenset[str]:
    assert isinstance(raw, list)
    names = [str(w) for w in raw]
    if libc == "musl":
        names = [_MUSL_LIBC_SONAMES.get(arch, n) if n == "libc.so" else n for n in names]
    return frozenset(names)


@cache
def policies(arch: str = "x86_64", libc: Libc = "glibc") -> tuple[Policy, ...]:
    """All policies of ``libc`` that exist for ``arch``, best (highest priority) first, ``linux`` last."""
    out = []
    for raw in policy_json(libc):
        name = str(raw["name"])
        sym_all = raw["symbol_versions"]
        assert isinstance(sym_all, dict)
        if name != "linux" and arch not in sym_all:
            continue
        sym = {} if name == "linux" else {k: frozenset(v) for k, v in sym_all[arch].items()}
        aliases = raw.get("aliases", [])
        blacklist = raw.get("blacklist", {})
        assert isinstance(aliases, list) and isinstance(blacklist, dict)
        priority = raw["priority"]
        assert isinstance(priority, int)
        out.append(
            Policy(
                name=name,
                arch=arch,
                aliases=tuple(str(a) for a in aliases),
                priority=priority,
                symbol_versions=sym,
                whitelist=_whitelist(raw.get("lib_whitelist", []), libc, arch),
                blacklist={str(k): frozenset(v) for k, v in blacklist.items()},
                libc=libc,
            )
        )
    if len(out) <= 1:
        raise UsageError(f"auditwheel's {libc} policy file has no policy for architecture {arch!r}")
    return tuple(sorted(out, key=lambda p: p.priority, reverse=True))


def verdict_policies(arch: str, libc: Libc = "glibc") -> tuple[Policy, ...]:
    """The policies a verdict (symbol, library, overall tag) chooses from, best first, ``linux`` last.

    glibc: all of them. musl: the newest musllinux policy and ``linux``, as ``auditwheel show`` does
    on a host without musl: musl has no symbol versions, so nothing in the ELF tells musl 1.1 from 1.2.
    """
    pols = policies(arch, libc)
    if libc == "glibc":
        return pols
    return pols[-2], pols[-1]


def linux_policy(arch: str = "x86_64", libc: Libc = "glibc") -> Policy:
    return policies(arch, libc)[-1]


def split_policy_name(name: str) -> tuple[str, str | None]:
    """A policy name as given (``manylinux_2_28``, ``manylinux2014_aarch64``, ``musllinux_1_2``,
    ``manylinux_2_29``, ``linux_x86_64``) -> ``(base, arch or None)``, legacy aliases normalised
    (``manylinux2014`` -> ``manylinux_2_17``). Any PEP 600 ``manylinux_X_Y`` or ``musllinux_X_Y`` is
    accepted, known to auditwheel or not (:func:`policy_for`); anything else, or an architecture no
    policy covers, is a :class:`UsageError` naming the known policies."""
    m = _NAME_RE.match(name.strip())
    archs = known_archs("glibc") | known_archs("musl")
    if m is None or (m.group("arch") is not None and m.group("arch") not in archs):
        known = ", ".join(p.name for p in (*policies("x86_64"), *policies("x86_64", "musl")[:-1]))
        what = (
            f"unknown architecture {m.group('arch')!r} in policy {name!r}"
            if m
            else f"unknown policy {name!r}"
        )
        raise UsageError(
            f"{what}; give a manylinux policy (PEP 600 manylinux_X_Y, or manylinux1/2010/2014) or "
            f"musllinux_X_Y, optionally with an architecture suffix ({', '.join(sorted(archs))}); "
            f"auditwheel {_auditwheel_version()} knows: {known}"
        )
    base = m.group("base")
    return _LEGACY_ALIASES.get(base, base), m.group("arch")


def policy_tag(name: str, default_arch: str = "x86_64") -> str:
    """The platform tag a policy name gives: ``manylinux2014`` -> ``manylinux_2_17_x86_64``,
    ``manylinux_2_29_aarch64`` -> itself, ``musllinux_1_2`` -> ``musllinux_1_2_x86_64``
    (:func:`split_policy_name` rules: a garbage name is a :class:`UsageError`)."""
    base, arch = split_policy_name(name)
    return f"{base}_{arch or default_arch}"


def policy_for(base: str, arch: str, libc: Libc | None = None) -> tuple[Policy, str | None]:
    """The policy a (PEP 600) name stands for on ``arch``, and a note when auditwheel has no policy
    that close. Never raises for a name :func:`split_policy_name` accepts and an architecture in
    :func:`known_archs` of the name's libc (``libc`` only says which ``linux`` is meant).

    * a name auditwheel's file has: that policy, no note;
    * between two of the file's policies (``manylinux_2_29``..``_2_30``, ``_2_32``, ``_2_33``): the
      highest one below (its libraries, GLIBCXX, CXXABI, ... and non-numeric GLIBC entries), with the
      GLIBC versions the file lists that are at most the name's glibc (GLIBC_2.29, GLIBC_2.30 for
      manylinux_2_30); no note;
    * above every policy of the file (a future ``manylinux_2_42``): the highest one, with a note;
    * below every policy for the architecture: the lowest one, its GLIBC versions cut at the name's
      glibc, with a note.
    """
    if base == "linux":
        return linux_policy(arch, libc or "glibc"), None
    libc = libc_of(base)
    known = [p for p in policies(arch, libc) if p.name != "linux"]
    for p in known:
        if base == p.name or base in p.aliases:
            return p, None
    want = _numbered(base)
    assert want is not None, base
    lower = [p for p in known if (_numbered(p.name) or ()) <= want]
    basis = (
        max(lower, key=lambda p: _numbered(p.name) or ())
        if lower
        else min(known, key=lambda p: _numbered(p.name) or ())
    )
    note = None
    if not lower:
        note = (
            f"auditwheel {_auditwheel_version()} has no {arch} policy as old as {base}: judged by "
            f"{basis.name}'s rules" + (f" with GLIBC up to {want[0]}.{want[1]}" if libc == "glibc" else "")
        )
    elif not any((_numbered(p.name) or ()) > want for p in known):
        note = (
            f"auditwheel {_auditwheel_version()} knows no policy as new as {base}: judged as {basis.name}, "
            f"the newest it has for {arch}"
        )
    symbols = dict(basis.symbol_versions)
    if libc == "glibc" and "GLIBC" in symbols:
        listed = {
            v for p in known for v in p.symbol_versions.get("GLIBC", ()) if version_tuple(v) is not None
        }
        upto = {v for v in listed if (version_tuple(v) or ()) <= want}
        kept = {v for v in symbols["GLIBC"] if version_tuple(v) is None} if lower else set()
        symbols["GLIBC"] = frozenset(upto | kept)
    return basis._replace(name=base, aliases=(), symbol_versions=symbols, basis=basis.name), note


def get_policy(name: str, arch: str = "x86_64") -> Policy:
    """Look a policy of auditwheel's files up by name or alias, with or without the architecture
    suffix: ``manylinux_2_28``, ``manylinux2014``, ``manylinux_2_28_x86_64``, ``musllinux_1_2`` all
    work; a name the files do not have raises :class:`UsageError` listing the known ones (the gate
    judges other PEP 600 names with :func:`policy_for`)."""
    base = name
    m = _TAG_RE.match(name)
    if m and m.group("arch") == arch:
        base = m.group("base")
    elif name.endswith(f"_{arch}") and name.startswith(("linux", "musllinux")):
        base = name.removesuffix(f"_{arch}")
    base = _LEGACY_ALIASES.get(base, base)
    libc = libc_of(base)
    if arch in known_archs(libc):
        for p in policies(arch, libc):
            if base == p.name or base in p.aliases:
                return p
    known = ", ".join(p.name for p in policies(arch)) if arch in known_archs() else "none"
    raise UsageError(f"unknown manylinux policy {name!r} for {arch}; known: {known}")


def parse_platform_tag(tag: str) -> tuple[str, str] | None:
    """``manylinux_2_28_x86_64`` -> ``("manylinux_2_28", "x86_64")``; legacy aliases normalised.

    ``None`` for tags that are not manylinux tags (``linux_x86_64``, ``musllinux_1_2_x86_64``, ``any``).
    """
    m = _TAG_RE.match(tag)
    if not m:
        return None
    base = m.group("base")
    return _LEGACY_ALIASES.get(base, base), m.group("arch")


def parse_policy_tag(tag: str) -> tuple[str, str, Libc] | None:
    """A manylinux or musllinux platform tag -> ``(base, arch, libc)``: ``musllinux_1_2_x86_64`` ->
    ``("musllinux_1_2", "x86_64", "musl")``; ``None`` for ``linux_*``, ``any`` and other platforms."""
    m = _NAME_RE.match(tag)
    if m is None or m.group("base") == "linux" or m.group("arch") is None:
        return None
    base = _LEGACY_ALIASES.get(m.group("base"), m.group("base"))
    return base, m.group("arch"), libc_of(base)


def best_symbol_policy(symbol_versions: Iterable[str], arch: str = "x86_64", libc: Libc = "glibc") -> Policy:
    """The best policy whose symbol versions admit all of ``symbol_versions`` (auditwheel's sym_tag)."""
    needed = set(symbol_versions)
    pols = verdict_policies(arch, libc)
    for p in pols:
        if not p.disallowed(needed):
            return p
    return pols[-1]  # pragma: no cover - linux allows everything
