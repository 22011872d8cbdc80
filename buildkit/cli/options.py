"""Click options shared by several commands (one definition, one help text)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

F = TypeVar("F", bound=Callable[..., object])

EXCLUDE_SETS = ("rocm", "rocm-system", "torch")


def exclude_options(command: F) -> F:
    """``--exclude GLOB`` and ``--exclude-set NAME`` (both repeatable): the libraries provided at run time."""
    command = click.option(
        "--exclude-set",
        multiple=True,
        type=click.Choice(EXCLUDE_SETS),
        help="Named exclusion set; with --recipe, added to the job's globs.",
    )(command)
    command = click.option(
        "--exclude",
        multiple=True,
        help="SONAME glob provided at run time, e.g. 'librocblas.so*'; with --recipe, added to the job's.",
    )(command)
    return command
