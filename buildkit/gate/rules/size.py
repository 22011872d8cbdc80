"""The ``size`` rules: the wheel's size against the size budget (``--size-limit``/``--size-warn``, the
recipe's ``size_budget``; warn by default above PyPI's default per-file limit), each gfx target's device
code against ``--size-per-target`` / ``size_budget.per_target`` (:mod:`buildkit.gate.device`), and the
advice to compress offload bundles stored plain."""

from __future__ import annotations

from collections.abc import Iterator

from buildkit.gate.config import DEFAULT_SIZE_WARN
from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule
from buildkit.gate.rules.duplicates import duplicate_groups, wasted
from buildkit.units import format_size

SIZE = Rule(
    "size",
    ("error", "warning"),
    checks=(
        "Error: the wheel is larger than `--size-limit` / the recipe's `size_budget.limit`. "
        "Warning: larger than `--size-warn` / `size_budget.warn` (default 100 MiB, PyPI's default"
        " per-file limit). The message counts identical members stored more than once (`duplicate-member`): "
        "how much of the wheel they are, and the size without them."
    ),
    prevents=("Error: a release that the index refuses to accept or that breaks the project's own budget."),
)

SIZE_PER_TARGET = Rule(
    "size-per-target",
    ("error",),
    checks=(
        "With `--size-per-target` / the recipe's `size_budget.per_target`: the device code of each gfx "
        "target (what its code objects take in the wheel's members, all members together; a compressed "
        "bundle's share counted compressed) is at most that size."
    ),
    prevents=(
        "A release whose size grows with each target added without anyone choosing it: one gfx target's "
        "kernels (an unrolled tuning sweep, a debug build) taking most of a wheel that users of every "
        "other GPU download too."
    ),
)
OFFLOAD_COMPRESS = Rule(
    "offload-compress",
    ("warning",),
    checks=(
        "A HIP object whose plain (uncompressed, `__CLANG_OFFLOAD_BUNDLE__`) offload bundles hold at "
        "least 1 MiB of device code: the warning names the bytes and what clang's `--offload-compress` "
        "(compressed `CCOB` bundles; the recipe's `offload_compress: true`) would save, estimated by "
        "compressing a sample of each code object with zstd."
    ),
    prevents=(
        "Nothing breaks: wheels several times larger than they need to be, installed and loaded as such "
        "(code objects compress several-fold: a trial aiter wheel was 297 MB)."
    ),
)

RULES = (SIZE, SIZE_PER_TARGET, OFFLOAD_COMPRESS)
#: plain device code per member below which compressing is not worth a warning
COMPRESS_ADVICE_MIN = 1024 * 1024


def _duplicates_part(facts: Facts) -> str:
    """``; 12.0 MiB of it are duplicate members (340.0 MiB installed): 38.0 MiB without them`` or ""."""
    installed, compressed = wasted(duplicate_groups(facts.report))
    if not installed:
        return ""
    return (
        f"; {format_size(compressed)} of it are identical copies of other members ({format_size(installed)} "
        f"installed, see duplicate-member): {format_size(facts.report.size - compressed)} without them"
    )


def check(facts: Facts) -> Iterator[Finding]:
    config, size = facts.config, facts.report.size
    if config.size_limit is not None and size > config.size_limit:
        yield SIZE.error(
            f"wheel is {format_size(size)}, above the limit of {format_size(config.size_limit)}"
            + _duplicates_part(facts)
        )
    elif config.size_warn is not None and size > config.size_warn:
        why = (
            "PyPI's default file limit; ask for an increase or publish to your own index"
            if config.size_warn == DEFAULT_SIZE_WARN
            else "the size budget's warn"
        )
        yield SIZE.warning(
            f"wheel is {format_size(size)}, above {format_size(config.size_warn)} ({why})"
            + _duplicates_part(facts)
        )
    yield from _per_target(facts)
    yield from _compress_advice(facts)


def _per_target(facts: Facts) -> Iterator[Finding]:
    limit = facts.config.size_per_target
    if limit is None:
        return
    for target, (size, stored) in sorted(facts.device.per_target().items()):
        if stored > limit:
            members = sorted({m.file for m in facts.device.members if m.target == target})
            shown = ", ".join(members[:3]) + (f" (+{len(members) - 3} more)" if len(members) > 3 else "")
            yield SIZE_PER_TARGET.error(
                f"{target} device code takes {format_size(stored)} (code objects {format_size(size)}) in "
                f"{shown}, above the limit of {format_size(limit)} per target",
                symbol=target,
            )


def _compress_advice(facts: Facts) -> Iterator[Finding]:
    by_member: dict[str, list[int]] = {}
    for b in facts.device.bundles:
        if b.compression is None:
            row = by_member.setdefault(b.file, [0, 0, 0, 0])
            row[0] += 1
            row[1] += b.stored
            row[2] += b.saving
            row[3] += b.estimate is None
    for member, (count, stored, saving, unknown) in sorted(by_member.items()):
        if stored < COMPRESS_ADVICE_MIN:
            continue
        estimate = (
            f"would save about {format_size(saving)} or more ({format_size(stored)} -> "
            f"{format_size(stored - saving)}: zstd on windows sampled over each code object, which miss "
            "the repeats far apart that clang's compression of the whole bundle also finds)"
            if not unknown
            else "would make them several times smaller (not estimated: the code objects were not sampled)"
        )
        yield OFFLOAD_COMPRESS.warning(
            f"{member}: {count} uncompressed offload bundle{'s' * (count != 1)} hold "
            f"{format_size(stored)} of device code; clang's --offload-compress (the recipe's "
            f"offload_compress: true) {estimate}",
            file=member,
        )
