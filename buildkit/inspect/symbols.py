"""Which undefined dynamic symbols an inspection keeps the names of
(:attr:`~buildkit.inspect.models.ElfInfo.undefined_of_interest`).

A library may import 10^5 symbols; the gate needs only those some rule names: auditwheel's
blacklisted symbols (``"blacklist"`` of each policy in the installed auditwheel's policy files: a
symbol a whitelisted library exports only in newer releases, ``uncompress2`` of ``libz.so.1``) and
the ``PyFPE_*`` symbols no manylinux Python provides (auditwheel's ``pyfpe`` check). The files are
read from the installed auditwheel package, never copied.
"""

from __future__ import annotations

from functools import cache

from buildkit.policy import LIBCS, policy_json

#: what auditwheel's ``elf_references_pyfpe_jbuf`` looks for
PYFPE_SYMBOLS: frozenset[str] = frozenset({"PyFPE_jbuf", "PyFPE_dummy", "PyFPE_counter"})


def blacklisted_symbols() -> frozenset[str]:
    """Every symbol name some policy of the installed auditwheel blacklists (any library, any policy)."""
    names: set[str] = set()
    for libc in LIBCS:
        for policy in policy_json(libc):
            blacklist = policy.get("blacklist", {})
            assert isinstance(blacklist, dict)
            for symbols in blacklist.values():
                names.update(str(symbol) for symbol in symbols)
    names.discard("*")  # auditwheel's wildcard: matches any ELF needing the library, no name to keep
    return frozenset(names)


@cache
def default_symbols_of_interest() -> frozenset[str]:
    """:func:`blacklisted_symbols` and :data:`PYFPE_SYMBOLS`: what ``inspect_wheel`` keeps by default."""
    return blacklisted_symbols() | PYFPE_SYMBOLS
