"""What a smoke test says: each step (:class:`Step`), the outcome (:class:`SmokeResult`), the line that
says what went wrong (:func:`summarize_error`), rendered for a person or as JSON."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from buildkit.errors import SmokeFailed
from buildkit.records import json_shape, to_data
from buildkit.smoke.spec import SmokeSpec

OUTPUT_LIMIT = 64 * 1024  # the end of a step's output kept

_NOT_FOUND = re.compile(r"version [`'](?P<version>[A-Z_]+_[0-9.]+)' not found")
_EXCEPTION = re.compile(r"^(?P<line>(?:[A-Za-z_.]+)?(?:Error|Exception|Exit)\b.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Step:
    kind: str  # "setup" | "deps" | "install" | "import" | "command"
    what: str
    exit_code: int
    output: str

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def error(self) -> str:
        return summarize_error(self.output) or f"exit code {self.exit_code}"

    def outcome(self) -> str:
        """``ok``, or ``FAILED: <the error>`` (a progress line's end)."""
        return "ok" if self.passed else "FAILED: " + self.error()

    def to_json(self) -> dict[str, Any]:
        # hand-written, no JsonShape (buildkit/records.py): error() is computed
        return {
            "kind": self.kind,
            "what": self.what,
            "exit_code": self.exit_code,
            "passed": self.passed,
            "error": None if self.passed else self.error(),
            "output": self.output,
        }


@json_shape()
@dataclass(frozen=True)
class SmokeResult:
    name: str
    image: str
    status: str  # "passed" | "failed" | "skipped"
    reason: str = ""  # why skipped / what failed
    gpu: str = ""  # what was said about GPU access
    steps: tuple[Step, ...] = field(default=())


def failed(spec: SmokeSpec, gpu_note: str, steps: list[Step], reason: str) -> SmokeResult:
    return SmokeResult(spec.name, spec.image, "failed", reason, gpu_note, tuple(steps))


def verdict(spec: SmokeSpec, gpu_note: str, steps: list[Step]) -> SmokeResult:
    """Passed unless an import or a command failed (each named in the reason)."""
    failures = [s for s in steps if s.kind in ("import", "command") and not s.passed]
    if failures:
        return failed(spec, gpu_note, steps, "; ".join(f"{s.kind} {s.what}: {s.error()}" for s in failures))
    return SmokeResult(spec.name, spec.image, "passed", "", gpu_note, tuple(steps))


def summarize_error(output: str) -> str:
    """The line that says what went wrong: a missing symbol version first, else the last exception."""
    found = _NOT_FOUND.search(output)
    if found:
        line = next(x for x in output.splitlines() if found.group(0) in x).strip()
        return f"{found.group('version')} not found: {line}"
    exceptions = _EXCEPTION.findall(output)
    if exceptions:
        return str(exceptions[-1]).strip()
    lines = [x.strip() for x in output.splitlines() if x.strip()]
    return lines[-1] if lines else ""


def render_human(results: list[SmokeResult], *, verbose: bool = False) -> str:
    """The results, each step with its outcome; a failed step with the last lines of its output, every step
    with all of it when ``verbose``."""
    lines = []
    for r in results:
        lines.append(f"{r.status.upper():<7} {r.name} in {r.image}")
        lines.append(f"        {r.gpu}")
        if r.status == "skipped":
            lines.append(f"        skipped: {r.reason}")
        for s in r.steps:
            mark = "ok" if s.passed else f"FAILED (exit {s.exit_code}): {s.error()}"
            lines.append(f"        {s.kind:<8} {s.what}: {mark}")
            if verbose or not s.passed:
                said = [x for x in s.output.splitlines() if x.strip()]
                lines += [f"          | {x}" for x in (said if verbose else said[-6:])]
    passed = sum(r.status == "passed" for r in results)
    failed = sum(r.status == "failed" for r in results)
    skipped = sum(r.status == "skipped" for r in results)
    lines.append(f"smoke: {passed} passed, {failed} failed, {skipped} skipped")
    return "\n".join(lines)


def render_json(results: list[SmokeResult]) -> str:
    """The results as ``buildkit smoke --json``'s document (``buildkit/schema/smoke.schema.json``)."""
    document = {
        "schema": "rocm-buildkit/smoke",
        "schema_version": 1,
        "ok": not any(r.status == "failed" for r in results),
        "results": to_data(results),
    }
    return json.dumps(document, indent=2, sort_keys=True)


def raise_on_failure(results: list[SmokeResult]) -> None:
    failed = [r for r in results if r.status == "failed"]
    if failed:
        raise SmokeFailed("smoke failed: " + "; ".join(f"{r.name} in {r.image}: {r.reason}" for r in failed))
