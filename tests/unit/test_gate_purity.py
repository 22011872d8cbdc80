"""The gate is pure: facts and a configuration in, verdicts out (docs/ARCHITECTURE.md).

Every module under ``buildkit/gate/`` is parsed with :mod:`ast` (nothing is imported) and must not

* import a network client (``urllib``, ``http``, ``requests``, ``urllib3``, ``socket``), the index
  client (:mod:`buildkit.pyindex`), the cache home (``buildkit.fsutil.cache_home``), ``tempfile`` or
  ``shutil``, at module level, inside a function or under ``if TYPE_CHECKING:``;
* write a file: no ``open(..., "w"|"a"|"x"|"+")`` (nor ``Path.open`` with such a mode), no
  ``atomic_write``, no ``.write_text``/``.write_bytes``, no ``.mkdir``/``.touch``/``.unlink``/
  ``.rmdir``/``.rename``/``.symlink_to``, no ``os.replace``/``os.rename``/``os.remove``.

What needs those lives beside the gate: :mod:`buildkit.compare` (the last release on an index, a
torch's exports and their cache) and :mod:`buildkit.service` (command logic).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GATE = ROOT / "buildkit" / "gate"

FORBIDDEN_MODULES = (
    "urllib",
    "http",
    "requests",
    "urllib3",
    "socket",
    "tempfile",
    "shutil",
    "buildkit.pyindex",
)
FORBIDDEN_NAMES = {
    ("buildkit.fsutil", "cache_home"),
    ("buildkit.fsutil", "atomic_write"),
    ("buildkit", "pyindex"),
}
WRITING_METHODS = {"write_text", "write_bytes", "mkdir", "touch", "unlink", "rmdir", "rename", "symlink_to"}
WRITING_OS = {"replace", "rename", "remove", "unlink", "makedirs", "mkdir", "rmdir", "symlink"}


def _forbidden_module(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in FORBIDDEN_MODULES)


def _write_mode(call: ast.Call, position: int) -> bool:
    """Whether the call's mode (``position``-th argument or ``mode=``) is a constant that writes."""
    mode: ast.expr | None = call.args[position] if len(call.args) > position else None
    for kw in call.keywords:
        if kw.arg == "mode":
            mode = kw.value
    if mode is None:
        return False
    if not isinstance(mode, ast.Constant) or not isinstance(mode.value, str):
        return True  # a mode the test cannot read is taken as writing
    return any(c in mode.value for c in "wax+")


def violations(source: str, where: str = "<module>") -> list[str]:
    """What in ``source`` imports the network or the cache home, or writes a file."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source, where)):
        at = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            out += [f"{at}: import {a.name}" for a in node.names if _forbidden_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _forbidden_module(node.module):
                out.append(f"{at}: from {node.module} import ...")
            out += [
                f"{at}: from {node.module} import {a.name}"
                for a in node.names
                if (node.module, a.name) in FORBIDDEN_NAMES
            ]
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "open" and _write_mode(node, 1):
                out.append(f"{at}: open(..., writing mode)")
            elif isinstance(func, ast.Name) and func.id == "atomic_write":
                out.append(f"{at}: atomic_write(...)")
            elif isinstance(func, ast.Attribute):
                owner = func.value
                if func.attr in WRITING_METHODS:
                    out.append(f"{at}: .{func.attr}(...)")
                elif func.attr == "atomic_write":
                    out.append(f"{at}: atomic_write(...)")
                elif func.attr == "open" and _write_mode(node, 0):
                    out.append(f"{at}: .open(writing mode)")
                elif isinstance(owner, ast.Name) and owner.id == "os" and func.attr in WRITING_OS:
                    out.append(f"{at}: os.{func.attr}(...)")
    return out


def test_the_checker_finds_what_it_must() -> None:
    """Each forbidden form is reported; reading is not."""
    bad = {
        "import urllib.request": "import urllib.request",
        "from http.client import HTTPConnection": "from http.client",
        "import requests": "import requests",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import socket": "import socket",
        "def f():\n    from buildkit.fsutil import cache_home": "import cache_home",
        "from buildkit.fsutil import atomic_write": "import atomic_write",
        "from buildkit.pyindex import fetch_page": "from buildkit.pyindex",
        "open(p, 'w')": "open(",
        "open(p, mode='ab')": "open(",
        "open(p, 'r+')": "open(",
        "path.open('wb')": ".open(",
        "path.write_text('x')": ".write_text",
        "path.write_bytes(b'x')": ".write_bytes",
        "fsutil.atomic_write(p, b'')": "atomic_write",
        "path.parent.mkdir(parents=True)": ".mkdir",
        "os.replace(a, b)": "os.replace",
    }
    for source, expected in bad.items():
        found = violations(source)
        assert len(found) == 1 and expected in found[0], (source, found)
    fine = "import json\nopen(p).read()\nopen(p, 'rb')\npath.read_bytes()\nname.replace('a', 'b')\n"
    assert violations(fine) == []


def test_the_gate_neither_talks_to_a_network_nor_writes() -> None:
    modules = sorted(GATE.rglob("*.py"))
    assert len(modules) > 20  # the gate's modules and its rules
    found = [v for p in modules for v in violations(p.read_text("utf-8"), str(p.relative_to(ROOT)))]
    assert found == []
