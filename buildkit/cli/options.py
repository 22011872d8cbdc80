"""Click options shared by several commands (one definition, one help text)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

from buildkit.errors import BuildkitError

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


class JsonOutput:
    """Whether the command printed its JSON document already (a failure after it prints none).
    A plain class: a dataclass on ``check``'s import path costs its start-up (test_check_startup)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.printed = False

    def echo(self, data: Any) -> None:
        click.echo(data if isinstance(data, str) else json.dumps(data, indent=2, sort_keys=True))
        self.printed = True


@contextlib.contextmanager
def json_errors(command: str, enabled: bool, **context: Any) -> Iterator[JsonOutput]:
    """With ``--json``, a refusal is a JSON document on stdout too (``buildkit/schema/error.schema.json``:
    ``{"schema": "rocm-buildkit/error", "command", "ok": false, "error": {"kind", "exit_code",
    "message", ...}, ...context}``), unless the command printed its own document first; the error
    is then raised as before (its message on stderr, its exit code)."""
    out = JsonOutput(enabled)
    try:
        yield out
    except BuildkitError as exc:
        if enabled and not out.printed:
            document = {
                "schema": "rocm-buildkit/error",
                "schema_version": 1,
                "command": command,
                "ok": False,
                "error": exc.to_json(),
                **context,
            }
            click.echo(json.dumps(document, indent=2, sort_keys=True))
        raise


def json_flag(command: F) -> F:
    """``--json``: the same as ``--format json`` (every reporting command takes ``--json``)."""
    return click.option("--json", "as_json", is_flag=True, help="The same as --format json.")(command)


def pick_format(fmt: str | None, as_json: bool, default: str) -> str:
    """The format ``--format``/``--json`` ask for; both, naming another format, is a usage error."""
    if as_json and fmt not in (None, "json"):
        raise click.UsageError(f"--json is --format json; it cannot be combined with --format {fmt}")
    return "json" if as_json else (fmt or default)
