"""How a source tree decides the version of the wheels built from it: :func:`decide_version`.

Read, never run (``setup.py`` is parsed, not executed). The answer is a :class:`VersionDecision`:
``tool`` (the build gives the version, so the plan's is the wheel's), ``fixed`` (written down, and
where) or ``unknown``; the rules read for each: docs/REFERENCE.md, "Versions are decided before
compiling". A ``PKG-INFO`` version is reported with ``unknown`` only: an sdist says what it was
built as, not how a rebuild decides.
"""

from __future__ import annotations

import ast
import configparser
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: the variable rocm-buildkit sets to the planned version in the build (buildkit.building.cibw)
_BUILDKIT_VARIABLE = "BUILDKIT_VERSION"
_SCM_VARIABLE = "SETUPTOOLS_SCM_PRETEND_VERSION"
_SCM = "setuptools-scm (reads SETUPTOOLS_SCM_PRETEND_VERSION)"
#: files larger than this are not read (a version module is small)
_MAX_READ = 4 * 2**20
#: hatch's default pattern for ``[tool.hatch.version] path``
_ASSIGNMENT = re.compile(
    r"""(?im)^(?:__version__|VERSION)\s*(?::\s*str\s*)?=\s*(['"])v?(?P<version>[^'"\n]+)\1"""
)
_VERSION_FILES = ("_version.py", "version.py", "__version__.py", "__about__.py", "__init__.py")
_SKIP_DIRS = {"tests", "test", "docs", "doc", "examples", "build", "dist", "third_party", "node_modules"}


@dataclass(frozen=True)
class VersionDecision:
    kind: str  # "tool", "fixed" or "unknown"
    how: str  # what decides it, for messages: "[project] version", "setuptools-scm (...)", ...
    version: str | None = None  # the fixed version, as written
    file: str | None = None  # POSIX path relative to the tree: where it is fixed (or read)
    line: int | None = None
    seen: str | None = None  # unknown: what was seen nonetheless (PKG-INFO's version)

    @property
    def where(self) -> str:
        """``file:line`` (or ``file``), or the empty string."""
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file


def _tool(how: str, file: str, line: int | None = None) -> VersionDecision:
    return VersionDecision("tool", how, file=file, line=line)


def _fixed(version: str, how: str, file: str, line: int | None) -> VersionDecision:
    return VersionDecision("fixed", how, version=version.strip(), file=file, line=line)


def _unknown(how: str) -> VersionDecision:
    return VersionDecision("unknown", how)


def _read(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > _MAX_READ:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _toml_line(text: str, table: str, key: str) -> int | None:
    """The line of ``key = ...`` in ``[table]`` (or of a dotted ``table.key = ...`` at the top)."""
    current = ""
    key_re = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    dotted = re.compile(rf"^\s*{re.escape(table)}\.{re.escape(key)}\s*=")
    for n, line in enumerate(text.splitlines(), 1):
        header = re.match(r"^\s*\[+\s*([^\]]+?)\s*\]+", line)
        if header:
            current = header.group(1).replace('"', "").replace("'", "")
            continue
        if (current == table and key_re.match(line)) or (current == "" and dotted.match(line)):
            return n
    return None


def decide_version(tree: Path) -> VersionDecision:
    """How the project in ``tree`` (the folder with pyproject.toml or setup.py) decides its version."""
    pyproject_text = _read(tree / "pyproject.toml")
    setup_py = _read(tree / "setup.py")
    data: dict[str, Any] = {}
    if pyproject_text is not None:
        try:
            data = tomllib.loads(pyproject_text)
        except tomllib.TOMLDecodeError as exc:
            return _unknown(f"pyproject.toml is not valid TOML ({exc})")
        decided = _from_pyproject(tree, data, pyproject_text)
        if decided is not None:
            return decided
    if setup_py is not None:
        decided = _from_setup_py(tree, setup_py, _package_roots(tree, data))
        if decided is not None:
            return decided
    decided = _from_setup_cfg(tree)
    if decided is not None:
        return decided
    if pyproject_text is None and setup_py is None:
        return _unknown(f"no pyproject.toml or setup.py in {tree.name or tree}")
    names = (
        "pyproject.toml, setup.py nor setup.cfg" if setup_py is not None else "pyproject.toml nor setup.cfg"
    )
    return _unknown(f"neither {names} names a version rocm-buildkit can read{_seen(tree)}")


def _seen(tree: Path) -> str:
    """What an sdist's PKG-INFO says (it was built as that version; a rebuild may decide otherwise)."""
    text = _read(tree / "PKG-INFO")
    if text is not None:
        m = re.search(r"(?m)^Version:[ \t]*(\S+)", text)
        if m:
            return f"; PKG-INFO:{_line_of(text, m.start())} says Version: {m.group(1)}"
    return ""


def _requires(data: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for raw in data.get("build-system", {}).get("requires", []) or []:
        try:
            names.add(canonicalize_name(Requirement(str(raw)).name))
        except InvalidRequirement:
            continue
    return names


def _table(data: Mapping[str, Any], *keys: str) -> Mapping[str, Any]:
    """``data[k1][k2]...`` when each step is a table, else an empty one."""
    for key in keys:
        found = data.get(key)
        if not isinstance(found, dict):
            return {}
        data = found
    return data


def _from_pyproject(tree: Path, data: dict[str, Any], text: str) -> VersionDecision | None:
    project = data.get("project")
    tool = _table(data, "tool")
    backend = str(data.get("build-system", {}).get("build-backend", ""))
    if isinstance(project, dict):
        dynamic = project.get("dynamic") or []
        if "version" in project and "version" not in dynamic:
            line = _toml_line(text, "project", "version")
            return _fixed(str(project["version"]), "[project] version", "pyproject.toml", line)
        if "version" not in dynamic:
            return _unknown("pyproject.toml's [project] has neither version nor dynamic = ['version']")
    requires = _requires(data)
    hatch = _table(tool, "hatch", "version")
    if hatch.get("source") == "vcs":
        line = _toml_line(text, "tool.hatch.version", "source")
        return _tool("hatch-vcs (reads SETUPTOOLS_SCM_PRETEND_VERSION)", "pyproject.toml", line)
    if isinstance(hatch.get("path"), str):
        return _from_assignment(tree, hatch["path"], "[tool.hatch.version] path")
    dyn = _table(tool, "setuptools", "dynamic", "version")
    if isinstance(dyn.get("attr"), str):
        return _from_attr(tree, dyn["attr"], _package_roots(tree, data), "[tool.setuptools.dynamic] attr")
    files = dyn.get("file")
    if isinstance(files, str | list):
        first = files if isinstance(files, str) else (files[0] if files else "")
        return _from_text_file(tree, str(first), "[tool.setuptools.dynamic] file")
    if "setuptools_scm" in tool or "setuptools-scm" in requires:
        return _tool(_SCM, "pyproject.toml", _header_line(text, "tool.setuptools_scm"))
    provider = _table(tool, "scikit-build", "metadata", "version")
    name = str(provider.get("provider", ""))
    if name.endswith("setuptools_scm"):
        return _tool("scikit-build-core's setuptools-scm provider", "pyproject.toml")
    if name.endswith("regex") and isinstance(provider.get("input"), str):
        return _from_assignment(tree, provider["input"], "scikit-build-core's regex provider")
    if backend.startswith("flit_core") and isinstance(project, dict):
        module = _table(tool, "flit", "module").get("name")
        name = str(module or project.get("name", "")).replace("-", "_")
        return _from_attr(
            tree, f"{name}.__version__", _package_roots(tree, data), "flit's module __version__"
        )
    poetry = _table(tool, "poetry")
    if isinstance(poetry.get("version"), str) and not isinstance(project, dict):
        if "poetry-dynamic-versioning" in requires:
            return _unknown("poetry-dynamic-versioning decides it (it does not read BUILDKIT_VERSION)")
        line = _toml_line(text, "tool.poetry", "version")
        return _fixed(poetry["version"], "[tool.poetry] version", "pyproject.toml", line)
    if backend == "mesonpy":
        return _from_meson(tree)
    return None


def _header_line(text: str, table: str) -> int | None:
    for n, line in enumerate(text.splitlines(), 1):
        if re.match(rf"^\s*\[\s*{re.escape(table)}\s*\]", line):
            return n
    return None


def _package_roots(tree: Path, data: Mapping[str, Any]) -> tuple[Path, ...]:
    """Where top-level packages live: the tree, ``src/``, setuptools' ``package-dir`` root."""
    roots = [tree]
    package_dir = _table(data, "tool", "setuptools", "package-dir")
    if isinstance(package_dir.get(""), str):
        roots.insert(0, tree / package_dir[""])
    roots.append(tree / "src")
    return tuple(dict.fromkeys(roots))


def _rel(tree: Path, path: Path) -> str:
    try:
        return path.relative_to(tree).as_posix()
    except ValueError:
        return path.as_posix()


def _module_file(roots: tuple[Path, ...], dotted: str) -> Path | None:
    parts = [p for p in dotted.split(".") if p]
    if not parts:
        return None
    for root in roots:
        for candidate in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")):
            if candidate.is_file():
                return candidate
    return None


def _from_attr(tree: Path, attr: str, roots: tuple[Path, ...], how: str) -> VersionDecision:
    module, _, name = attr.rpartition(".")
    path = _module_file(roots, module)
    if path is None:
        return _unknown(f"{how} names {attr}, and rocm-buildkit finds no module {module} in the source")
    return _module_literal(tree, path, name, roots, how) or _unknown(
        f"{how}: {_rel(tree, path)} computes {name} (no literal rocm-buildkit can read)"
    )


def _module_literal(
    tree: Path, path: Path, name: str, roots: tuple[Path, ...], how: str, depth: int = 0
) -> VersionDecision | None:
    """The literal ``name`` is bound to in module ``path`` (following ``name = OTHER`` and
    ``from .x import name`` a few steps), or a tool decision when the module reads BUILDKIT_VERSION."""
    text = _read(path)
    if text is None or depth > 4:
        return None
    rel = _rel(tree, path)
    for variable in (_BUILDKIT_VARIABLE, _SCM_VARIABLE):
        if variable in text:
            return _tool(f"{rel} reads {variable}", rel, _line_of(text, text.index(variable)))
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in module.body:
        value, lineno = _binding(node, name)
        if value is None:
            if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
                original = next(a.name for a in node.names if (a.asname or a.name) == name)
                target = _import_target(path, node, roots)
                if target is not None:
                    return _module_literal(tree, target, original, roots, how, depth + 1)
            continue
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return _fixed(value.value, f"{how} ({name} in {rel})", rel, lineno)
        if isinstance(value, ast.Name):
            return _module_literal(tree, path, value.id, roots, how, depth + 1)
    return None


def _binding(node: ast.stmt, name: str) -> tuple[ast.expr | None, int]:
    """The value of a module-level ``name = value`` (or ``name: str = value``) statement."""
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
        return node.value, node.lineno
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
        return node.value, node.lineno
    return None, 0


def _import_target(path: Path, node: ast.ImportFrom, roots: tuple[Path, ...]) -> Path | None:
    """The module file ``from X import ...`` in ``path`` names (relative imports resolved)."""
    if node.level:
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        parts = (node.module or "").split(".") if node.module else []
        return _module_file((base,), ".".join(parts)) if parts else (base / "__init__.py")
    return _module_file(roots, node.module or "")


def _from_assignment(tree: Path, relpath: str, how: str) -> VersionDecision:
    path = tree / relpath
    text = _read(path)
    if text is None:
        return _unknown(f"{how} names {relpath}, which is not in the source")
    for variable in (_BUILDKIT_VARIABLE, _SCM_VARIABLE):
        if variable in text:
            return _tool(f"{relpath} reads {variable}", relpath, _line_of(text, text.index(variable)))
    m = _ASSIGNMENT.search(text)
    if m is None:
        return _unknown(f"{how}: {relpath} assigns no literal __version__ or VERSION")
    return _fixed(m.group("version"), how, relpath, _line_of(text, m.start()))


def _from_text_file(tree: Path, relpath: str, how: str) -> VersionDecision:
    text = _read(tree / relpath)
    if text is None or not text.strip():
        return _unknown(f"{how} names {relpath}, which is not in the source (or is empty)")
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            return _fixed(line.strip(), how, relpath, n)
    return _unknown(f"{how}: {relpath} is empty")  # pragma: no cover - text.strip() was not empty


def _setup_calls(module: ast.Module) -> Iterator[ast.Call]:
    for node in ast.walk(module):
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if name == "setup":
                yield node


def _from_setup_py(tree: Path, text: str, roots: tuple[Path, ...]) -> VersionDecision | None:
    for variable in (_BUILDKIT_VARIABLE, _SCM_VARIABLE):
        if variable in text:
            return _tool(f"setup.py reads {variable}", "setup.py", _line_of(text, text.index(variable)))
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError):
        return _unknown("setup.py does not parse as Python")
    expr: ast.expr | None = None
    for call in _setup_calls(module):
        for kw in call.keywords:
            if kw.arg == "use_scm_version" and not (
                isinstance(kw.value, ast.Constant) and not kw.value.value
            ):
                return _tool(_SCM, "setup.py", kw.value.lineno)
            if kw.arg == "version":
                expr = kw.value
    if expr is None:
        return None  # setup.cfg or pyproject.toml says it, or nothing does
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return _fixed(expr.value, "setup(version=...)", "setup.py", expr.lineno)
    found: VersionDecision | None = None
    if isinstance(expr, ast.Name):
        found = _setup_name(tree, module, expr.id, roots)
    elif isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        imported = _imported_module(module, expr.value.id)
        path = _module_file(roots, imported) if imported else None
        if path is not None:
            found = _module_literal(tree, path, expr.attr, roots, "setup(version=...)")
    shown = ast.unparse(expr)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return (
        found
        or _named_version_file(tree, text)
        or _unknown(f"setup.py:{expr.lineno} computes version={shown}{_seen(tree)}")
    )


def _imported_module(module: ast.Module, alias: str) -> str | None:
    """The module ``import X`` / ``import X as alias`` binds to ``alias`` in setup.py."""
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            for a in node.names:
                if (a.asname or a.name.partition(".")[0]) == alias:
                    return a.name if a.asname else a.name.partition(".")[0]
    return None


def _setup_name(tree: Path, module: ast.Module, name: str, roots: tuple[Path, ...]) -> VersionDecision | None:
    """``setup(version=NAME)``: NAME's literal in setup.py, or in the module it is imported from."""
    for node in module.body:
        value, lineno = _binding(node, name)
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return _fixed(value.value, f"setup(version={name})", "setup.py", lineno)
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                if (a.asname or a.name) == name:
                    path = _module_file(roots, node.module)
                    if path is not None:
                        return _module_literal(tree, path, a.name, roots, f"setup(version={name})")
    return None


def _named_version_file(tree: Path, setup_text: str) -> VersionDecision | None:
    """A ``__version__`` literal in a version module that setup.py names (``cupy/_version.py``
    read with ``exec``), or a ``VERSION`` file it opens: only when they agree."""
    found: list[VersionDecision] = []
    for path in _candidate_files(tree):
        rel = _rel(tree, path)
        parent = path.parent.name
        named = path.name in setup_text and (path.name != "__init__.py" or parent in setup_text)
        if not named:
            continue
        decided = _from_assignment(tree, rel, f"setup.py reads {rel}")
        if decided.kind != "unknown":
            found.append(decided)
    for name in ("VERSION", "VERSION.txt", "version.txt"):
        if re.search(rf"""['"]{re.escape(name)}['"]""", setup_text) and (tree / name).is_file():
            decided = _from_text_file(tree, name, f"setup.py reads {name}")
            if decided.kind == "fixed":
                found.append(decided)
    if not found or len({d.version for d in found}) > 1 or any(d.kind == "tool" for d in found):
        return next((d for d in found if d.kind == "tool"), None)
    return found[0]


def _candidate_files(tree: Path, depth: int = 3) -> Iterator[Path]:
    def walk(folder: Path, level: int) -> Iterator[Path]:
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            return
        for entry in entries:
            if entry.is_symlink() or entry.name.startswith("."):
                continue
            if entry.is_dir() and level < depth and entry.name not in _SKIP_DIRS:
                yield from walk(entry, level + 1)
            elif entry.is_file() and entry.name in _VERSION_FILES and level > 0:
                yield entry

    yield from walk(tree, 0)


def _from_setup_cfg(tree: Path) -> VersionDecision | None:
    text = _read(tree / "setup.cfg")
    if text is None:
        return None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return _unknown("setup.cfg does not parse")
    value = parser.get("metadata", "version", fallback=None)
    if value is None:
        return None
    m = re.search(r"(?m)^version\s*[=:]", text)
    line = _line_of(text, m.start()) if m else None
    value = value.strip()
    if value.startswith("attr:"):
        return _from_attr(tree, value[5:].strip(), _package_roots(tree, {}), "setup.cfg version = attr:")
    if value.startswith("file:"):
        first = value[5:].split(",")[0].strip()
        return _from_text_file(tree, first, "setup.cfg version = file:")
    return _fixed(value, "setup.cfg [metadata] version", "setup.cfg", line)


def _from_meson(tree: Path) -> VersionDecision:
    text = _read(tree / "meson.build")
    if text is None:
        return _unknown("meson-python, without a meson.build")
    m = re.search(r"project\s*\((?:[^()]|\([^()]*\))*?\bversion\s*:\s*'([^']+)'", text, re.S)
    if m is None:
        return _unknown("meson.build's project() has no literal version")
    return _fixed(m.group(1), "meson.build project(version: ...)", "meson.build", _line_of(text, m.start(1)))
