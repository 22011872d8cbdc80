"""``publish --check-install``: which file real pip and real uv resolve from the published index, for each
job's Python and platform, the two ways users configure the index.

The classic failure (vLLM #44660): an index that serves only cp312 wheels, and ``pip install
--extra-index-url <index> vllm`` on Python 3.11 silently installs PyPI's wheel of the same name; so
does a newer version on PyPI, or a local label a resolver ranks otherwise. For each (project, Python,
platform) a job of the publish covers (with ``--recipe``, every job the recipe plans: a Python whose
job published nothing is checked too), each tool is asked in two configurations:

* ``index-url``: ``--index-url INDEX --extra-index-url PYPI``;
* ``extra-index-url``: ``--extra-index-url INDEX`` (PyPI the default index).

pip: ``pip install --isolated --dry-run --no-deps --ignore-installed --report`` with the job's
``--python-version``/``--implementation cp``/``--abi``/``--platform`` (the report names the file's
URL). uv: ``uv pip compile --no-config --python-version --python-platform --emit-index-annotation``
(the version and the index it came from; uv takes an ``--extra-index-url`` before the
``--index-url``, and by default only the first index that has the project). A configuration fails when
the resolver would install a file from another index than INDEX, or another version than the
published one; one that resolves nothing (an error the user sees) is reported, not failed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename

from buildkit.records import Key, json_shape

MODES = ("index-url", "extra-index-url")
TOOLS = ("pip", "uv")
PYPI_SIMPLE = "https://pypi.org/simple/"


@dataclass(frozen=True)
class Target:
    """One (project, Python, platform) a user may install on, and the version published for it."""

    project: str
    python: str  # "3.12"
    platform: str  # "manylinux_2_28_x86_64"
    version: str | None  # the version published for it (None: nothing published for this Python)


@json_shape(
    Key("project", "target.project"),
    Key("python", "target.python"),
    Key("platform", "target.platform"),
    Key("published_version", "target.version"),
    *("tool", "mode", "version", "source", "ours", "failed", "detail"),
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

    def describe(self) -> str:
        t = self.target
        state = "FAIL" if self.failed else ("ok" if self.ours else "note")
        return (
            f"{state:<4} {self.tool} ({self.mode}) CPython {t.python} {t.platform}: {t.project} "
            f"-> {self.detail}"
        )


def targets_of(wheels: Sequence[Path], planned: Sequence[tuple[str, str, str]] = ()) -> list[Target]:
    """The targets of the published ``wheels`` (their cpXY tags and platforms) and of the ``planned``
    (project, Python, platform) jobs; each with the highest version published for it."""
    found: dict[tuple[str, str, str], str | None] = {
        (canonicalize_name(p), py, plat): None for p, py, plat in planned
    }
    for wheel in wheels:
        name, version, _, tags = parse_wheel_filename(wheel.name)
        for tag in tags:
            match = re.fullmatch(r"cp(\d)(\d+)", tag.interpreter)
            if match is None or tag.platform == "any":
                continue
            key = (canonicalize_name(name), f"{match[1]}.{match[2]}", tag.platform)
            best = found.get(key)
            if best is None or parse_wheel_filename(f"x-{best}-py3-none-any.whl")[1] < version:
                found[key] = str(version)
    return [Target(p, py, plat, v) for (p, py, plat), v in sorted(found.items())]


def _indexes(mode: str, index: str, pypi: str) -> list[str]:
    if mode == "index-url":
        return ["--index-url", index, "--extra-index-url", pypi]
    return ["--index-url", pypi, "--extra-index-url", index]


def _pip(target: Target, mode: str, index: str, pypi: str, work: Path) -> tuple[str | None, str | None, str]:
    report = work / "report.json"
    report.unlink(missing_ok=True)
    abi = "cp" + target.python.replace(".", "")
    cmd = [
        sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--no-deps", "--ignore-installed",
        "--disable-pip-version-check", "--quiet", "--report", str(report), "--target", str(work / "t"),
        "--python-version", target.python, "--implementation", "cp", "--abi", abi,
        "--platform", target.platform, *_indexes(mode, index, pypi), target.project,
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, timeout=300)
    if done.returncode != 0 or not report.is_file():
        lines = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
        return (
            None,
            None,
            (lines[0] if lines else done.stderr.strip()[-300:]) or f"pip exit {done.returncode}",
        )
    installs = json.loads(report.read_text(encoding="utf-8")).get("install", [])
    if not installs:
        return None, None, "pip would install nothing"
    item = installs[0]
    url = str(item.get("download_info", {}).get("url", ""))
    return str(item.get("metadata", {}).get("version")), url, url.rsplit("/", 1)[-1]


def _uv(target: Target, mode: str, index: str, pypi: str, work: Path) -> tuple[str | None, str | None, str]:
    uv = shutil.which("uv")
    if uv is None:
        return None, None, "uv is not installed"
    platform = "x86_64-" + target.platform.removesuffix("_x86_64")  # uv's "x86_64-manylinux_2_28"
    cmd = [
        uv, "pip", "compile", "-", "--no-config", "--no-cache", "--quiet", "--no-header",
        "--emit-index-annotation", "--python-version", target.python, "--python-platform", platform,
        *_indexes(mode, index, pypi),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
    done = subprocess.run(
        cmd, input=target.project + "\n", capture_output=True, text=True, check=False, env=env, timeout=300
    )
    if done.returncode != 0:
        first = next(
            (line for line in done.stderr.splitlines() if line.strip()), f"uv exit {done.returncode}"
        )
        return None, None, first.strip()
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
    tools: Sequence[str] = TOOLS,
) -> list[Resolution]:
    """Ask each tool, in each mode, what it resolves for each target (module docstring)."""
    index = index.rstrip("/") + "/"
    out: list[Resolution] = []
    with tempfile.TemporaryDirectory(prefix="buildkit-resolve-") as tmp:
        work = Path(tmp)
        for target in targets:
            for tool in tools:
                for mode in MODES:
                    probe = _pip if tool == "pip" else _uv
                    version, source, detail = probe(target, mode, index, pypi.rstrip("/") + "/", work)
                    ours = source is not None and _same_index(source, index)
                    if version is None:
                        failed, detail = False, f"nothing resolves ({detail})"
                    elif not ours:
                        failed = True
                        where = "published" if target.version else "published for this Python"
                        detail = (
                            f"{detail}: a file from another index, not the {where} "
                            f"{target.project} {target.version or ''}".rstrip()
                        )
                    elif target.version is not None and version != target.version:
                        failed, detail = (
                            True,
                            f"{detail}: version {version}, not the published {target.version}",
                        )
                    else:
                        failed = False
                    out.append(Resolution(target, tool, mode, version, source, ours, failed, detail))
    return out
