"""Click options shared by several commands (one definition, one help text)."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
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


#: the group's -q/-v (``buildkit -q plan ...``): what every command reads through quiet()/verbose()
_LEVEL = {"quiet": False, "verbose": False}


def set_verbosity(*, quiet: bool, verbose: bool) -> None:
    if quiet and verbose:
        raise click.UsageError("-q and -v contradict each other: give one")
    _LEVEL.update(quiet=quiet, verbose=verbose)


def quiet() -> bool:
    """``buildkit -q``: notes and progress lines are not printed (warnings and errors are)."""
    return _LEVEL["quiet"]


def verbose() -> bool:
    """``buildkit -v``: what each command's own -v gives (the build log streamed, every finding)."""
    return _LEVEL["verbose"]


_VERDICT = re.compile(r"\b(PASS|FAIL|ERROR)\b")
_COLOURS = {"PASS": "green", "FAIL": "red", "ERROR": "red"}


def colour_wanted(stream: Any, env: Mapping[str, str] | None = None) -> bool:
    """Whether ``stream`` gets colour: a terminal, NO_COLOR unset or empty (https://no-color.org),
    TERM not ``dumb``."""
    environ = os.environ if env is None else env
    isatty = getattr(stream, "isatty", None)
    tty = bool(isatty()) if callable(isatty) else False
    return tty and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"


def colour_verdicts(text: str, *, tty: bool, env: Mapping[str, str]) -> str:
    """PASS in green, FAIL and ERROR in red, on a terminal only and never with NO_COLOR set (any
    non-empty value, https://no-color.org) or TERM=dumb."""
    if not tty or env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return text
    return _VERDICT.sub(lambda m: click.style(m.group(1), fg=_COLOURS[m.group(1)], bold=True), text)
