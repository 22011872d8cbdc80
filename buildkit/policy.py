"""manylinux policies, read from the installed auditwheel package (never copied).

auditwheel ships ``auditwheel/policy/manylinux-policy.json``: for each policy (``manylinux_2_28``
...) its priority, aliases (``manylinux2014``), the symbol versions it allows per architecture and
prefix (``GLIBC`` -> ``2.2.5`` ... ``2.28``), its library whitelist and its blacklisted symbols.
This module reads that file through :mod:`importlib.resources` and answers the questions the gate
asks:

* which policies a set of required symbol versions is consistent with (auditwheel's own rule: for
  every prefix the policy knows, each required version must be one the policy lists);
* the numeric ceiling of each prefix in a policy (``GLIBCXX`` -> ``3.4.24`` for manylinux_2_28;
  non-numeric entries such as ``TM_1`` or ``ABI_DT_RELR`` are not versions and are skipped);
* comparing symbol versions as integer tuples (``GLIBC_2.9`` < ``GLIBC_2.28``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

from buildkit.errors import UsageError

#: the symbol-version prefixes the gate puts ceilings on
CEILING_PREFIXES: tuple[str, ...] = ("GLIBC", "GLIBCXX", "CXXABI", "GCC")

_VERSION_RE = re.compile(r"^\d+(?:\.\d+)*$")
_TAG_RE = re.compile(r"^(?P<base>manylinux(?:1|2010|2014|_\d+_\d+))_(?P<arch>.+)$")
_LEGACY_ALIASES = {
    "manylinux1": "manylinux_2_5",
    "manylinux2010": "manylinux_2_12",
    "manylinux2014": "manylinux_2_17",
}


def split_symbol_version(symbol_version: str) -> tuple[str, str]:
    """``"GLIBCXX_3.4.29"`` -> ``("GLIBCXX", "3.4.29")``; auditwheel splits at the first ``_``."""
    prefix, _, version = symbol_version.partition("_")
    return prefix, version


def version_tuple(version: str) -> tuple[int, ...] | None:
    """``"3.4.29"`` -> ``(3, 4, 29)``; ``None`` when it is not a dotted number (``TM_1``, ``PRIVATE``)."""
    if not _VERSION_RE.match(version):
        return None
    return tuple(int(part) for part in version.split("."))


def symbol_version_key(symbol_version: str) -> tuple[int, ...] | None:
    """Sort key of a full symbol version (``"GLIBC_2.34"`` -> ``(2, 34)``), ``None`` if not numeric."""
    return version_tuple(split_symbol_version(symbol_version)[1])


@dataclass(frozen=True)
class Policy:
    """One manylinux policy for one architecture, as auditwheel's policy file states it."""

    name: str  # "manylinux_2_28" (no architecture suffix); "linux" for the catch-all
    arch: str  # "x86_64"
    aliases: tuple[str, ...]  # ("manylinux2014",)
    priority: int  # higher = more compatible; "linux" is 0
    symbol_versions: Mapping[str, frozenset[str]]  # prefix -> {"2.2.5", ...}
    whitelist: frozenset[str]
    blacklist: Mapping[str, frozenset[str]]  # library -> symbol names

    @property
    def tag(self) -> str:
        """The platform tag: ``manylinux_2_28_x86_64``."""
        return f"{self.name}_{self.arch}"

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
        """The symbol versions (``GLIBC_2.34``) this policy does not allow, auditwheel's rule.

        A prefix the policy does not know (``hip_4.2``, ``FOO_1.0``) is not constrained.
        """
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
        return soname in self.whitelist or is_dynamic_loader(soname)


def is_dynamic_loader(soname: str) -> bool:
    """The ELF interpreter is never an external library (auditwheel's rule)."""
    return "ld-linux" in soname or soname in ("ld64.so.1", "ld64.so.2")


@cache
def _policy_json() -> list[dict[str, object]]:
    text = (
        resources.files("auditwheel").joinpath("policy").joinpath("manylinux-policy.json").read_text("utf-8")
    )
    data: list[dict[str, object]] = json.loads(text)
    return data


@cache
def policies(arch: str = "x86_64") -> tuple[Policy, ...]:
    """All manylinux policies that exist for ``arch``, best (highest priority) first, ``linux`` last."""
    out = []
    for raw in _policy_json():
        name = str(raw["name"])
        sym_all = raw["symbol_versions"]
        assert isinstance(sym_all, dict)
        if name != "linux" and arch not in sym_all:
            continue
        sym = {} if name == "linux" else {k: frozenset(v) for k, v in sym_all[arch].items()}
        aliases = raw.get("aliases", [])
        whitelist = raw.get("lib_whitelist", [])
        blacklist = raw.get("blacklist", {})
        assert isinstance(aliases, list) and isinstance(whitelist, list) and isinstance(blacklist, dict)
        priority = raw["priority"]
        assert isinstance(priority, int)
        out.append(
            Policy(
                name=name,
                arch=arch,
                aliases=tuple(str(a) for a in aliases),
                priority=priority,
                symbol_versions=sym,
                whitelist=frozenset(str(w) for w in whitelist),
                blacklist={str(k): frozenset(v) for k, v in blacklist.items()},
            )
        )
    if len(out) <= 1:
        raise UsageError(f"auditwheel's policy file has no manylinux policy for architecture {arch!r}")
    return tuple(sorted(out, key=lambda p: p.priority, reverse=True))


def linux_policy(arch: str = "x86_64") -> Policy:
    return policies(arch)[-1]


def get_policy(name: str, arch: str = "x86_64") -> Policy:
    """Look a policy up by name or alias, with or without the architecture suffix.

    ``manylinux_2_28``, ``manylinux2014``, ``manylinux_2_28_x86_64`` all work; an unknown name raises
    :class:`UsageError` listing the known ones.
    """
    base = name
    m = _TAG_RE.match(name)
    if m and m.group("arch") == arch:
        base = m.group("base")
    elif name.endswith(f"_{arch}") and name.startswith("linux"):
        base = "linux"
    base = _LEGACY_ALIASES.get(base, base)
    for p in policies(arch):
        if base == p.name or base in p.aliases:
            return p
    known = ", ".join(p.name for p in policies(arch))
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


def best_symbol_policy(symbol_versions: Iterable[str], arch: str = "x86_64") -> Policy:
    """The best policy whose symbol versions admit all of ``symbol_versions`` (auditwheel's sym_tag)."""
    needed = set(symbol_versions)
    for p in policies(arch):
        if not p.disallowed(needed):
            return p
    return linux_policy(arch)  # pragma: no cover - linux allows everything
