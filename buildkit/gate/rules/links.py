"""The ``symlink-member`` rule: every member is a regular file (or a folder entry)."""

from __future__ import annotations

from collections.abc import Iterator

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule

SYMLINK_MEMBER = Rule(
    "symlink-member",
    ("error",),
    checks=(
        "No member's zip external attributes (the Unix mode in their high 16 bits) make it a "
        "symbolic link, a FIFO, a device or a socket; a link is named with its target."
    ),
    prevents=(
        "`unzip` (and every tool extracting with the stored modes) recreating `pkg/passwd -> "
        "/etc/passwd` or `pkg/up -> ../../..` from the published wheel, so a later write through "
        "the link lands outside the folder, while pip writes the link text as a file: the wheel "
        "installs differently depending on who unpacks it."
    ),
    never_waived=(
        "the wheel format has no links: write the file itself (auditwheel repair keeps copies), or "
        "leave it out"
    ),
)

RULES = (SYMLINK_MEMBER,)


def check(facts: Facts) -> Iterator[Finding]:
    for special in facts.report.special_members:
        if special.kind == "symlink":
            message = (
                f"{special.member} is a symbolic link to {special.target!r} (zip external "
                "attributes S_IFLNK): unzip recreates the link; store the file itself"
            )
        else:
            message = f"{special.member} is a {special.kind} (zip external attributes), not a file"
        yield SYMLINK_MEMBER.error(message, file=special.member, symbol=special.target or None)
