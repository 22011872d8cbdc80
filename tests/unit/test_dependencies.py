"""Every third-party package buildkit uses at run time is a runtime dependency in pyproject.toml
(``pip install rocm-buildkit`` alone must run every command): the imports of every module under
buildkit/ (function-local ones included) and the modules it runs as ``sys.executable -m NAME``
(``twine``, ``cibuildwheel``, ``pip``), mapped to distributions by the installed metadata."""

from __future__ import annotations

import ast
import importlib.metadata
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).parents[2]
PACKAGE = REPO / "buildkit"


def declared() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {canonicalize_name(Requirement(line).name) for line in project["dependencies"]}


def _is_executable(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "executable"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def used_modules(tree: ast.AST) -> set[str]:
    """Top-level names of absolute imports, and of ``[sys.executable, "-m", "NAME", ...]`` commands."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.partition(".")[0])
        elif isinstance(node, ast.List) and len(node.elts) >= 3 and _is_executable(node.elts[0]):
            flag, name = node.elts[1], node.elts[2]
            if isinstance(flag, ast.Constant) and flag.value == "-m" and isinstance(name, ast.Constant):
                found.add(str(name.value).partition(".")[0])
    return found


def third_party() -> dict[str, set[str]]:
    """Module name -> the buildkit files using it, for every module that is not stdlib or buildkit."""
    out: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name in used_modules(tree) - set(sys.stdlib_module_names) - {"buildkit", "__future__"}:
            out.setdefault(name, set()).add(str(path.relative_to(REPO)))
    return out


def test_the_scan_sees_function_local_imports_and_dash_m_modules() -> None:
    tree = ast.parse(
        "def f():\n    import requests.adapters\n    from yaml import safe_load\n"
        "    run([sys.executable, '-m', 'twine', 'upload'])\n    run(['python', '-m', 'pip'])\n"
    )
    assert used_modules(tree) == {"requests", "yaml", "twine"}
    found = third_party()
    assert {"twine", "cibuildwheel", "docker", "requests"} <= set(found)
    assert "buildkit/publish/remote.py" in found["twine"]


def test_every_third_party_module_is_a_declared_runtime_dependency() -> None:
    runtime = declared()
    providers = importlib.metadata.packages_distributions()
    missing = []
    for module, files in sorted(third_party().items()):
        # not installed here (e.g. tomli on Python >= 3.11): the distribution is named like the module
        dists = {canonicalize_name(d) for d in providers.get(module, [module])}
        if not dists & runtime:
            missing.append(
                f"{module} (distribution {', '.join(sorted(dists))}; used in {', '.join(sorted(files))})"
            )
    assert not missing, "not in [project].dependencies: " + "; ".join(missing)


def test_twine_is_not_only_a_dev_extra() -> None:
    assert "twine" in declared()
