"""The ``size`` rule: the wheel's size against the size budget (``--size-limit``/``--size-warn``, the
recipe's ``size_budget``; warn by default above PyPI's default per-file limit)."""

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

RULES = (SIZE,)


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
