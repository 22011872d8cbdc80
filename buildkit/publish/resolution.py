"""``publish --check-install``: which file real pip and real uv resolve from the published index, for each
job's Python and platform, the two ways users configure the index.

The classic failure (vLLM #44660): an index that serves only cp312 wheels, and ``pip install
--extra-index-url <index> vllm`` on Python 3.11 silently installs PyPI's wheel of the same name; so
does a newer version on PyPI, or a local label a resolver ranks otherwise. Each (project, Python,
platform) a job covers (with ``--recipe``, every planned job: a Python whose job published nothing is
checked too) is asked of each tool with ``--index-url INDEX --extra-index-url PYPI`` and with
``--extra-index-url INDEX`` alone. uv resolves every extra the published wheel provides and each
Requires-Dist, so a dependency no index serves fails; uv takes an ``--extra-index-url`` before the
``--index-url``, and by default only the first index that has the project. A configuration fails when
the resolver would install a file from another index, another version, or nothing (no file for that
Python, or a METADATA that contradicts the file name); a tool not installed is skipped, and a check
where nothing was asked fails (``service.publish``). A Python-independent wheel is asked about under
every CPython it serves within its ``Requires-Python``; a ``-any`` wheel on :data:`ANY_PLATFORM`.

The public index must answer (:func:`public_index_problem`): pip skips an unreachable extra index with
a warning. When it does not, only ``--index-url INDEX`` alone is asked and the check is inconclusive
unless the user asked for that alone (``--local-only``)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename

from buildkit.errors import IndexUnavailable
from buildkit.pyindex import IndexClient, IndexRefused, NotFound, file_path, simple_page_url
from buildkit.records import Key, json_shape

MODES = ("index-url", "extra-index-url")
LOCAL = "local"  # --index-url INDEX alone
_TOOLS = ("pip", "uv")
PYPI_SIMPLE = "https://pypi.org/simple/"
#: the platform a ``-any`` wheel is asked about on (it installs on every one; the resolvers need one)
ANY_PLATFORM = "manylinux_2_28_x86_64"


@dataclass(frozen=True)
class Target:
    """One (project, Python, platform) a user may install on, and the version published for it."""

    project: str
    python: str  # "3.12"
    platform: str  # "manylinux_2_28_x86_64"
    version: str | None  # the version published for it (None: nothing published for this Python)
    extras: tuple[str, ...] = ()  # the published wheel's Provides-Extra: uv resolves them all


@json_shape(
    Key("project", "target.project"),
    Key("python", "target.python"),
    Key("platform", "target.platform"),
    Key("published_version", "target.version"),
    *("tool", "mode", "version", "source", "ours", "failed", "detail", "checked"),
)
@dataclass(frozen=True)
class Resolution:
    target: Target
    tool: str  # "pip" | "uv"
    mode: str  # "index-url" | "extra-index-url"
    version: str | None  # what the resolver picked (None: nothing)
    source: str | None  # the file's URL (pip) or the index it came from (uv)
    ours: bool  # from the published index
    failed: bool
    detail: str
    checked: bool = True  # False: the tool is not installed, nothing was asked

    def describe(self) -> str:
        t = self.target
        state = "FAIL" if self.failed else ("ok" if self.ours else "note" if self.checked else "skip")
        return (
            f"{state:<4} {self.tool} ({self.mode}) CPython {t.python} {t.platform}: {t.project} "
            f"-> {self.detail}"
        )


def targets_of(
    wheels: Sequence[Path],
    planned: Sequence[tuple[str, str, str]] = (),
    pythons: Sequence[str] | None = None,
) -> list[Target]:
    """The targets of the published ``wheels`` and of the ``planned`` jobs, each with the highest version
    published for it; a Python-independent tag stands for each of ``pythons`` it serves (module docstring)."""
    found: dict[tuple[str, str, str], str | None] = {
        (canonicalize_name(p), py, plat): None for p, py, plat in planned
    }
    known = tuple(pythons if pythons is not None else _known_pythons())
    extras: dict[tuple[str, str, str], tuple[str, ...]] = {}
    for wheel in wheels:
        name, version, _, tags = parse_wheel_filename(wheel.name)
        allowed, provided = _metadata(wheel)
        for tag in tags:
            platform = ANY_PLATFORM if tag.platform == "any" else tag.platform
            for python in _served(tag.interpreter, tag.abi, known):
                if allowed is not None and not allowed.contains(python, prereleases=True):
                    continue
                key = (canonicalize_name(name), python, platform)
                best = found.get(key)
                if best is None or parse_wheel_filename(f"x-{best}-py3-none-any.whl")[1] < version:
                    found[key] = str(version)
                    extras[key] = provided
    return [
        Target(p, py, plat, v, extras.get((p, py, plat), ()))
        for (p, py, plat), v in sorted(found.items(), key=_target_order)
    ]


def _target_order(item: tuple[tuple[str, str, str], str | None]) -> tuple[str, tuple[int, ...], str]:
    (project, python, platform), _ = item
    return project, tuple(int(part) for part in python.split(".")), platform


def _served(interpreter: str, abi: str, known: Sequence[str]) -> list[str]:
    """The CPythons (``"3.12"``) among ``known`` a tag's interpreter and ABI serve."""
    match = re.fullmatch(r"(cp|py)(\d)(\d*)", interpreter)
    if match is None:
        return []
    kind, major, minor = match[1], match[2], match[3]
    if kind == "cp" and abi != "abi3":
        return [f"{major}.{minor}"] if minor else []
    floor = (int(major), int(minor or 0))
    return [p for p in known if p.startswith(f"{major}.") and (int(major), int(p.split(".")[1])) >= floor]


def _known_pythons() -> tuple[str, ...]:
    # deferred (start-up time: the recipe layer, cibuildwheel): `publish` without --check-install
    from buildkit.recipe.sections.python import cibuildwheel_pythons

    return cibuildwheel_pythons()


def _metadata(wheel: Path) -> tuple[SpecifierSet | None, tuple[str, ...]]:
    """The wheel's ``Requires-Python`` and ``Provides-Extra`` (None and (): none, or the file cannot
    be read here)."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            name = next(n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
            text = zf.read(name).decode("utf-8", "replace")
    except (OSError, zipfile.BadZipFile, StopIteration):
        return None, ()
    allowed: SpecifierSet | None = None
    extras: list[str] = []
    for line in text.splitlines():
        if not line:
            break
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "requires-python" and allowed is None:
            with contextlib.suppress(InvalidSpecifier):  # the gate's core-metadata rule says so
                allowed = SpecifierSet(value)
        elif key == "provides-extra" and value:
            extras.append(value)
    return allowed, tuple(dict.fromkeys(extras))


def public_index_problem(pypi: str, project: str, timeout: float = 15.0) -> str | None:
    """Why the public index cannot be asked (None: it answers; a 404 or a refusal is an answer)."""
    if pypi.startswith("file:"):
        return None if file_path(pypi).is_dir() else f"{pypi}: no such folder"
    try:
        IndexClient(timeout=timeout, netrc=True).get(simple_page_url(pypi, project), timeout=timeout).close()
    except (NotFound, IndexRefused):
        return None
    except IndexUnavailable as err:
        return f"{pypi} cannot be reached ({err.message.splitlines()[0]})"
    return None


def _indexes(mode: str, index: str, pypi: str) -> list[str]:
    if mode == LOCAL:
        return ["--index-url", index]
    if mode == "index-url":
        return ["--index-url", index, "--extra-index-url", pypi]
    return ["--index-url", pypi, "--extra-index-url", index]


def _pip(target: Target, mode: str, index: str, pypi: str, work: Path) -> tuple[str | None, str | None, str]:
    report = work / "report.json"
    report.unlink(missing_ok=True)
    abi = "cp" + target.python.replace(".", "")
    cmd = [
        sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--no-deps", "--ignore-installed",
        "--disable-pip-version-check", "--report", str(report), "--target", str(work / "t"),
        "--python-version", target.python, "--implementation", "cp", "--abi", abi,
        "--platform", target.platform, *_indexes(mode, index, pypi), target.project,
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, timeout=300)
    if done.returncode != 0 or not report.is_file():
        lines = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
        # why pip passed over a file it found ("Discarding URL (from ...): Requested demo from URL has
        # inconsistent version: expected '1.0', but metadata has '9.9'", printed unless --quiet)
        lines += [
            "pip discarded it: " + line.split("): ", 1)[-1]
            for line in (done.stdout + done.stderr).splitlines()
            if line.startswith("Discarding ") and "): " in line
        ][:2]
        return (
            None,
            None,
            ("; ".join(lines) if lines else done.stderr.strip()[-300:]) or f"pip exit {done.returncode}",
        )
    installs = json.loads(report.read_text(encoding="utf-8")).get("install", [])
    if not installs:
        return None, None, "pip would install nothing"
    item = installs[0]
    url = str(item.get("download_info", {}).get("url", ""))
    return str(item.get("metadata", {}).get("version")), url, url.rsplit("/", 1)[-1]


_UV_MISSING = "uv is not installed"


def _uv(target: Target, mode: str, index: str, pypi: str, work: Path) -> tuple[str | None, str | None, str]:
    uv = shutil.which("uv")
    if uv is None:
        return None, None, _UV_MISSING
    platform = "x86_64-" + target.platform.removesuffix("_x86_64")  # uv's "x86_64-manylinux_2_28"
    cmd = [
        uv, "pip", "compile", "-", "--no-config", "--no-cache", "--quiet", "--no-header",
        "--emit-index-annotation", "--python-version", target.python, "--python-platform", platform,
        *_indexes(mode, index, pypi),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
    wanted = target.project + (f"[{','.join(target.extras)}]" if target.extras else "")
    done = subprocess.run(
        cmd, input=wanted + "\n", capture_output=True, text=True, check=False, env=env, timeout=300
    )
    if done.returncode != 0:  # "No solution found ...", then uv's cause (a dependency or extra missing)
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()][:2]
        return None, None, " ".join(lines) or f"uv exit {done.returncode}"
    pinned = re.search(rf"^{re.escape(target.project)}==(\S+)\s*\n\s*# from (\S+)", done.stdout, re.M | re.I)
    if pinned is None:
        return None, None, f"uv resolved no version of {target.project}: {done.stdout.strip()[:200]}"
    return pinned[1], pinned[2], f"{target.project}=={pinned[1]} from {pinned[2]}"


def _same_index(source: str, index: str) -> bool:
    """``source`` (a file's URL, or the index uv names) is served by the published ``index``: the same
    origin (an index server links its files elsewhere on its host: pypiserver's ``/packages/``), or for a
    file:// index, a path under the index's root (the parent of ``simple/``)."""
    got, ours = urllib.parse.urlsplit(source), urllib.parse.urlsplit(index)
    if ours.scheme == "file":
        root = ours.path.rstrip("/").removesuffix("/simple")
        return got.scheme == "file" and (got.path == root or got.path.startswith(root + "/"))
    return (got.scheme, got.hostname, got.port) == (ours.scheme, ours.hostname, ours.port)


def check_install(
    targets: Sequence[Target],
    index: str,
    pypi: str = PYPI_SIMPLE,
    tools: Sequence[str] = _TOOLS,
    modes: Sequence[str] = MODES,
) -> list[Resolution]:
    """Ask each tool, in each mode, what it resolves for each target (module docstring)."""
    index = index.rstrip("/") + "/"
    out: list[Resolution] = []
    with tempfile.TemporaryDirectory(prefix="buildkit-resolve-") as tmp:
        work = Path(tmp)
        for target in targets:
            for tool in tools:
                for mode in modes:
                    probe = _pip if tool == "pip" else _uv
                    version, source, detail = probe(target, mode, index, pypi.rstrip("/") + "/", work)
                    out.append(_judged(target, tool, mode, index, version, source, detail))
    return out


def _judged(
    target: Target, tool: str, mode: str, index: str, version: str | None, source: str | None, detail: str
) -> Resolution:
    ours = source is not None and _same_index(source, index)
    checked, failed = True, True
    if version is None and detail == _UV_MISSING:
        checked, failed = False, False
    elif version is None:
        where = "published" if target.version else "a file for this Python"
        detail = f"nothing resolves, where {where} should ({detail})"
    elif not ours:
        where = "published" if target.version else "published for this Python"
        detail = (
            f"{detail}: a file from another index, not the {where} {target.project} {target.version or ''}"
        ).rstrip()
    elif target.version is not None and version != target.version:
        detail = f"{detail}: version {version}, not the published {target.version}"
    else:
        failed = False
    return Resolution(target, tool, mode, version, source, ours, failed, detail, checked)
