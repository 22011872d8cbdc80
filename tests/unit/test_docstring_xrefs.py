"""Every cross-reference in buildkit's docstrings names something that exists.

buildkit's docstrings (and ``#:`` attribute comments) point at code in two ways:

* Sphinx roles: ``:func:`buildkit.gate.evaluate.evaluate```, ``:class:`~buildkit.errors.RecipeError```,
  ``:meth:`from_json``` (relative to the module, then to the enclosing class), with a ``~`` or a
  ``title <target>`` form;
* a backticked dotted name whose first part is ``buildkit`` or a name the module imports
  (````buildkit.building.cibw````, ````os.replace````, ````cibw.render_environment````); a file name
  (````releases.yaml````) is not a reference, nor is a dotted recipe key (````gate.waive````) in a
  module that imports no ``gate``.

Each reference is resolved as Python would: the longest importable module prefix, then attribute
lookup (a dataclass field without a default counts by its annotation). Relative names are tried in
the module's namespace, the enclosing classes, the module's imports (``TYPE_CHECKING`` and
function-local ones included) and builtins. The role's kind is checked too: ``:mod:`` names a module,
``:class:``/``:exc:`` a class, ``:func:``/``:meth:`` something callable (or a property).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "buildkit"

ROLE = re.compile(r":(?:py:)?(func|class|mod|meth|attr|data|exc|obj|const):`([^`]+)`")
BACKTICKED = re.compile(r"(?<![`:\w])``?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?``?(?![`\w])")
#: the last part of a backticked file name, never a reference to code
FILE_SUFFIXES = {
    "py",
    "so",
    "yaml",
    "toml",
    "json",
    "txt",
    "cfg",
    "sh",
    "html",
    "in",
    "md",
    "c",
    "cpp",
    "h",
    "hip",
}
_MISSING = object()


def _is_callable(obj: object) -> bool:
    return callable(obj) or isinstance(obj, (property, functools.cached_property))


KINDS: dict[str, Callable[[object], bool]] = {
    "mod": lambda o: isinstance(o, types.ModuleType),
    "class": inspect.isclass,
    "exc": lambda o: inspect.isclass(o) and issubclass(o, BaseException),
    "func": _is_callable,
    "meth": _is_callable,
}


@dataclass(frozen=True)
class Reference:
    path: str
    line: int
    kind: str  # the role, or "backticks"
    target: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind} `{self.target}`"


@dataclass(frozen=True)
class Scope:
    module: str
    classes: tuple[str, ...]  # enclosing class paths, innermost first ("Outer.Inner", "Outer")
    imports: dict[str, str]  # a name bound by an import anywhere in the module -> what it names


def _attribute(obj: object, name: str) -> object:
    try:
        return getattr(obj, name)
    except AttributeError:
        pass
    if inspect.isclass(obj) and any(name in vars(k).get("__annotations__", {}) for k in obj.__mro__):
        return None  # a field without a default: declared, but no class attribute
    return _MISSING


def lookup(dotted: str) -> object:
    """The object ``dotted`` names: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = _attribute(obj, name)
            if obj is _MISSING:
                return _MISSING
        return obj
    return _MISSING


def resolves(kind: str, target: str, scope: Scope) -> bool:
    name = target.strip()
    titled = re.fullmatch(r".*<(.+)>", name, re.S)
    if titled:
        name = titled.group(1)
    name = name.lstrip("~")
    relative = name.startswith(".")
    name = name.lstrip(".").removesuffix("()")
    head, _, rest = name.partition(".")
    candidates = [f"{scope.module}.{name}"]
    if relative:  # `:mod:`.run``: a sibling, or a module of a package above
        parts = scope.module.split(".")
        candidates += [".".join([*parts[:i], name]) for i in range(len(parts) - 1, 0, -1)]
    candidates += [f"{scope.module}.{cls}.{name}" for cls in scope.classes]
    if head in scope.imports:
        candidates.append(scope.imports[head] + (f".{rest}" if rest else ""))
    candidates += [name, f"builtins.{name}"]
    check = KINDS.get(kind)
    for candidate in candidates:
        obj = lookup(candidate)
        if obj is _MISSING:
            continue
        if check is None or (obj is None and kind not in ("mod", "class", "exc")) or check(obj):
            return True
    return False


def _statements(node: ast.AST) -> Iterator[ast.stmt]:
    """The statements directly inside ``node`` (bodies, branches, handlers), not expressions."""
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(node, field, ()):
            if isinstance(child, ast.stmt):
                yield child
            else:  # an except handler or a match case holds statements
                yield from _statements(child)


def _all_statements(node: ast.AST) -> Iterator[ast.stmt]:
    for child in _statements(node):
        yield child
        yield from _all_statements(child)


def _imports(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    names: dict[str, str] = {}
    for node in _all_statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    names[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([node.module] if node.module else []))
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
    return names


def references_in(text: str, path: str, first_line: int, scope: Scope) -> Iterator[Reference]:
    """The cross-references of one docstring or ``#:`` comment starting at ``first_line``."""

    def line_of(offset: int) -> int:
        return first_line + text.count("\n", 0, offset)

    for match in ROLE.finditer(text):
        yield Reference(path, line_of(match.start()), match.group(1), match.group(2))
    plain = ROLE.sub(lambda m: " " * len(m.group(0)), text)  # keep the offsets
    for match in BACKTICKED.finditer(plain):
        dotted = match.group(1)
        if dotted.rsplit(".", 1)[1] in FILE_SUFFIXES:
            continue
        if dotted.split(".")[0] == "buildkit" or dotted.split(".")[0] in scope.imports:
            yield Reference(path, line_of(match.start()), "backticks", dotted)


def module_references(
    source: str, path: str, module: str, is_package: bool
) -> Iterator[tuple[Reference, Scope]]:
    tree = ast.parse(source)
    imports = _imports(tree, module, is_package)
    class_spans: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, classes: tuple[str, ...]) -> Iterator[tuple[Reference, Scope]]:
        if isinstance(node, ast.ClassDef):
            qualified = f"{classes[0]}.{node.name}" if classes else node.name
            classes = (qualified, *classes)
            class_spans.append((node.lineno, node.end_lineno or node.lineno, qualified))
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                first = node.body[0].lineno
                scope = Scope(module, classes, imports)
                for ref in references_in(doc, path, first, scope):
                    yield ref, scope
        for child in _statements(node):
            yield from visit(child, classes)

    yield from visit(tree, ())
    # ``#:`` comments (Sphinx's attribute documentation), consecutive lines taken together
    lines = source.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].lstrip().startswith("#:"):
            i += 1
            continue
        start = i
        block = []
        while i < len(lines) and lines[i].lstrip().startswith("#:"):
            block.append(lines[i].lstrip()[2:])
            i += 1
        enclosing = sorted(
            ((lo, name) for lo, hi, name in class_spans if lo <= start + 1 <= hi), reverse=True
        )
        scope = Scope(module, tuple(name for _, name in enclosing), imports)
        for ref in references_in("\n".join(block), path, start + 1, scope):
            yield ref, scope


def all_references() -> list[tuple[Reference, Scope]]:
    found: list[tuple[Reference, Scope]] = []
    for file in sorted(PACKAGE.rglob("*.py")):
        rel = file.relative_to(ROOT).with_suffix("")
        is_package = rel.name == "__init__"
        module = ".".join(rel.parts[:-1] if is_package else rel.parts)
        found += module_references(file.read_text(), str(file.relative_to(ROOT)), module, is_package)
    return found


def test_every_docstring_cross_reference_names_something() -> None:
    refs = all_references()
    # the extraction works: buildkit's docstrings cross-reference hundreds of times, in both forms
    assert len(refs) > 500
    assert {ref.kind for ref, _ in refs} >= {"mod", "class", "func", "meth", "attr", "data", "backticks"}
    dangling = [str(ref) for ref, scope in refs if not resolves(ref.kind, ref.target, scope)]
    assert not dangling, "cross-references naming nothing:\n" + "\n".join(dangling)


def test_the_checker_finds_what_names_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # what this checker caught in the tree: a module named as a function, a function of another module
    # named as a local one, a method renamed, a class the package does not re-export; and what it
    # must accept: a method of the docstring's own class, a field without a default, a module's import
    source = '''"""Runs for :func:`buildkit.gate.evaluate` and :func:`not_elf_load`.

See ``buildkit.gate.no_such_module`` and :class:`~buildkit.gate.GateConfig`.
"""
from buildkit.inspect.models import ElfInfo

#: :attr:`ElfInfo.no_such_field`, :data:`X`
X = 1


class Scanner:
    """Until :meth:`missing` says, then :meth:`walk` and :attr:`ElfInfo.undefined_of_interest`."""

    def walk(self) -> None:
        """:meth:`walk`, :mod:`buildkit.errors`, :exc:`~buildkit.errors.RecipeError`, :func:`os.replace`,
        ``buildkit.fsutil.atomic_write``, :class:`buildkit.fsutil`, ``ElfInfo.nothing``."""
'''
    (tmp_path / "xref_sample.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    refs = list(module_references(source, "xref_sample.py", "xref_sample", False))
    assert len(refs) == 16
    dangling = sorted(str(ref) for ref, scope in refs if not resolves(ref.kind, ref.target, scope))
    assert dangling == [
        "xref_sample.py:12: meth `missing`",
        "xref_sample.py:16: backticks `ElfInfo.nothing`",
        "xref_sample.py:16: class `buildkit.fsutil`",  # a module, not a class
        "xref_sample.py:1: func `buildkit.gate.evaluate`",  # a module, not a function
        "xref_sample.py:1: func `not_elf_load`",
        "xref_sample.py:3: backticks `buildkit.gate.no_such_module`",
        "xref_sample.py:3: class `~buildkit.gate.GateConfig`",
        "xref_sample.py:7: attr `ElfInfo.no_such_field`",
    ]


def test_relative_names_resolve_in_the_module_then_the_class() -> None:
    scope = Scope("buildkit.gate.config", ("GateConfig",), {})
    assert resolves("meth", "from_json", scope)
    assert resolves("class", "GateConfig", scope)
    assert resolves("func", "len", scope)  # builtins
    assert not resolves("meth", "from_json", Scope("buildkit.gate.config", (), {}))
    assert resolves("class", "GateConfig.from_json <buildkit.gate.config.GateConfig>", Scope("x", (), {}))
    writer = Scope("buildkit.split.writer", (), {})
    assert resolves("mod", ".run", writer)  # Sphinx's leading dot: a module beside this one
    assert not resolves("mod", "run", writer)
