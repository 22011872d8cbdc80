"""The ``size`` rule: the wheel's size against the size budget (``--size-limit``/``--size-warn``, the
recipe's ``size_budget``; warn by default above PyPI's default per-file limit)."""

from __future__ import annotations

from collections.abc import Iterator

from buildkit.gate.config import DEFAULT_SIZE_WARN
from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule
from buildkit.units import format_size

SIZE = Rule(
    "size",
    ("error", "warning"),
    checks=(
        "Error: the wheel is larger than `--size-limit` / the recipe's `size_budget.limit`. "
        "Warning: larger than `--size-warn` / `size_budget.warn` (default 100 MiB, PyPI's default"
        " per-file limit)."
    ),
    prevents=("Error: a release that the index refuses to accept or that breaks the project's own budget."),
)

RULES = (SIZE,)


def check(facts: Facts) -> Iterator[Finding]:
    config, size = facts.config, facts.report.size
    if config.size_limit is not None and size > config.size_limit:
        yield SIZE.error(f"wheel is {format_size(size)}, above the limit of {format_size(config.size_limit)}")
    elif config.size_warn is not None and size > config.size_warn:
        why = (
            "PyPI's default file limit; ask for an increase or publish to your own index"
            if config.size_warn == DEFAULT_SIZE_WARN
            else "the size budget's warn"
        )
        yield SIZE.warning(f"wheel is {format_size(size)}, above {format_size(config.size_warn)} ({why})")
