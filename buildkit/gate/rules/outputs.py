"""The ``required-member`` rule: every glob of the recipe's ``gate.require`` (or ``check
--require``) matches at least one wheel member.

A build can succeed without producing what the release is for: aiter's setup prints "PREBUILD_KERNELS
set but torch not installed, skip precompilation" and makes a wheel without its prebuilt kernels;
a CMake option left off drops a kernel library. Only the recipe knows what must be there.
"""

from __future__ import annotations

from collections.abc import Iterator
from fnmatch import fnmatchcase

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule

REQUIRED_MEMBER = Rule(
    "required-member",
    ("error",),
    checks=(
        "Each glob of the recipe's `gate.require` (or `check --require GLOB`) matches at least one "
        "wheel member (fnmatch on the member path, `*` also matches `/`)."
    ),
    prevents=(
        "A release without the files it exists for (prebuilt kernels, a kernel library) from a build "
        "that skipped them and still exited 0: the import works and every call then JIT-compiles or fails."
    ),
    never_waived="a required member is waived by removing it from gate.require",
)

RULES = (REQUIRED_MEMBER,)


def check(facts: Facts) -> Iterator[Finding]:
    members = facts.report.members
    for required in facts.config.required:
        if not any(fnmatchcase(m, required.glob) for m in members):
            yield REQUIRED_MEMBER.error(
                f"no wheel member matches {required.glob!r} ({required.where}): the build did not "
                "produce it; look in the build log for a step it skipped"
            )
