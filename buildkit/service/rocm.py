"""``buildkit rocm refresh``: the ROCm data brought up to date from AMD's own artifacts on PyPI.

AMD publishes Python wheels per ROCm patch release: ``hip-python`` (7.x: ``7.2.2.562.43``; 10.x:
``10.0.0.0.1.2``), ``rocm-bindings-core`` (10.x), ``rocm-llvm-python`` (7.x) and
``rocm-bindings-compiler`` (10.x). The first three components of their version are the ROCm release.
Their files say what the release ships: ``HIP_VERSION_NAME``/``ROCM_VERSION_NAME`` in the bindings'
version module, ``LLVM version X`` (and ``X <commit>``) in the LLVM library the compiler bindings
carry, and ``librocm_sysdeps_*`` in what an ELF needs (TheRock's system dependencies).

The weekly workflow (.github/workflows/rocm-data.yml) opens a pull request with :func:`diff`'s
output. Parsing is tested on stored copies of those sources (tests/data/rocm-sources/)."""

from __future__ import annotations

import datetime
import json
import re
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from buildkit import rocm as rocmdata
from buildkit.inspect import inspect_wheel
from buildkit.pyindex import IndexClient
from buildkit.rocm.data import releases as release_data

#: PyPI project -> the fact its wheels give (hip: the version module; llvm: the LLVM library)
_WATCHED: Mapping[str, str] = {
    "hip-python": "hip",
    "rocm-bindings-core": "hip",
    "rocm-llvm-python": "llvm",
    "rocm-bindings-compiler": "llvm",
}
_PYPI_JSON = "https://pypi.org/pypi/{project}/json"
_VERSION_NAME = re.compile(r"^(ROCM_VERSION_NAME|HIP_VERSION_NAME)\b[^\n]*?=\s*\"([^\"]+)\"", re.MULTILINE)
_LLVM_VERSION = re.compile(rb"LLVM version (\d+\.\d+\.\d+[A-Za-z]*)[^A-Za-z0-9.]")
_LLVM_COMMIT = re.compile(rb"(\d+\.\d+\.\d+[A-Za-z]*) ([0-9a-f]{40})\x00")
_LLVM_LIBRARY = re.compile(r"(^|/)lib(LLVM|rocmllvm)[^/]*\.so[^/]*$")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class WheelFile:
    """One file of a PyPI release, as the JSON API lists it."""

    project: str
    version: str
    filename: str
    url: str
    sha256: str
    uploaded: str  # ISO day


def rocm_release_of(version: str) -> str | None:
    """``10.0.0.0.1.2`` -> ``10.0.0``; ``7.2.2.562.46`` -> ``7.2.2``; None for AMD's placeholders
    (``0.0.2``) and anything with fewer than three numeric components."""
    parts = version.split(".")
    if len(parts) < 3 or not all(p.isdigit() for p in parts[:3]) or parts[0] == "0":
        return None
    return ".".join(parts[:3])


def parse_pypi_json(project: str, data: bytes | str) -> list[WheelFile]:
    """The unyanked wheels of every release of ``project`` in PyPI's JSON API answer."""
    doc = json.loads(data)
    found = []
    for version, files in (doc.get("releases") or {}).items():
        for f in files or ():
            if f.get("packagetype") != "bdist_wheel" or f.get("yanked"):
                continue
            found.append(
                WheelFile(
                    project=project,
                    version=str(version),
                    filename=str(f["filename"]),
                    url=str(f["url"]),
                    sha256=str((f.get("digests") or {}).get("sha256", "")),
                    uploaded=str(f.get("upload_time_iso_8601") or f.get("upload_time") or "")[:10],
                )
            )
    return found


def _readable(f: WheelFile) -> bool:
    """A Linux x86_64 wheel for CPython 3.12 (or abi3), or a pure one: the one file read per release."""
    name = f.filename
    linux = "x86_64" in name and "linux" in name and "cp312" in name
    return linux or name.endswith("-none-any.whl")


def newest_per_release(files: Iterable[WheelFile]) -> dict[str, WheelFile]:
    """The wheel to read for each ROCm patch release: of the project's newest version for it, the
    Linux x86_64 CPython 3.12 (or pure) file."""
    by_release: dict[str, list[WheelFile]] = {}
    for f in files:
        rocm = rocm_release_of(f.version)
        if rocm is not None and _readable(f):
            by_release.setdefault(rocm, []).append(f)
    out = {}
    for rocm, candidates in by_release.items():
        out[rocm] = max(
            candidates, key=lambda f: tuple(int(p) if p.isdigit() else 0 for p in f.version.split("."))
        )
    return out


def parse_version_module(text: str) -> dict[str, str]:
    """``ROCM_VERSION_NAME`` and ``HIP_VERSION_NAME`` of a bindings' version module (both spellings
    AMD uses: ``NAME = "x"`` and ``NAME = alias = "x"``)."""
    return {m.group(1): m.group(2) for m in _VERSION_NAME.finditer(text)}


def scan_llvm(chunks: Iterable[bytes]) -> tuple[str | None, str | None]:
    """``(version, commit)`` of an LLVM library read in chunks: ``LLVM version 23.0.0git`` and the
    ``23.0.0git <40 hex>`` string LLVM keeps for ``--version``."""
    version = commit = None
    tail = b""
    for chunk in chunks:
        window = tail + chunk
        if version is None and (m := _LLVM_VERSION.search(window)):
            version = m.group(1).decode()
        if commit is None and (c := _LLVM_COMMIT.search(window)):
            commit = c.group(2).decode()
        if version is not None and commit is not None:
            break
        tail = window[-128:]
    return version, commit


def read_wheel(path: Path, wheel: WheelFile) -> rocmdata.Observation:
    """The facts one of AMD's wheels holds, read without unpacking it."""
    hip = llvm = commit = None
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename
            # rocm/version.py (10.x), hip/__init__.py (7.x)
            if name.endswith(("/version.py", "/_version.py", "/__init__.py")) and hip is None:
                names = parse_version_module(archive.read(info).decode("utf-8", "replace"))
                hip = names.get("HIP_VERSION_NAME", hip)
            elif _LLVM_LIBRARY.search(name) and llvm is None:
                with archive.open(info) as fh:
                    llvm, commit = scan_llvm(iter(lambda: fh.read(_CHUNK), b""))
    report = inspect_wheel(path)
    sysdeps = sorted({n for elf in report.elves for n in elf.needed if n.startswith("librocm_sysdeps_")})
    return rocmdata.Observation(
        rocm=rocm_release_of(wheel.version) or wheel.version,
        project=wheel.project,
        version=wheel.version,
        uploaded=wheel.uploaded,
        hip=hip,
        llvm=llvm,
        llvm_commit=commit,
        sysdeps=tuple(sysdeps),
    )


def _key(o: rocmdata.Observation) -> tuple[str, str]:
    return (o.rocm, o.project)


def diff(old: Sequence[rocmdata.Observation], new: Sequence[rocmdata.Observation]) -> list[str]:
    """Markdown lines: the observations added or changed, and the releases ``releases.yaml`` lacks
    or whose LLVM or HIP differs from what AMD's wheels say."""
    before = {_key(o): o for o in old}
    lines = []
    for o in sorted(new, key=lambda o: (rocmdata.version_key(o.rocm), o.project)):
        was = before.get(_key(o))
        if was is None:
            lines.append(f"- new: {o.describe()}")
        elif was != o:
            lines.append(f"- changed: {o.describe()} (was: {was.describe()})")
    known = {r.version: r for r in release_data()}  # releases.yaml's rows
    for o in new:
        release = known.get(o.release)
        if release is None:
            lines.append(
                f"- releases.yaml has no row for ROCm {o.release} ({o.project} {o.version}): add one"
            )
        elif o.llvm and not release.llvm.startswith(o.llvm):
            lines.append(
                f"- releases.yaml: ROCm {o.release} llvm is {release.llvm!r}; "
                f"{o.project} {o.version} has {o.llvm}"
            )
        elif o.hip and release.hip and not o.hip.startswith(release.hip):
            lines.append(
                f"- releases.yaml: ROCm {o.release} hip is {release.hip!r}; "
                f"{o.project} {o.version} has {o.hip}"
            )
    return list(dict.fromkeys(lines))


def dump(observations: Sequence[rocmdata.Observation], checked: datetime.date) -> str:
    """``observed.yaml``'s text: a header, the day of the check, the observations in order."""
    import yaml  # PyYAML only when the readings are written (start-up time)

    rows = [
        o.to_json() for o in sorted(observations, key=lambda o: (rocmdata.version_key(o.rocm), o.project))
    ]
    header = (
        "# Written by `buildkit rocm refresh --write` (weekly: .github/workflows/rocm-data.yml): what AMD's\n"
        "# wheels on PyPI say about each ROCm patch release (buildkit/service/rocm.py reads them).\n"
        "# Not edited by hand; releases.yaml cites these readings in its `verified` facts.\n"
    )
    return header + yaml.safe_dump(
        {"checked": checked.isoformat(), "observed": rows}, sort_keys=False, width=100
    )


def refresh(
    fetch_json: Callable[[str], bytes],
    fetch_wheel: Callable[[WheelFile, Path], Path],
    *,
    everything: bool = False,
    first: str | None = None,
    projects: Mapping[str, str] = _WATCHED,
) -> tuple[list[rocmdata.Observation], list[str]]:
    """Every observation (the stored ones, and the new ones read now: of ROCm ``first`` and later
    when given) and the diff's lines."""
    old = rocmdata.observed()
    have = {_key(o) for o in old}
    new: dict[tuple[str, str], rocmdata.Observation] = {_key(o): o for o in old}
    with tempfile.TemporaryDirectory(prefix="buildkit-rocm-refresh-") as tmp:
        for project in projects:
            files = parse_pypi_json(project, fetch_json(project))
            for rocm, wheel in sorted(newest_per_release(files).items()):
                if first is not None and rocmdata.version_key(rocm) < rocmdata.version_key(first):
                    continue
                if (
                    not everything
                    and (rocm, project) in have
                    and new[(rocm, project)].version == wheel.version
                ):
                    continue
                path = fetch_wheel(wheel, Path(tmp))
                new[(rocm, project)] = read_wheel(path, wheel)
    ordered = sorted(new.values(), key=lambda o: (rocmdata.version_key(o.rocm), o.project))
    return ordered, diff(old, ordered)


def _pypi_fetchers(
    client: IndexClient | None = None, wheels: Path | None = None
) -> tuple[Callable[[str], bytes], Callable[[WheelFile, Path], Path]]:
    """The JSON API and the file downloads of pypi.org (sha256-checked); a wheel already in the folder
    ``wheels`` is read from there."""
    index = client or IndexClient()

    def fetch_json(project: str) -> bytes:
        data, _type, _url = index.read(_PYPI_JSON.format(project=project), accept="application/json")
        return data

    def fetch_wheel(wheel: WheelFile, folder: Path) -> Path:
        if wheels is not None and (wheels / wheel.filename).is_file():
            return wheels / wheel.filename
        dest = folder / wheel.filename
        index.download(wheel.url, dest, hashes={"sha256": wheel.sha256} if wheel.sha256 else None)
        return dest

    return fetch_json, fetch_wheel


def _observed_path() -> Path:
    """observed.yaml beside buildkit/rocm/data.py (the checkout's file in an editable install)."""
    return Path(rocmdata.data.__file__).with_name("observed.yaml")


def run_refresh(
    *, write: bool, everything: bool = False, first: str | None = None, wheels: Path | None = None
) -> list[str]:
    """``buildkit rocm refresh``: AMD's wheels on PyPI read (``wheels``: a folder searched first), the
    diff's lines; with ``write``, the readings stored in observed.yaml (checked today)."""
    fetch_json, fetch_wheel = _pypi_fetchers(wheels=wheels)
    observations, lines = refresh(fetch_json, fetch_wheel, everything=everything, first=first)
    if write:
        _observed_path().write_text(dump(observations, datetime.date.today()), encoding="utf-8")
    return lines
