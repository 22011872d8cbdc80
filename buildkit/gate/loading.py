"""How the installed wheel loads its ELF members, read from the inspection alone: where a member
lands (:func:`install_path`), what an ``$ORIGIN`` entry names (:func:`resolve_origin`), where ld.so
finds each DT_NEEDED inside the wheel (:func:`resolve_libraries`, a :class:`Resolution`), and whether a
member named like a shared library that is not ELF is loaded once installed (:func:`not_elf_load`).

The gate's facts (:mod:`buildkit.gate.facts`) count a library as grafted only where ld.so finds it;
the ``rpath``, ``load-order`` and ``inspect:not-elf-library`` rules word what this module finds.
"""

from __future__ import annotations

import posixpath
import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from buildkit.inspect.models import ElfInfo

_ORIGIN = ("$ORIGIN", "${ORIGIN}")


def install_path(member: str) -> str | None:
    """Where a member lands relative to the install root (site-packages); ``None`` for ``.data``
    categories installed elsewhere (scripts, headers, data)."""
    top, _, rest = member.partition("/")
    if top.endswith(".data"):
        category, _, inner = rest.partition("/")
        return inner if category in ("purelib", "platlib") else None
    return member


def origin_rest(entry: str) -> str | None:
    """The part after ``$ORIGIN``/``${ORIGIN}`` (``""``, ``"/../lib"``), or None when it does not start so."""
    for token in _ORIGIN:
        if entry == token or entry.startswith(token + "/"):
            return entry[len(token) :]
    return None


def resolve_origin(member: str, entry: str) -> str | None:
    """The directory (relative to the install root, ``"."`` for the root) an ``$ORIGIN`` entry of
    ``member`` names; ``".."``-prefixed when it escapes the root; None when it is not ``$ORIGIN`` or
    the member's install location is unknown."""
    rest = origin_rest(entry)
    where = install_path(member)
    if rest is None or where is None:
        return None
    return posixpath.normpath(posixpath.join(posixpath.dirname(where) or ".", "./" + rest.lstrip("/")))


PREFIX_DEPTH = 3  # site-packages -> pythonX.Y -> lib -> the environment's prefix


def escapes(path: str) -> bool:
    return path == ".." or path.startswith("../")


class Resolution(NamedTuple):
    """Where ld.so finds, inside the wheel, each DT_NEEDED of each ELF member (:func:`resolve_libraries`).

    ``found`` maps ``(member, needed name)`` to the member ld.so loads for it; a name missing there is
    not found in the wheel by any search path of that member. ``dirs`` gives each member's search
    directories in the wheel (relative to the install root, ``"."`` for the root), in search order.
    """

    found: Mapping[tuple[str, str], str]
    dirs: Mapping[str, tuple[str, ...]]

    def provider(self, member: str, name: str) -> str | None:
        return self.found.get((member, name))


def compatible(a: ElfInfo, b: ElfInfo) -> bool:
    """ld.so skips a file of another machine, class or byte order and goes on searching."""
    return (a.machine, a.elf_class, a.endian) == (b.machine, b.elf_class, b.endian)


def resolve_libraries(elves: Sequence[ElfInfo]) -> Resolution:
    """Resolve every DT_NEEDED the way ld.so does, inside the wheel: a needed name is found when a
    member with that FILE NAME (not SONAME) sits in a directory the needing object searches, and is
    an ELF of the same machine, class and byte order. The search directories of an object are its
    RUNPATH alone when it has one, else its RPATH followed by the RPATHs of the in-wheel objects that
    load it, transitively (ld.so's loader chain; a loader with a RUNPATH contributes no RPATH of its
    own but passes on what it inherited). Only ``$ORIGIN`` entries that stay inside the install root
    name wheel directories.

    Who loads whom depends on what is found, so a member whose inherited directories grow is
    resolved again (a worklist: each member's inherited set only grows, so it ends)."""
    by_member = {e.member: e for e in elves}
    at: dict[tuple[str, str], list[ElfInfo]] = {}
    for e in elves:
        at.setdefault(location(e.member), []).append(e)
    own = {e.member: dirs_of(e, e.runpath or e.rpath) for e in elves}
    passes_own = {e.member: () if e.runpath else own[e.member] for e in elves}
    inherited: dict[str, set[str]] = {e.member: set() for e in elves}
    found: dict[tuple[str, str], str] = {}
    dirs: dict[str, tuple[str, ...]] = {}
    todo = deque(by_member)
    queued = set(by_member)
    while todo:
        member = todo.popleft()
        queued.discard(member)
        e = by_member[member]
        extra = () if e.runpath else tuple(sorted(inherited[member] - set(own[member])))
        dirs[member] = own[member] + extra
        passing = set(passes_own[member]) | inherited[member]
        for name in e.needed:
            if "/" in name:  # a path: relative to the process's working directory, never the wheel
                continue
            hits = [p for d in dirs[member] for p in at.get((d, name), ()) if compatible(e, p)]
            if hits:
                found[(member, name)] = hits[0].member
            for p in hits:
                if p.member != member and not passing <= inherited[p.member]:
                    inherited[p.member] |= passing
                    if p.member not in queued:
                        todo.append(p.member)
                        queued.add(p.member)
    return Resolution(found, dirs)


def dirs_of(e: ElfInfo, entries: Iterable[str]) -> tuple[str, ...]:
    resolved = (resolve_origin(e.member, x) for x in entries)
    return tuple(dict.fromkeys(d for d in resolved if d is not None and not escapes(d)))


def location(member: str) -> tuple[str, str]:
    where = install_path(member) or member
    return posixpath.dirname(where) or ".", posixpath.basename(where)


#: an extension module's file name: a module name and one of the suffixes of
#: ``importlib.machinery.EXTENSION_SUFFIXES`` of any CPython or PyPy on Linux
#: (``.cpython-311-x86_64-linux-gnu.so``, ``.cpython-313t-...``, ``.abi3.so``, ``.pypy310-pp73-...``,
#: ``.so``)
_EXTENSION_NAME = re.compile(r"(?P<module>[^.]+)(?P<abi>\.(?:abi3|cpython-[^.]+|pypy[^.]*))?\.so")


#: folders of build-time files (headers, libraries to link with, their linker scripts): a plain
#: ``libfoo.so`` there is for the link editor, not for ``import``
DEV_AREAS = frozenset({"include", "lib", "lib64"})


def not_elf_load(member: str, elves: Sequence[ElfInfo], resolution: Resolution) -> str | None:
    """How the installed wheel loads ``member``, a file named like a shared library that is not ELF
    (so loading it fails), or None when nothing imports or loads it from where it lies.

    Loaded: a DT_NEEDED of an ELF member that ld.so looks up in ``member``'s directory before any
    ELF of that name (``invalid ELF header``); a library in a ``*.libs`` folder (auditwheel's grafted
    libraries); an extension module name (:data:`_EXTENSION_NAME`) in an importable folder (every
    folder a Python identifier), except a plain ``name.so`` under a :data:`DEV_AREAS` folder.
    Never loaded: members installed outside site-packages (``.data/{data,headers,scripts}``) and
    ``.dist-info`` files."""
    where = install_path(member)
    if where is None:
        return None
    *folders, base = where.split("/")
    if folders and folders[0].endswith(".dist-info"):
        return None
    needer = _needing(member, base, elves, resolution)
    if needer is not None:
        return f"{needer} needs {base} and ld.so opens this file for it"
    libs = next((f for f in folders if f.endswith(".libs")), None)
    if libs is not None:
        return f"ld.so loads the libraries of {libs}/ (auditwheel's grafted libraries)"
    name = _EXTENSION_NAME.fullmatch(base)
    if name is None or not all(part.isidentifier() for part in [*folders, name["module"]]):
        return None
    if name["abi"] is None and DEV_AREAS.intersection(folders):
        return None
    return f"`import {'.'.join([*folders, name['module']])}` loads it as an extension module"


def _needing(member: str, base: str, elves: Sequence[ElfInfo], resolution: Resolution) -> str | None:
    """The first ELF member whose search for DT_NEEDED ``base`` reaches ``member`` before any ELF."""
    folder = location(member)[0]
    for e in elves:
        searched = resolution.dirs.get(e.member, ())
        if base not in e.needed or folder not in searched:
            continue
        provider = resolution.provider(e.member, base)
        if provider is None or searched.index(location(provider)[0]) > searched.index(folder):
            return e.member
    return None
