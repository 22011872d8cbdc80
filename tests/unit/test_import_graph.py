"""The import graph of buildkit/ has no cycle, function-local and ``TYPE_CHECKING`` imports included.

Every module under buildkit/ is parsed with :mod:`ast` (nothing is imported). An edge A -> B is any
``import``/``from ... import`` in A that names B, wherever it is written: module level, inside a
function (a local import only delays the cycle, it does not remove it), inside ``try``, under ``if
TYPE_CHECKING:`` (it never runs, but a type-level loop is a loop of the design: two modules needing
each other's types are one module, or a third owes both the types). ``from buildkit import x`` is an
edge to ``buildkit.x`` when ``x`` is a module, else to ``buildkit``; importing ``buildkit.a.b`` also runs the
``__init__`` of every package on the way (``buildkit.a``) that is not already one of A's own
packages (those are initialised before A runs).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "buildkit"

#: cycles that run only through modules other branches are refactoring at the same time (gate/,
#: build/, image/ceilings.py, smoke.py, docker_engine.py): to be cleared when those branches merge.
#: Each entry is the set of modules of one strongly connected component. Empty: none known.
KNOWN_CYCLES: list[frozenset[str]] = []


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree``, those under ``if TYPE_CHECKING:`` included."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def named_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules (or, for a name that is not a module, the packages) the imports of ``name`` (at
    ``path``) name, before the packages their import runs are added."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            package = name.split(".") if is_package else name.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, *([base] if base else [])])
        for alias in node.names:
            candidate = f"{base}.{alias.name}"
            targets.add(candidate if candidate in modules else base)
    return targets


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The buildkit modules ``name`` (at ``path``) imports, package ``__init__``s included."""
    targets = named_modules(name, path, modules)
    own = set(_ancestors(name)) | {name}
    edges: set[str] = set()
    for target in targets:
        if target not in modules:
            continue
        edges.update(a for a in (*_ancestors(target), target) if a in modules and a not in own)
    return edges


def import_graph() -> dict[str, set[str]]:
    modules = all_modules()
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (``[a, b, ..., a]``) per strongly connected component with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(v: str) -> None:  # Tarjan, recursive: the graph is a few dozen modules deep at most
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: set[str] = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return [_one_cycle(graph, c) for c in components]


def _one_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the smallest module of ``component`` (breadth-first)."""
    start = min(component)
    paths: dict[str, list[str]] = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & component):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    raise AssertionError(f"no cycle through {start} in {sorted(component)}")


def test_the_graph_is_read() -> None:
    """The parser sees the edges it must: module level, function-local, relative and package ones."""
    graph = import_graph()
    assert "buildkit.targets" in graph["buildkit.recipe.schema"]
    assert "buildkit.errors" in graph["buildkit.targets"]
    assert "buildkit.recipe" in graph["buildkit.cli.archs"]  # an import of the package's __init__
    assert "buildkit.inspect.symtab" in graph["buildkit.judge.wheel"]  # function-local
    assert "buildkit.rocm" in graph["buildkit.targets"]  # ``from buildkit import rocm as rocmdata``
    assert "buildkit.plan.models" in graph["buildkit.gate.config"]  # under ``if TYPE_CHECKING:``


def test_cycles_are_found(tmp_path: Path) -> None:
    """The finder reports a cycle hidden by a function-local import, with its path."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "x.py").write_text("def f():\n    from p import y\n")
    (pkg / "y.py").write_text("from p.x import f\n")
    modules = {"p": pkg / "__init__.py", "p.x": pkg / "x.py", "p.y": pkg / "y.py"}
    found = {n: imported_modules(n, path, modules) for n, path in modules.items()}
    assert found == {"p": set(), "p.x": {"p.y"}, "p.y": {"p.x"}}
    assert cycles(found) == [["p.x", "p.y", "p.x"]]
    (pkg / "y.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.x import f\n")
    found = {n: imported_modules(n, path, modules) for n, path in modules.items()}
    assert cycles(found) == [["p.x", "p.y", "p.x"]]  # a type-level loop is a loop


def test_targets_is_a_bottom_layer() -> None:
    """buildkit.targets imports only errors, the ROCm data and the standard library."""
    assert import_graph()["buildkit.targets"] <= {"buildkit", "buildkit.errors", "buildkit.rocm"}


def test_the_plan_layer_never_imports_the_image_layer() -> None:
    graph = import_graph()
    plan = [m for m in graph if m == "buildkit.plan" or m.startswith("buildkit.plan.")]
    assert plan
    for name in plan:
        assert not {m for m in graph[name] if m.startswith(("buildkit.image", "docker"))}, name


def test_no_import_cycle() -> None:
    found = [c for c in cycles(import_graph()) if frozenset(c) not in KNOWN_CYCLES]
    assert not found, "import cycles:\n" + "\n".join("  " + " -> ".join(c) for c in found)


def test_known_cycles_are_still_there() -> None:
    """A known cycle that has gone must leave KNOWN_CYCLES too."""
    present = [frozenset(c) for c in cycles(import_graph())]
    assert [c for c in KNOWN_CYCLES if c not in present] == []


#: packages whose modules still read names from the package's own ``__init__`` (build/: ``Echo``;
#: rocm/: the lazy data loaders), to be cleared by the branches that own them.
KNOWN_BACK_IMPORTS = frozenset({"buildkit.building", "buildkit.rocm"})


def test_no_module_imports_its_own_package_back() -> None:
    """A module of a package never imports a name of that package's ``__init__`` (or of a package above
    it, ``buildkit`` aside): the ``__init__`` is a facade for the layers above, and a module that reads
    it back ties the package in a loop the graph above cannot see (its own packages are initialised
    first). Importing a sibling module through the package (``from buildkit.recipe import model``)
    names the module, not the facade, and is fine."""
    modules = all_modules()
    back = {}
    for name, path in modules.items():
        own = set(_ancestors(name)) - {"buildkit"} - KNOWN_BACK_IMPORTS
        found = named_modules(name, path, modules) & own
        if path.name != "__init__.py" and found:
            back[name] = sorted(found)
    assert back == {}
