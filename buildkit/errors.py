"""Errors a user can act on, each with its exit code.

The CLI catches :class:`BuildkitError` and prints ``str(err)`` without a traceback, exiting
with ``err.exit_code``. Anything else is a bug in rocm-buildkit and keeps its traceback.

Exit codes are stable: each class's ``exit_code``; docs/REFERENCE.md's table says what each means
(the README lists them). Several classes may share a code: :class:`UnknownJob` is a :class:`UsageError`
(2), :class:`PublishUnavailable` an :class:`IndexUnavailable` (13).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class BuildkitError(Exception):
    """Base class of expected failures: printed without traceback."""

    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict[str, Any]:
        """The error as a command's ``--json`` prints it (``buildkit/schema/error.schema.json``)."""
        # hand-written, no JsonShape (buildkit/records.py): an exception, no record: its kind is its class
        return {"kind": type(self).__name__, "exit_code": self.exit_code, "message": self.message}


class UsageError(BuildkitError):
    exit_code = 2


class UnknownJob(UsageError):
    """A job id that is not in the recipe's plan: the same error (and message) from every command
    (:meth:`buildkit.plan.models.Plan.job`). Exit 2: the recipe is valid; the id asked for is not
    one of its jobs, a usage mistake as a misspelt option value is."""


class RecipeError(BuildkitError):
    """A recipe problem, located at ``file:line:column`` when the position is known."""

    exit_code = 3

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.file = file
        self.line = line
        self.column = column
        self.hint = hint
        where = ""
        if file is not None:
            where = file
            if line is not None:
                where += f":{line}"
                if column is not None:
                    where += f":{column}"
            where += ": "
        text = f"{where}error: {message}"
        if hint:
            text += f"\n  hint: {hint}"
        super().__init__(text)
        self.detail = message
        #: every problem found in one run, sorted by position (this error first): :meth:`combine`
        self.problems: tuple[RecipeError, ...] = (self,)
        #: a recipe loader's ``PartialRecipe``: what of the recipe did load (None: nothing, or not a load)
        self.partial: object | None = None

    @property
    def position(self) -> tuple[int, int]:
        """``(line, column)`` for sorting; an unpositioned problem sorts first."""
        return (self.line or 0, self.column or 0)

    @classmethod
    def combine(cls, errors: Sequence[RecipeError]) -> RecipeError:
        """One error reporting every problem of ``errors`` (each with its position and hint), sorted by
        position; the first one's ``line``, ``column``, ``detail`` and ``hint`` are the error's own.
        The same message at the same place is reported once."""
        seen: set[tuple[str | None, int, int, str]] = set()
        unique: list[RecipeError] = []
        for err in sorted((p for e in errors for p in e.problems), key=lambda e: e.position):
            key = (err.file, *err.position, err.detail)
            if key not in seen:
                seen.add(key)
                unique.append(err)
        if not unique:
            raise ValueError("combine() needs at least one error")
        first = unique[0]
        combined = cls(first.detail, file=first.file, line=first.line, column=first.column, hint=first.hint)
        combined.problems = tuple(unique)
        if len(unique) > 1:
            where = f"{first.file}: " if first.file else ""
            text = "\n".join(e.message for e in unique)
            combined.message = f"{text}\n{where}{len(unique)} problems"
        return combined


class ArchError(BuildkitError):
    exit_code = 4


class ArchesDropped(BuildkitError):
    exit_code = 5


class WheelReadError(BuildkitError):
    exit_code = 6


class GateFailed(BuildkitError):
    exit_code = 7


class DockerUnavailable(BuildkitError):
    exit_code = 8


class BuildFailed(BuildkitError):
    exit_code = 9


class HostIsaRefused(BuildFailed):
    """The build's compiler launcher refused a compile asking for more than the host ISA the build
    holds (``-march=native``, ``-mavx512f`` above ``host_isa.level``): the flag, file and command named."""

    exit_code = 19


class PublishRefused(BuildkitError):
    """``refusals``: ``(wheel, reason)`` of each refused wheel when the refusal is per wheel."""

    exit_code = 10

    def __init__(self, message: str, refusals: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(message)
        self.refusals = tuple(refusals)

    def to_json(self) -> dict[str, Any]:
        # hand-written, no JsonShape (buildkit/records.py): an exception, no record: the refusals are pairs
        data = super().to_json()
        if self.refusals:
            data["refusals"] = [{"wheel": wheel, "reason": reason} for wheel, reason in self.refusals]
        return data


class SmokeFailed(BuildkitError):
    exit_code = 11


class NotReproducible(BuildkitError):
    exit_code = 12


class IndexUnavailable(BuildkitError):
    """An index, a file it lists or a source URL could not be reached (what counts and which commands
    give it: docs/REFERENCE.md, exit 13). Transient: retry. An index that answers no is not: each
    command words that as its own error. ``url`` (credentials redacted) and ``reason`` say what failed."""

    exit_code = 13

    def __init__(self, message: str, *, url: str | None = None, reason: str | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.reason = reason


class PublishUnavailable(IndexUnavailable):
    """``publish`` could not reach the index while reading its pages or uploading. Transient: retry (wheels
    uploaded before the failure are then reported "already published"); a refusal
    (:class:`PublishRefused`) is not."""


class BuilderContractError(BuildkitError):
    """A builder image lacks what a build needs (:mod:`buildkit.image.probe`); the message lists every gap
    at once, a library's with the package that provides it."""

    exit_code = 14


class InstallResolutionFailed(BuildkitError):
    """``publish --check-install``: the wheels were published, but a user of a supported Python would
    silently get another file (PyPI's wheel of the same name, a newer version elsewhere, an sdist)
    with pip or uv in one of the ways an index is configured (:mod:`buildkit.publish.resolution`)."""

    exit_code = 15


class InstallCheckInconclusive(BuildkitError):
    """``publish --check-install``: the wheels were published and resolve from the published index
    alone, but the public index beside it could not be reached, so whether it shadows them is not
    known (``--local-only`` asks for the local check alone)."""

    exit_code = 18


class SplitRefused(BuildkitError):
    """``split`` cannot split the wheel per GPU target, whatever its outputs' gate would say (the causes:
    docs/REFERENCE.md, exit 16; an input whose RECORD does not match its files too). The message names
    every file at fault."""

    exit_code = 16


class RegistryUnavailable(BuildkitError):
    """An image build could not reach a container registry (its base image is not in the engine and the
    registry's host does not resolve or answer, or refuses the pull): a network failure, not a failed build
    step. The hint names what builds without a registry (:mod:`buildkit.image.engine`)."""

    exit_code = 17


class Interrupted(BuildkitError):
    exit_code = 130
