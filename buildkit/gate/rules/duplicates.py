"""The ``duplicate-member`` rule: identical members stored more than once (issue 30).

The wheel format has no symbolic links, so a library's SONAME chain (``libX.so -> libX.so.0 ->
libX.so.0.25.3``) copied into a wheel is stored as three files, and installed as three: a 111 MB
library costs 333 MB on disk. ``auditwheel repair`` keeps such links as files too. Members are
identical when they have the same size and the same hash: the digest the inspection computed while
verifying the RECORD, or (``--no-verify-record``) the hash RECORD declares. Members smaller than
:data:`MIN_BYTES` are left out: empty ``__init__.py`` files and ``py.typed`` markers are identical by
design and cost nothing.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from typing import NamedTuple

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule
from buildkit.inspect.models import WheelReport
from buildkit.units import format_size

#: copies smaller than this are not reported (identical small files are common and cheap)
MIN_BYTES = 4096

DUPLICATE_MEMBER = Rule(
    "duplicate-member",
    ("warning",),
    checks=(
        "Members of the same size and hash (the digest verified against RECORD, else RECORD's) stored "
        "more than once, each at least 4 KiB: every copy is named with the bytes the copies waste "
        "installed and in the wheel; for a shared library, the file its SONAME names is the one to keep. "
        "The `size` rule's findings say how much of the wheel the copies are."
    ),
    prevents=(
        "A SONAME chain (libX.so, libX.so.0, libX.so.0.25.3) stored as copies: the wheel ships and "
        "installs the same library several times (the wheel format has no symlinks, and auditwheel "
        "repair keeps links as files)."
    ),
)

RULES = (DUPLICATE_MEMBER,)


class Duplicates(NamedTuple):
    """Identical members: ``keep`` (the one to ship: the file the SONAME names when a copy has one),
    the ``copies`` beside it, one member's ``size``, and what the copies cost: ``wasted`` installed
    bytes and ``wasted_compressed`` bytes of the wheel file."""

    keep: str
    copies: tuple[str, ...]
    size: int
    wasted: int
    wasted_compressed: int
    soname: str | None


def duplicate_groups(report: WheelReport) -> tuple[Duplicates, ...]:
    """Every set of identical members of at least :data:`MIN_BYTES`, largest waste first."""
    declared = {r.path: r.hash for r in report.record}
    groups: dict[tuple[int, str], list[str]] = {}
    for f in report.files:
        digest = f.hash or declared.get(f.name)
        if f.size >= MIN_BYTES and digest:
            groups.setdefault((f.size, digest), []).append(f.name)
    compressed = {s.name: s.compressed_size for s in report.stats}
    out = []
    for (size, _), names in groups.items():
        if len(names) < 2:
            continue
        sonames = {e.soname for n in names if (e := report.elf(n)) is not None and e.soname}
        soname = sorted(sonames)[0] if len(sonames) == 1 else None
        named = [n for n in names if soname is not None and posixpath.basename(n) == soname]
        keep = named[0] if named else min(names, key=lambda n: (len(n), n))
        copies = tuple(n for n in names if n != keep)
        wasted_compressed = sum(compressed.get(n, 0) for n in copies)
        out.append(Duplicates(keep, copies, size, size * len(copies), wasted_compressed, soname))
    return tuple(sorted(out, key=lambda d: (-d.wasted, d.keep)))


def wasted(groups: tuple[Duplicates, ...]) -> tuple[int, int]:
    """(installed, compressed) bytes all copies waste."""
    return sum(g.wasted for g in groups), sum(g.wasted_compressed for g in groups)


def _advice(group: Duplicates) -> str:
    if group.soname is not None:
        return (
            f"ship one file, {posixpath.basename(group.keep)} (the one the SONAME names: ld.so loads it "
            "by that name), and drop the copies; the wheel format has no symlinks, and auditwheel repair "
            "keeps links as files, so install the library without its symlink chain (CMake: "
            "NAMELINK_SKIP / no VERSION/SOVERSION on a module loaded by path)"
        )
    return f"ship one file, {group.keep}, and have the code refer to it"


def check(facts: Facts) -> Iterator[Finding]:
    for group in duplicate_groups(facts.report):
        n = len(group.copies) + 1
        yield DUPLICATE_MEMBER.warning(
            f"{group.keep} is stored {n} times (identical copies: {', '.join(group.copies)}), "
            f"{format_size(group.size)} each: {format_size(group.wasted)} wasted installed, "
            f"{format_size(group.wasted_compressed)} of the wheel; {_advice(group)}",
            file=group.keep,
            library=group.soname,
        )
