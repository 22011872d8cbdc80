"""The ``buildkit`` command: a thin click group. Each sub-command is imported only when it is invoked,
so ``buildkit plan`` does not pay for importing the docker SDK or auditwheel; errors: :mod:`buildkit.errors`
(Ctrl-C exits 130).
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import signal
import sys
from typing import Any

import click

from buildkit import __version__
from buildkit.errors import BuildkitError, Interrupted

# command name -> ("module:attribute", module relative to buildkit.cli; what ``buildkit --help`` lists:
# written here so that listing the commands imports none of them)
COMMANDS: dict[str, tuple[str, str]] = {
    "build": ("build:build", "Build the recipe's jobs in builder containers, repair, gate."),
    "cache": ("cache:cache", "Export and import the compiler cache (CI cache, other machines)."),
    "archs": ("archs:archs", "Resolve the GPU arch list and explain every decision."),
    "rocm": ("rocm:rocm", "ROCm releases: archs, runtime libraries, torch indexes."),
    "image": ("image:image", "Builder and runtime images: build, list, prune, seed, bump-base."),
    "check": ("check:check", "The gate: ceilings, tags, libraries, gfx targets, ..."),
    "plan": ("plan:plan", "Expand a recipe into build jobs."),
    "ceilings": ("ceilings:ceilings", "GLIBC/GLIBCXX/CXXABI/GCC ceilings of runtime images."),
    "diff": ("diff:diff", "Release-over-release changes between two wheels."),
    "publish": ("publish:publish", "Publish gated wheels (directory, index, PyPI)."),
    "smoke": ("smoke:smoke", "Import-test a wheel in runtime containers."),
    "split": ("split:split", "A host wheel and one device wheel per gfx target (pkg[gfx942])."),
    "verify": ("verify:verify", "Rebuild a wheel's job and compare, or check its attestation."),
    "init": ("init:init", "Write a commented recipe for an existing project."),
    "schema": ("reference:schema", "Print the recipe's JSON schema (or an output's)."),
    "rules": ("reference:rules", "Print the gate's rules (what each checks and prevents)."),
}


class LazyGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        """A closed stdout is the reader's choice, handled here: click 8.2+ turns it into exit 1 with no
        trace of the cause (it catches the EPIPE and exits outside the handler)."""
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                _reader_gone()
            raise

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module_name, attr = COMMANDS[cmd_name][0].split(":")
        module = importlib.import_module(f"buildkit.cli.{module_name}")
        command: click.Command = getattr(module, attr)
        return with_verbosity(command)


def with_verbosity(command: click.Command) -> click.Command:
    """``-q``/``-v`` after the command as before it (``buildkit plan -v`` = ``buildkit -v plan``): added to
    every command (and every command of a group) that has no option of that name itself; a command's own
    ``-v`` also sets the level every part of it reads (:func:`buildkit.cli.options.verbose`)."""
    from buildkit.cli.options import raise_verbosity  # `buildkit --help` loads no module but this one

    if isinstance(command, click.Group):
        for sub in command.commands.values():
            with_verbosity(sub)
        return command
    taken = {opt for param in command.params for opt in param.opts}
    for flag, name, help_text in (
        ("-q", "quiet", "No notes or progress lines (warnings and errors stay); as buildkit -q."),
        ("-v", "verbose", "More of what this command shows (logs, every finding); as buildkit -v."),
    ):
        if flag in taken:
            continue
        command.params.append(
            click.Option(
                [flag, f"--{name}"],
                is_flag=True,
                expose_value=False,
                help=help_text,
                callback=lambda _ctx, _param, value, name=name: raise_verbosity(name) if value else None,
            )
        )
    return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="buildkit")
@click.option("-q", "--quiet", is_flag=True, help="No notes or progress lines (warnings and errors stay).")
@click.option("-v", "--verbose", is_flag=True, help="What each command's -v gives (build: the whole log).")
def cli(quiet: bool, verbose: bool) -> None:
    """rocm-buildkit: gated manylinux wheels of HIP extensions from a YAML recipe.

    PASS/FAIL are coloured on a terminal unless NO_COLOR is set."""
    from buildkit.cli.options import set_verbosity  # `buildkit --help` loads no module but this one

    set_verbosity(quiet=quiet, verbose=verbose)


def _terminate(signum: int, _frame: Any) -> None:
    """SIGTERM/SIGHUP (a CI job cancelled, a closed terminal) unwind like Ctrl-C: every command's
    clean-up runs (containers removed, staging folders deleted), then exit 130."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _reader_gone() -> None:
    """stdout's reader closed the pipe (``buildkit rocm ls | head -1``): exit 0, as ``ls | head`` does.
    stdout is pointed at /dev/null first, so the interpreter's last flush of the buffered rest cannot
    fail again at exit (Python would report it and exit 120)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
        pass
    sys.exit(0)


def _command_of(argv: list[str]) -> str:
    """The command a command line names (``rocm show`` for a group's), as an error document names it."""
    words = [a for a in argv if not a.startswith("-")]
    if not words or words[0] not in COMMANDS:
        return "buildkit"
    group = COMMANDS[words[0]][0].split(":")[0] in {"rocm", "image", "cache"}
    return " ".join(words[:2]) if group and len(words) > 1 else words[0]


def _usage_json(argv: list[str], exc: click.ClickException) -> None:
    """A usage error click found (a missing argument, a path that does not exist, an unknown option) on a
    command line asking for JSON: the error document on stdout too, as a refusal of the command's own."""
    from buildkit.cli.options import error_document, wants_json  # `buildkit --help` loads no command module

    if not wants_json(argv):
        return
    error = {"kind": "UsageError", "exit_code": exc.exit_code, "message": exc.format_message()}
    with contextlib.suppress(OSError):  # a closed stdout: the message on stderr stays
        click.echo(error_document(_command_of(argv), error))


def main(argv: list[str] | None = None) -> Any:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _terminate)
    try:
        result = cli.main(args=argv, prog_name="buildkit", standalone_mode=False)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return result
    except SystemExit as exc:
        # click turns a closed stdout (``buildkit rocm ls | head -1``) into exit 1, which the README
        # reserves for bugs: a reader that stopped reading is not a failure of ours
        context = exc.__context__
        if isinstance(context, OSError) and context.errno == errno.EPIPE:
            _reader_gone()
        # click >= 8.5 exits after its except clause (no __context__), having wrapped stdout then
        if exc.code == 1 and type(sys.stdout).__name__ == "_PacifyFlushWrapper":
            _reader_gone()
        raise
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(Interrupted.exit_code)
    except click.ClickException as exc:
        _usage_json(argv if argv is not None else sys.argv[1:], exc)
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted: partial outputs were removed", err=True)
        sys.exit(Interrupted.exit_code)
    except BuildkitError as exc:
        click.echo(str(exc), err=True)
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        _reader_gone()
