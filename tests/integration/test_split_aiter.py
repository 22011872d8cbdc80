"""``buildkit split`` on a real wheel: amd-aiter 0.1.7.post2.dev18 from PyPI, a ``py3-none-any`` wheel
of 38 MiB (160 MiB installed) carrying 2,613 standalone code objects: 1,281 for gfx942 and 1,220 for
gfx950 under ``aiter_meta/hsa/<gfx>/``, and 112 gfx950 Triton AOT kernels under
``aiter/ops/triton/configs/`` whose path names no processor (placed by their ELF header).

Real artifacts, no mock: the wheel is fetched once per machine (pinned by sha256, as the corpus is:
:mod:`tests.corpus.fetch`), split by the CLI, and installed by real pip (the one ``python -m venv``
gives) into fresh virtual environments:

* A: the fat wheel alone (``--no-deps``);
* B: ``pip install 'amd-aiter[gfx942]'`` from a local PEP 503 index (``--index-url file://``, written
  by :func:`buildkit.publish.index.add_wheels`) holding the split's three wheels and amd-aiter's own
  requirements (pybind11, pandas, einops, psutil and theirs: the real wheels pip downloads once from the
  index this machine is configured with, cached). Nothing else is reachable (pip runs with no
  configuration file and no ``PIP_*`` variable), so pip resolves the extra itself: the device wheel of
  gfx942 is installed because the host's ``Provides-Extra: gfx942`` requires it, the gfx950 one is not;
* C: host, gfx942 and gfx950 wheels (``--no-deps``), then ``pip uninstall amd-aiter-device-gfx950``.

Asserted, byte for byte (every file's sha256 and executable bit, under the fat wheel's top-level
folders, ``.dist-info`` left out; pip runs with ``--no-compile``, so every ``.pyc`` is the wheel's
own): C equals A; B equals A without exactly the 1,332 gfx950 code objects; C after the uninstall
equals B.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from buildkit.fsutil import cache_home
from buildkit.manifest import sha256_file
from buildkit.publish import index
from tests.corpus.fetch import CorpusWheel, FetchError, fetch

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
AITER = CorpusWheel(
    name="amd-aiter",
    version="0.1.7.post2.dev18",
    filename="amd_aiter-0.1.7.post2.dev18-py3-none-any.whl",
    sha256="fe139d74438217c35e87e3b961166bac8db2d381eadccb371da2e63615f05a31",
    size=40_189_929,
)
HOST = AITER.filename
GFX942 = "amd_aiter_device_gfx942-0.1.7.post2.dev18-py3-none-any.whl"
GFX950 = "amd_aiter_device_gfx950-0.1.7.post2.dev18-py3-none-any.whl"
PY = f"cp{sys.version_info.major}{sys.version_info.minor}"


def _unreachable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def fat() -> Path:
    try:
        return fetch(AITER)
    except FetchError as exc:
        _unreachable(f"amd-aiter cannot be fetched from PyPI: {exc}")
        raise


@pytest.fixture(scope="module")
def split(fat: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("split")
    started = time.monotonic()
    result = _buildkit("split", str(fat), "--out", str(out), "--json")
    seconds = time.monotonic() - started
    assert result.returncode == 0, result.stdout + result.stderr
    document: dict[str, object] = json.loads(result.stdout)
    document["seconds"] = seconds
    document["out"] = str(out)
    print(
        f"\nsplit of {fat.name} in {seconds:.1f}s: "
        + ", ".join(
            f"{o['wheel']} {o['size']} bytes"
            for o in document["outputs"]  # type: ignore[attr-defined]
        )
    )
    return document


def _buildkit(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args], capture_output=True, text=True, env=env, timeout=600
    )


def _wheel_members(wheel: Path) -> dict[str, zipfile.ZipInfo]:
    with zipfile.ZipFile(wheel) as zf:
        return {i.filename: i for i in zf.infolist() if not i.filename.endswith("/")}


def test_split_sizes_targets_and_repeatable_bytes(
    fat: Path, split: dict[str, object], tmp_path: Path
) -> None:
    outputs = {o["target"]: o for o in split["outputs"]}  # type: ignore[attr-defined]
    assert list(outputs) == [None, "gfx942", "gfx950"]
    host, gfx942, gfx950 = outputs[None], outputs["gfx942"], outputs["gfx950"]
    assert (host["wheel"], gfx942["wheel"], gfx950["wheel"]) == (HOST, GFX942, GFX950)
    assert all(o["passed"] and o["errors"] == 0 for o in outputs.values())
    assert (gfx942["code_objects"], gfx950["code_objects"], host["code_objects"]) == (1281, 1332, 0)
    assert split["placed_by_header"] == 112 and split["bundles"] == []
    # each wheel a third of the fat one, give or take: the code objects were ~2/3 of its bytes
    for o in outputs.values():
        assert 0.25 * AITER.size < o["size"] < 0.40 * AITER.size, o
    # the members: every fat member in exactly one output (metadata aside), the code objects by target
    fat_members = _wheel_members(fat)
    out = Path(str(split["out"]))
    seen: dict[str, str] = {}
    for name in (HOST, GFX942, GFX950):
        for member in _wheel_members(out / name):
            if ".dist-info/" not in member:
                assert member not in seen, f"{member} in {seen.get(member)} and {name}"
                seen[member] = name
    assert set(seen) == {m for m in fat_members if ".dist-info/" not in m}
    by_folder = {
        n: sum(1 for m, w in seen.items() if w == n and "/hsa/gfx942/" in m) for n in (GFX942, GFX950)
    }
    assert by_folder[GFX950] == 0 and by_folder[GFX942] == 1281
    # the same input gives the same bytes
    again = _buildkit("split", str(fat), "--out", str(tmp_path / "again"))
    assert again.returncode == 0, again.stderr
    for name in (HOST, GFX942, GFX950):
        assert sha256_file(tmp_path / "again" / name) == sha256_file(out / name), name


def _deps(fat: Path) -> list[Path]:
    """The real wheels of amd-aiter's requirements for this Python, downloaded once (pip, with this
    machine's configuration) into the test-artifact cache."""
    folder = cache_home() / "test-artifacts" / f"amd-aiter-{AITER.version}-deps-{PY}"
    done = folder / "complete"
    if not done.is_file():
        with zipfile.ZipFile(fat) as zf:
            metadata = zf.read(f"amd_aiter-{AITER.version}.dist-info/METADATA").decode()
        requires = [
            line.split(":", 1)[1].strip()
            for line in metadata.splitlines()
            if line.startswith("Requires-Dist:")
        ]
        folder.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "-q", "-d", str(folder)]
        got = subprocess.run([*command, *requires], capture_output=True, text=True, timeout=600)
        if got.returncode != 0:
            _unreachable(f"amd-aiter's requirements cannot be downloaded: {got.stderr.strip()[-300:]}")
        done.write_text("\n".join(sorted(p.name for p in folder.glob("*.whl"))) + "\n")
    return [folder / name for name in done.read_text().split()]


def _isolated() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PYTHONPATH"}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    return path / "bin" / "python"


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(python), "-m", "pip", *args], capture_output=True, text=True, env=_isolated(), timeout=900
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def _site(python: Path) -> Path:
    found = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(found.stdout.strip())


def _tree(site: Path, tops: set[str]) -> dict[str, tuple[str, bool]]:
    """relative path -> (sha256, executable) of every file under the ``tops`` folders of ``site``."""
    tree: dict[str, tuple[str, bool]] = {}
    for top in sorted(tops):
        for path in _walk(site / top):
            rel = path.relative_to(site).as_posix()
            tree[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), os.access(path, os.X_OK))
    return tree


def _walk(folder: Path) -> Iterator[Path]:
    for entry in sorted(folder.rglob("*")):
        if entry.is_file():  # aiter ships 12 .pyc files of its own; pip runs with --no-compile
            yield entry


def test_pip_installs_the_extra_from_a_local_index_and_the_trees_match(
    fat: Path, split: dict[str, object], tmp_path: Path
) -> None:
    out = Path(str(split["out"]))
    deps = _deps(fat)
    root = tmp_path / "index"
    index.add_wheels(root, [(w, sha256_file(w)) for w in (out / HOST, out / GFX942, out / GFX950, *deps)])
    url = (root / "simple").as_uri() + "/"
    tops = {m.split("/", 1)[0] for m in _wheel_members(fat) if ".dist-info/" not in m and "/" in m}
    assert tops == {"aiter", "aiter_meta"}
    timings: dict[str, float] = {}

    t0 = time.monotonic()
    a = _venv(tmp_path / "a")
    _pip(a, "install", "--no-deps", "--no-compile", "--no-index", str(fat))
    timings["fat"] = time.monotonic() - t0
    fat_tree = _tree(_site(a), tops)
    assert len(fat_tree) == sum(1 for m in _wheel_members(fat) if ".dist-info/" not in m)

    t0 = time.monotonic()
    b = _venv(tmp_path / "b")
    report = tmp_path / "b-report.json"
    _pip(b, "install", "--no-compile", "--index-url", url, "--report", str(report), "amd-aiter[gfx942]")
    timings["extra"] = time.monotonic() - t0
    installed = {i["metadata"]["name"]: i for i in json.loads(report.read_text())["install"]}
    assert installed["amd-aiter"]["requested_extras"] == ["gfx942"]
    assert installed["amd-aiter"]["download_info"]["url"].endswith(HOST)
    assert installed["amd-aiter-device-gfx942"]["requested"] is False  # pulled in by the extra
    assert "amd-aiter-device-gfx950" not in installed
    _pip(b, "check")  # the device wheel's requirement on its host is met
    gfx950_members = _wheel_members(out / GFX950)
    gfx950 = {rel for rel in fat_tree if rel in gfx950_members}
    assert len(gfx950) == 1332
    extra_tree = _tree(_site(b), tops)
    assert extra_tree == {rel: v for rel, v in fat_tree.items() if rel not in gfx950}

    t0 = time.monotonic()
    c = _venv(tmp_path / "c")
    wheels = [str(out / n) for n in (HOST, GFX942, GFX950)]
    _pip(c, "install", "--no-deps", "--no-compile", "--no-index", *wheels)
    timings["all"] = time.monotonic() - t0
    assert _tree(_site(c), tops) == fat_tree  # byte for byte, executable bits included
    _pip(c, "uninstall", "-y", "amd-aiter-device-gfx950")
    assert _tree(_site(c), tops) == extra_tree
    print(f"\ninstalls (venv + pip): {', '.join(f'{k} {v:.1f}s' for k, v in timings.items())}")
