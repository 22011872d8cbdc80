"""docs/ARCHITECTURE.md names only what exists, and its layer diagram is the import contract's.

Every backticked name in the document is checked by what it looks like:

* a path (``buildkit/plan/``, ``docker/profiles.toml``, ``buildkit/rocm/*.yaml|json``, ``probe.sh``)
  exists in the repository;
* a Python name (``expand``, ``Plan.job``, ``fsutil.atomic_write``, ``Family(...)``,
  ``buildkit.cli:main``) resolves by import and attribute lookup. In a row of the package table
  (``| `buildkit/plan/` | ...``) or the module table (``| `fsutil.py` | ...``) it must be found in that
  package or module: one of its modules, a name one of them defines, or an attribute (a dataclass field
  included) of a class defined there. Elsewhere it may be anywhere in ``buildkit``;
* a command (``buildkit check``, ``buildkit cache export|import``) is a command of the CLI.

Recipe keys, profile fields and wheel tags that are written like Python names but are data are listed
in ``DATA_WORDS`` with where they are defined, and checked there.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import keyword
import pkgutil
import re
import types
import typing
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import cast

import tomllib

import buildkit

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "ARCHITECTURE.md"

#: words of the document that are not names of buildkit's code (data, a C++ macro, an environment
#: variable, a test's constant), and the file that defines each (checked)
DATA_WORDS = {
    "abi3": "buildkit/schema/recipe.schema.json",  # a kind of wheel, the recipe's `wheel:` key
    "TORCH_LIBRARY": "csrc/refops/src/ops.cpp",  # torch's C++ macro
    "ROCM_PATH": "buildkit/building/cibw.py",  # an environment variable of the build
    "properties": "buildkit/schema/recipe.schema.json",  # the JSON Schema keyword
    "PREFIXES": "tests/unit/test_recipe_sections.py",  # a constant of a test
}

#: a Python name, dotted, or an entry point of buildkit (`buildkit.cli:main`)
IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*|buildkit(?:\.\w+)*:\w+")


@cache
def modules() -> dict[str, types.ModuleType]:
    """Every module of buildkit, imported, by dotted name."""
    found = {"buildkit": buildkit}
    for info in pkgutil.walk_packages(buildkit.__path__, "buildkit."):
        if info.name.endswith("__main__"):
            continue
        found[info.name] = importlib.import_module(info.name)
    return found


def _within(scope: str) -> list[types.ModuleType]:
    return [m for name, m in modules().items() if name == scope or name.startswith(scope + ".")]


def _class_attributes(cls: type) -> set[str]:
    names = set(vars(cls))
    for klass in cls.__mro__[:-1]:
        names |= set(vars(klass).get("__annotations__", {}))
    return names


MISSING = object()


def _attribute(obj: object, name: str) -> object:
    if hasattr(obj, name):
        return cast(object, getattr(obj, name))
    if inspect.isclass(obj) and name in _class_attributes(obj):
        return name  # a field without a default
    return MISSING


@cache
def _parameter_types(module: types.ModuleType) -> dict[str, list[type]]:
    """Each parameter of ``module``'s functions -> the classes it is annotated with (``ctx: Context``)."""
    found: dict[str, list[type]] = {}
    for value in vars(module).values():
        if inspect.isfunction(value) and value.__module__ == module.__name__:
            try:
                hints = typing.get_type_hints(value)
            except Exception:  # an annotation only a type checker resolves
                continue
            for name, hint in hints.items():
                if inspect.isclass(hint):
                    found.setdefault(name, []).append(hint)
    return found


@cache
def _own_names(module: types.ModuleType, classes_only: bool = False) -> list[set[str]]:
    """The attributes (fields included) of each class ``module`` defines, and the parameters of each of
    its functions (``ceilings_reader``, the reader a command injects into ``expand``)."""
    found = []
    for value in vars(module).values():
        if getattr(value, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(value):
            found.append(_class_attributes(value))
        elif inspect.isfunction(value) and not classes_only:
            found.append(set(inspect.signature(value).parameters))
    return found


def names_something(word: str, scope: str) -> bool:
    """``word`` (``expand``, ``Plan.job``, ``fsutil.atomic_write``, ``ctx.err``) is a module, a name a
    module defines, a class attribute, a function's parameter or an attribute of the class it is
    annotated with, looked for in the modules of ``scope`` (a dotted package or module name)."""
    if ":" in word:  # an entry point, module:attribute
        dotted, _, attr = word.partition(":")
        return dotted in modules() and _attribute(modules()[dotted], attr) is not MISSING
    inside = _within(scope)
    first, *rest = word.split(".")
    starts: list[object] = []
    for module in inside:
        name = module.__name__
        if name.endswith(f".{first}") or name == first:
            starts.append(module)
        if first in vars(module):
            starts.append(vars(module)[first])
        if rest:  # `ctx.err`: a method of the class a function's `ctx` parameter is annotated with
            starts += _parameter_types(module).get(first, [])
        if not rest and any(first in own for own in _own_names(module)):
            return True
    for obj in starts:
        for part in rest:
            obj = _attribute(obj, part)
            if obj is MISSING:
                break
        else:
            return True
    return False


def path_exists(word: str, base: Path) -> bool:
    """A path of the repository: relative to the row's folder, to ``buildkit/`` or to the top (a module may
    be written without its ``.py``, alternatives of an extension as ``*.yaml|json``)."""
    if word.startswith(("/", "~")) or "://" in word:
        return True  # a path inside a container or on the host (`/opt/rocm`, `~/.netrc`), a URL
    if "<" in word or word.startswith("$"):
        return True  # a pattern with placeholders, e.g. `$XDG_CACHE_HOME/rocm-buildkit/sources/<sha256>/`
    if word.startswith("share/"):
        return True  # where the installation puts the package data, not a path of the checkout
    head, *alternatives = word.split()[0].split("|")
    patterns = [head] + [f"{head.rsplit('.', 1)[0]}.{alt}" for alt in alternatives]
    for pattern in (p.rstrip("/") for p in patterns):
        if "/" not in pattern:
            # a bare file name (`probe.sh`, `smoke.py`): below the row's folder or buildkit/
            candidates = [*base.rglob(pattern), *(REPO / "buildkit").rglob(pattern)]
        else:
            roots = (base, REPO / "buildkit", REPO)
            candidates = [hit for root in roots for p in (pattern, pattern + ".py") for hit in root.glob(p)]
        if not candidates:
            return False
    return True


def is_command(words: list[str]) -> bool:
    """``buildkit image prune --containers``, ``buildkit cache export|import``: a command of the CLI."""
    import click

    from buildkit.cli import cli

    command: click.Command = cli
    for word in words:
        if word.startswith("-") or not isinstance(command, click.Group):
            break
        ctx = click.Context(command)
        found = [command.get_command(ctx, name) for name in word.split("|")]
        if any(sub is None for sub in found):
            return False
        command = found[0]  # type: ignore[assignment]
    return True


def prose_and_rows(text: str) -> Iterator[tuple[int, str, str]]:
    """(line, scope, text) for every line outside code fences; a table row scopes to its package or module."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        scope = "buildkit"
        row = re.match(r"\| `(buildkit/[\w/]+/|[\w]+\.py)` \|", line)
        if row:
            where = row.group(1).removeprefix("buildkit/").rstrip("/").removesuffix(".py")
            scope = "buildkit." + where.replace("/", ".")
        yield number, scope, line


@cache
def command_names() -> set[str]:
    """Every command and sub-command name of the CLI (``check``, ``prune``)."""
    import click

    from buildkit.cli import cli

    names: set[str] = set()
    groups: list[click.Group] = [cli]
    while groups:
        group = groups.pop()
        for name in group.list_commands(click.Context(group)):
            names.add(name)
            sub = group.get_command(click.Context(group), name)
            if isinstance(sub, click.Group):
                groups.append(sub)
    return names


@cache
def class_member_names() -> set[str]:
    """The methods and fields of every class buildkit defines (``to_json``)."""
    return {
        name for module in modules().values() for own in _own_names(module, classes_only=True) for name in own
    }


@cache
def imported_by(scope: str) -> set[str]:
    """The top-level names of the modules the modules of ``scope`` import (function-local ones too)."""
    names = set()
    for module in _within(scope):
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


def code_exists(word: str, scope: str) -> bool:
    if word in command_names():
        return True  # `check`, `prune`: a command
    if f"buildkit.{word}" in modules():
        return True  # `compare`: a stage or foundation, named from any row
    if scope == "buildkit" and "." not in word and importlib.util.find_spec(word) is not None:
        return True  # in prose, a module of Python or of a dependency: `socket`, `urllib3`, `cryptography`
    if ":" in word or scope == "buildkit":
        return names_something(word, "buildkit")
    # a row names its own package's or module's things; a dotted name (`docker_engine.throwaway`) may
    # name another's
    # name another's, and a method or field name (`to_json`) may be any class's
    if names_something(word, scope) or word in imported_by(scope):
        return True  # its own name, or a module it imports (`requests`)
    return names_something(word, "buildkit") if "." in word else word in class_member_names()


def problems(text: str) -> tuple[list[str], set[str]]:
    """What names nothing (``file:line: `word` (scope)``), and the words of ``DATA_WORDS`` it needed."""
    found, data = [], set()
    for number, scope, line in prose_and_rows(text):
        base = REPO / scope.replace(".", "/") if scope != "buildkit" else REPO
        if not base.is_dir():
            base = base.parent
        for word in re.findall(r"`([^`]+)`", line):
            if not word.strip():
                continue
            word = word.removesuffix("(...)").removesuffix("()")
            call = re.match(r"([A-Za-z_][\w.]*)\(", word)  # `check(facts) -> Iterable[Finding]`
            if call:
                word = call.group(1)
            if word.startswith("buildkit ") and not word.startswith("buildkit/"):
                ok = is_command(word.split()[1:])
            elif "/" in word.split()[0] or re.fullmatch(r"[\w.-]+\.(py|sh|toml|yaml|json|md)", word):
                ok = path_exists(word, base)
            elif keyword.iskeyword(word):
                continue  # `raise`
            elif IDENTIFIER.fullmatch(word):
                ok = code_exists(word.removeprefix("buildkit.") if ":" not in word else word, scope)
                if not ok and word in DATA_WORDS:
                    where = (REPO / DATA_WORDS[word]).read_text(encoding="utf-8")
                    ok = all(re.search(rf"\b{re.escape(part)}\b", where) for part in word.split("."))
                    data.add(word)
            else:
                continue  # a recipe key with its colon, a flag, an environment setting: not a name of code
            if not ok:
                found.append(f"docs/ARCHITECTURE.md:{number}: `{word}` ({scope})")
    return found, data


def test_every_backticked_name_in_the_architecture_document_exists() -> None:
    found, data = problems(DOC.read_text(encoding="utf-8"))
    assert found == []
    # no stale entry: each data word is in the document where no code of that name is
    assert data == set(DATA_WORDS)


def test_the_check_catches_what_names_nothing() -> None:
    text = "\n".join(
        [
            "| `buildkit/plan/` | `models`, `expand`, `Plan.job`, `select_jobs`, `Plan.nothing` | `expand` |",
            "| `fsutil.py` | `atomic_write`, `parse_size`, `to_json` (a method), `prune` (a command) |",
            "By `Plan.job`; `docker_engine.throwaway(...)`, `buildkit.cli:main`, `buildkit.cli:nothing`.",
            "`buildkit/nothing/`, `docker/profiles.toml`, `buildkit/rocm/*.yaml|py`.",
            "`buildkit/rocm/*.yaml|json`, `probe.sh`, `no-such.sh`, `gate/facts.py`, `rules/waivers`.",
            "`buildkit image prune --containers`, `buildkit frobnicate`, `buildkit cache export|import`.",
            "`buildkit cache export|nothing`, `--flag`, `key:`, `check(facts) -> Iterable[Finding]`.",
            "| `buildkit/building/` | `check`, `publish` (commands), `socket`, `ceilings_reader` | `run` |",
            "A reader (`ceilings_reader`), `socket`, `urllib3`, `no_such_module_anywhere`.",
            "`ctx.err(message, at)` positions a problem: `raise` it, or `ctx.report` it; `ctx.nothing`.",
            "```",
            "`select_jobs` inside a fence is not prose",
            "```",
        ]
    )
    assert problems(text)[0] == [
        "docs/ARCHITECTURE.md:1: `select_jobs` (buildkit.plan)",
        "docs/ARCHITECTURE.md:1: `Plan.nothing` (buildkit.plan)",
        "docs/ARCHITECTURE.md:2: `parse_size` (buildkit.fsutil)",  # defined, but in units.py
        "docs/ARCHITECTURE.md:3: `buildkit.cli:nothing` (buildkit)",
        "docs/ARCHITECTURE.md:4: `buildkit/nothing/` (buildkit)",
        "docs/ARCHITECTURE.md:5: `buildkit/rocm/*.yaml|json` (buildkit)",
        "docs/ARCHITECTURE.md:5: `no-such.sh` (buildkit)",
        "docs/ARCHITECTURE.md:5: `rules/waivers` (buildkit)",  # only in the gate's row
        "docs/ARCHITECTURE.md:6: `buildkit frobnicate` (buildkit)",
        "docs/ARCHITECTURE.md:7: `buildkit cache export|nothing` (buildkit)",
        "docs/ARCHITECTURE.md:8: `socket` (buildkit.building)",  # Python's, not a module of the row's package
        "docs/ARCHITECTURE.md:8: `ceilings_reader` (buildkit.building)",  # a parameter of plan's `expand`
        "docs/ARCHITECTURE.md:9: `no_such_module_anywhere` (buildkit)",
        "docs/ARCHITECTURE.md:10: `ctx.nothing` (buildkit)",  # `ctx: Context` has no such method
    ]


def _diagram(text: str, heading: str) -> list[str]:
    section = text.split(heading, 1)[1]
    block = section.split("```", 2)[1]
    return [line.strip() for line in block.strip().splitlines()]


def test_the_layer_diagram_is_the_import_contract() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    drawn = _diagram(DOC.read_text(encoding="utf-8"), "## Who may import whom")

    def names(line: str) -> list[str]:
        return sorted(name.strip() for name in line.split("|"))

    assert [names(line) for line in drawn] == [names(line) for line in layers]
