"""Every function-local import in buildkit/ says why it is not at the top of its module.

An import inside a function is for start-up time (a command that does not need PyYAML, requests,
rich, the Docker SDK or ``cryptography`` does not load them), an import cycle, or an optional
dependency; the reason is a comment on the import's line or on the line before it. A block of
consecutive imports shares the comment above its first line. Anything else goes to the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "buildkit"

_OWNED = "owned by another change this session"

#: Modules whose uncommented local imports are excused, with why. Only shrinks: an entry with nothing
#: left to excuse fails the test, so that it is removed.
ALLOWED = {
    "buildkit/compare/torch_exports.py": _OWNED,
    "buildkit/gate/demangle.py": _OWNED,
    "buildkit/gate/options.py": _OWNED,
    "buildkit/gate/pyabi.py": _OWNED,
    "buildkit/gate/report.py": _OWNED,
    "buildkit/publish/trust.py": _OWNED,
}


def uncommented_local_imports(source: str) -> list[int]:
    """The line of each import inside a function with no comment on its line, on the line before,
    or above the block of consecutive imports it belongs to."""
    lines = source.splitlines()
    spans = sorted(
        {
            (node.lineno, node.end_lineno or node.lineno)
            for function in ast.walk(ast.parse(source))
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
            for node in ast.walk(function)
            if isinstance(node, (ast.Import, ast.ImportFrom))
        }
    )
    said: dict[int, bool] = {}  # the last line of an import -> whether it has its reason
    found = []
    for first, last in spans:
        before = lines[first - 2].strip() if first >= 2 else ""
        reason = "#" in lines[first - 1] or before.startswith("#") or said.get(first - 1, False)
        said[last] = reason
        if not reason:
            found.append(first)
    return found


def _all() -> dict[str, list[int]]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = uncommented_local_imports(path.read_text(encoding="utf-8"))
        if lines:
            out[path.relative_to(REPO).as_posix()] = lines
    return out


def test_every_local_import_says_why() -> None:
    found = _all()
    unexcused = [f"{name}:{line}" for name, lines in found.items() for line in lines if name not in ALLOWED]
    assert unexcused == []


def test_the_allow_list_only_names_modules_with_something_to_excuse() -> None:
    found = _all()
    assert sorted(module for module in ALLOWED if module not in found) == []


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ("import os\n\ndef f():\n    import json\n    return json\n", [4]),
        ("def f():\n    import json  # start-up time\n    return json\n", []),
        ("def f():\n    # start-up time: only on the error path\n    import json\n    import os\n", []),
        ("def f():\n    # one reason\n    import json\n\n    import os\n", [5]),
        ("def f():\n    def g():\n        from os import path\n    return g\n", [3]),
        ("class C:\n    def m(self):\n        from os import (\n            path,\n        )\n", [3]),
        ("import os\nif os:\n    import json\n", []),
    ],
)
def test_an_uncommented_local_import_is_found(source: str, lines: list[int]) -> None:
    assert uncommented_local_imports(source) == lines
