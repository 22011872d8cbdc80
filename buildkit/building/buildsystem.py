"""What the isolated build environment gets beyond the project's own ``[build-system] requires``,
and the check that a project building against torch has a torch to build against (what a recipe
author sees: docs/REFERENCE.md, "Key: build_requires").

A build frontend makes a fresh environment from the project's PEP 518 requirements; nothing else
reaches it (PIP_CONSTRAINT only narrows versions). A torch extension's ``setup.py`` that imports
torch without listing it (aiter: a ROCm torch is not on PyPI) would then build without torch, and
aiter's prints "PREBUILD_KERNELS set but torch not installed, skip precompilation" and makes a wheel
without its kernels, with no error: so a job of the ``torch`` axis always builds with its pin.

:func:`add_build_requires` rewrites only the *staged copy* of the source, and refuses a file it cannot
rewrite faithfully rather than build differently; a source without ``pyproject.toml`` gets PEP 518's
defaults (no ``build-backend``: setuptools' legacy backend, as before)."""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from buildkit.errors import BuildFailed
from buildkit.fsutil import atomic_write
from buildkit.plan.models import Job

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: PEP 518: what a source without a ``[build-system]`` table is built with
DEFAULT_BUILD_REQUIRES = ("setuptools>=40.8.0", "wheel")
_TABLE_HEADER = re.compile(r"^[ \t]*\[{1,2}[ \t]*(?P<name>[^\]]+?)[ \t]*\]{1,2}[ \t]*(?:#.*)?$")
_FIND_TORCH = re.compile(r"^[ \t]*find_package[ \t]*\([ \t]*Torch\b", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class Extra:
    """One requirement added to the build environment, and why."""

    requirement: str
    origin: str  # "the recipe's torch pin (torch jobs build against their torch)", ...
    index: int | None = None  # its place in the recipe's build_requires


@dataclass(frozen=True)
class _TorchEvidence:
    """Where a source shows it builds against torch."""

    file: str  # relative to the source
    line: int
    text: str

    def describe(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"


def extra_requires(
    job: Job, project_requires: Sequence[str] = (), env: dict[str, str] | None = None
) -> list[Extra]:
    """The requirements added to the job's build environment: its torch pin (unless the project
    lists torch itself for the job, its marker true in ``env``, the job's marker environment: the pin
    then constrains that one through PIP_CONSTRAINT), then the recipe's ``build_requires``."""
    extras: list[Extra] = []
    listed = set()
    for text in project_requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is None or env is None or req.marker.evaluate(env):
            listed.add(canonicalize_name(req.name))
    if job.torch_requirement and "torch" not in listed:
        why = "the recipe's torch pin (a torch job builds against its torch)"
        extras.append(Extra(job.torch_requirement, why))
    for i, text in enumerate(job.hooks.build_requires):
        extras.append(Extra(text, "the recipe's build_requires", i))
    return extras


def read_pyproject(source: Path) -> tuple[str | None, dict[str, Any]]:
    """The source's ``pyproject.toml`` as text and parsed (``(None, {})`` without one)."""
    path = source / "pyproject.toml"
    if not path.is_file():
        return None, {}
    try:
        text = path.read_text(encoding="utf-8")
        return text, tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BuildFailed(f"the source's pyproject.toml cannot be read: {exc}") from None


def project_requires(data: dict[str, Any]) -> list[str]:
    """``[build-system] requires`` (PEP 518's defaults without the table)."""
    system = data.get("build-system")
    if not isinstance(system, dict):
        return list(DEFAULT_BUILD_REQUIRES)
    requires = system.get("requires", [])
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise BuildFailed("the source's pyproject.toml: [build-system] requires is not a list of strings")
    return list(requires)


def _toml_string(value: str) -> str:
    # a JSON string is a valid TOML basic string for everything a requirement or module path holds
    return json.dumps(value, ensure_ascii=False)


def _render_table(system: dict[str, Any], requires: Sequence[str]) -> str:
    lines = ["[build-system]", "requires = [" + ", ".join(_toml_string(r) for r in requires) + "]"]
    for key, value in system.items():
        if key == "requires":
            continue
        if isinstance(value, str):
            lines.append(f"{key} = {_toml_string(value)}")
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            lines.append(f"{key} = [" + ", ".join(_toml_string(v) for v in value) + "]")
        else:
            raise BuildFailed(
                f"the source's pyproject.toml: [build-system] {key} is neither a string nor a list of "
                "strings, so build_requires / the torch pin cannot be added to it"
            )
    return "\n".join(lines) + "\n"


def _without_build_system(text: str) -> tuple[str, int | None]:
    """``text`` without its ``[build-system]`` table, and the offset where it stood."""
    lines = text.splitlines(keepends=True)
    start = end = None
    for i, line in enumerate(lines):
        m = _TABLE_HEADER.match(line.rstrip("\r\n"))
        if m is None:
            continue
        name = m.group("name").replace(" ", "").replace('"', "").replace("'", "")
        if start is None and name == "build-system" and not line.lstrip().startswith("[["):
            start = i
        elif start is not None and end is None:
            end = i
    if start is None:
        return text, None
    end = len(lines) if end is None else end
    offset = sum(len(x) for x in lines[:start])
    return "".join(lines[:start] + lines[end:]), offset


def add_build_requires(source: Path, extras: Sequence[Extra]) -> bool:
    """Write ``extras`` into ``source``'s ``[build-system] requires`` (a staged copy). False when
    there was nothing to add. Refuses (:class:`BuildFailed`) a file whose table cannot be rewritten
    with everything else kept as it was."""
    if not extras:
        return False
    text, data = read_pyproject(source)
    added = [e.requirement for e in extras]
    if text is None:
        atomic_write(source / "pyproject.toml", _render_table({}, [*DEFAULT_BUILD_REQUIRES, *added]))
        return True
    system = data.get("build-system")
    system = dict(system) if isinstance(system, dict) else {}
    requires = [*project_requires(data), *added]
    rest, at = _without_build_system(text)
    table = _render_table(system, requires)
    if at is None:
        new = (rest if rest.endswith("\n") or not rest else rest + "\n") + ("\n" if rest else "") + table
    else:
        new = rest[:at] + table + ("\n" if rest[at:] else "") + rest[at:]
    try:
        faithful = tomllib.loads(new) == {**data, "build-system": {**system, "requires": requires}}
    except tomllib.TOMLDecodeError:  # e.g. the table also given by dotted keys elsewhere
        faithful = False
    if not faithful:
        raise BuildFailed(
            "pyproject.toml's [build-system] table cannot be rewritten faithfully (dotted keys or an "
            "inline table?), so build_requires / the torch pin cannot be added: write them into the "
            "project's [build-system] requires"
        )
    atomic_write(source / "pyproject.toml", new)
    return True


def _setup_py_torch(source: Path) -> _TorchEvidence | None:
    path = source / "setup.py"
    if not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
        tree = ast.parse(text, filename="setup.py")
    except (OSError, SyntaxError, ValueError):
        return None
    lines = text.splitlines()
    found: list[int] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(n == "torch" or n.startswith("torch.") for n in names):
            found.append(node.lineno)
    if not found:
        return None
    line = min(found)
    return _TorchEvidence("setup.py", line, lines[line - 1].strip())


def torch_evidence(source: Path) -> _TorchEvidence | None:
    """The first place where ``source`` shows it builds against torch, None when it does not."""
    text, data = read_pyproject(source)
    if text is not None:
        for req in project_requires(data):
            try:
                name = canonicalize_name(Requirement(req).name)
            except InvalidRequirement:
                continue
            if name == "torch":
                line = next((i for i, x in enumerate(text.splitlines(), 1) if req in x), 1)
                return _TorchEvidence("pyproject.toml", line, f"[build-system] requires {req!r}")
    found = _setup_py_torch(source)
    if found is not None:
        return found
    cmake = source / "CMakeLists.txt"
    if cmake.is_file():
        try:
            body = cmake.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        m = _FIND_TORCH.search(body)
        if m is not None:
            line = body.count("\n", 0, m.start()) + 1
            return _TorchEvidence("CMakeLists.txt", line, body.splitlines()[line - 1].strip())
    return None


def check_torch_provided(job: Job, source: Path, recipe_path: str) -> None:
    """Refuse, before any container starts, a job without a torch pin whose source builds against torch
    (module docstring)."""
    if job.torch_requirement is not None:
        return
    found = torch_evidence(source)
    if found is None:
        return
    raise BuildFailed(
        f"job {job.id}: the project builds against torch ({found.describe()}), but the job pins no "
        f"torch, so its build environment would have none\n"
        f'  hint: add a torch axis to {recipe_path} (torch: [{{version: "2.10"}}], with index_url for '
        "a ROCm torch): each job then builds against its pinned torch"
    )
