"""Click options shared by several commands (one definition, one help text)."""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar, cast

import click

from buildkit.errors import BuildkitError

F = TypeVar("F", bound=Callable[..., object])


def gate_options(*names: str, param: str = "gate", help: Mapping[str, str] | None = None) -> Callable[[F], F]:
    """The click options of the gate options ``names`` (every row of
    :data:`buildkit.gate.options.OPTIONS` when none is named), in the table's order, given to the
    command as one keyword ``param``: a :class:`~buildkit.gate.options.GateFlags`. ``help``: another
    help text for an option, by name (a command using it for less, as ``diff`` does ``--rocm``)."""
    # the table only for the commands that take gate options: the others' start-up does not load the
    # gate's configuration
    from buildkit.gate import options as gate_table

    rows = [row for row in gate_table.OPTIONS if not names or row.name in names]
    unknown = sorted(set(names) - {row.name for row in rows})
    if unknown:
        raise ValueError(f"no gate option {', '.join(unknown)}")

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def gathered(**kwargs: Any) -> Any:
            flags = gate_table.GateFlags(**{row.name: kwargs.pop(row.name) for row in rows})
            return command(**kwargs, **{param: flags})

        wrapped: Any = gathered
        for row in reversed(rows):  # click lists options in the order their decorators are written
            attrs: dict[str, Any] = {"help": (help or {}).get(row.name, row.help)}
            if row.kind == "multiple":
                attrs["multiple"] = True
            if row.kind == "flag":
                attrs["is_flag"] = True
            if row.choices:
                attrs["type"] = click.Choice(row.choices)
            if row.metavar:
                attrs["metavar"] = row.metavar
            wrapped = click.option(row.flag, row.name, **attrs)(wrapped)
        return cast(F, wrapped)

    return decorate


class JsonOutput:
    """Whether the command printed its JSON document already (a failure after it prints none).
    A plain class: a dataclass on ``check``'s import path costs its start-up (test_check_startup)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.printed = False

    def echo(self, data: Any) -> None:
        click.echo(data if isinstance(data, str) else json.dumps(data, indent=2, sort_keys=True))
        self.printed = True


def enveloped(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as command ``name``'s JSON document: ``{"schema": "rocm-buildkit/NAME", "schema_version": 1,
    ...}``, described by ``buildkit/schema/NAME.schema.json`` (``buildkit schema --list``)."""
    return {"schema": f"rocm-buildkit/{name}", "schema_version": 1, **data}


def error_document(command: str, error: Mapping[str, Any], **context: Any) -> str:
    """The JSON error document of a refusal (``buildkit/schema/error.schema.json``)."""
    document = {
        "schema": "rocm-buildkit/error",
        "schema_version": 1,
        "command": command,
        "ok": False,
        "error": dict(error),
        **context,
    }
    return json.dumps(document, indent=2, sort_keys=True)


def wants_json(argv: list[str]) -> bool:
    """Whether a command line asks for JSON (``--json``, ``--format json``, ``--format=json``), read before
    click parsed it: a usage error found while parsing is then a JSON error document too."""
    args = argv[: argv.index("--")] if "--" in argv else argv
    return (
        "--json" in args
        or "--format=json" in args
        or any(a == "--format" and b == "json" for a, b in itertools.pairwise(args))
    )


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
            click.echo(error_document(command, exc.to_json(), **context))
        raise


def refusing_in_json(command: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A command whose ``--json`` (its ``as_json`` parameter) makes a refusal a JSON error document too
    (:func:`json_errors`): the function gets ``out`` (a :class:`JsonOutput`) in place of ``as_json``.
    Put it below the ``click`` decorators (they keep the options on the function it wraps)."""

    def wrap(function: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(function)
        def run(*args: Any, as_json: bool, **kwargs: Any) -> None:
            with json_errors(command, as_json) as out:
                function(*args, out=out, **kwargs)

        return run

    return wrap


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


def raise_verbosity(level: str) -> None:
    """A command's own ``-q`` or ``-v`` (``quiet``/``verbose``), over the group's (``buildkit -q``)."""
    set_verbosity(quiet=level == "quiet" or _LEVEL["quiet"], verbose=level == "verbose" or _LEVEL["verbose"])


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
