"""A static PEP 503 "simple" index in a directory, for S3 or GitHub Pages hosting.

Layout (relative links only, so the tree can be copied anywhere)::

    ROOT/simple/index.html                     PEP 503 project list
    ROOT/simple/index.json                     the same list, PEP 691 JSON (api-version 1.1)
    ROOT/simple/<normalized-name>/index.html   one <a href="<wheel>#sha256=..."> per file, with
                                               data-requires-python, data-dist-info-metadata and
                                               data-core-metadata (PEP 658 / PEP 714)
    ROOT/simple/<normalized-name>/index.json   PEP 691 JSON of the same files
    ROOT/simple/<normalized-name>/<wheel>      the wheel
    ROOT/simple/<normalized-name>/<wheel>.metadata   its METADATA file (PEP 658)
    ROOT/simple/<normalized-name>/<wheel>.provenance the verified DSSE envelope, linked by
                                               data-provenance (PEP 740) and index.json

Locking, atomic pages and the journal: REFERENCE.md ("A static index ..."), :mod:`buildkit.publish.journal`.
A batch (:func:`add_wheels`) is checked whole before anything is written: the same file again is
``already``; the same name with other bytes raises :class:`~buildkit.errors.PublishRefused` (an index
must never change a released file)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import html
import json
import os
import shutil
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name, parse_wheel_filename

from buildkit.errors import PublishRefused, UsageError, WheelReadError
from buildkit.manifest import sha256_file
from buildkit.publish import journal

LOCK_NAME = ".buildkit-index.lock"
#: the verified attestation served beside a wheel (``<wheel>.provenance``)
PROVENANCE_SUFFIX = ".provenance"
_API_VERSION = "1.1"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class _IndexedFile:
    """One file of a project page (what the HTML and JSON pages are rendered from)."""

    filename: str
    sha256: str
    size: int
    requires_python: str | None
    metadata_sha256: str | None
    provenance: bool = False  # a <wheel>.provenance is served beside it

    def to_json(self) -> dict[str, Any]:
        # hand-written, no JsonShape (buildkit/records.py): PEP 691's keys, computed
        data: dict[str, Any] = {
            "filename": self.filename,
            "url": self.filename,
            "hashes": {"sha256": self.sha256},
            "size": self.size,
        }
        if self.requires_python:
            data["requires-python"] = self.requires_python
        if self.metadata_sha256:
            data["core-metadata"] = {"sha256": self.metadata_sha256}
            data["dist-info-metadata"] = {"sha256": self.metadata_sha256}
        if self.provenance:
            data["provenance"] = self.filename + PROVENANCE_SUFFIX
        return data


@dataclass(frozen=True)
class _AddResult:
    status: str  # "published" | "already"
    project: str  # normalized name
    path: Path  # where the wheel is in the index


def copy_verified(source: Path, target: Path, expected_sha256: str) -> None:
    """Copy ``source`` to ``target``, hashing the bytes actually copied (other bytes: PublishRefused,
    ``target`` removed), so whoever reads ``target`` reads exactly the bytes checked."""
    digest = hashlib.sha256()
    try:
        with source.open("rb") as src, target.open("xb") as dst:
            while block := src.read(_CHUNK):
                digest.update(block)
                dst.write(block)
            dst.flush()
            os.fsync(dst.fileno())
        if digest.hexdigest() != expected_sha256:
            raise PublishRefused(
                f"{source.name}: the file changed while it was copied (sha256 {digest.hexdigest()}, "
                f"expected {expected_sha256}); nothing was published"
            )
        shutil.copystat(source, target)
    except BaseException:
        target.unlink(missing_ok=True)
        raise


def _wheel_metadata(wheel: Path, filename: str | None = None) -> bytes:
    """The bytes of ``wheel``'s ``.dist-info/METADATA`` (``filename``: its name when ``wheel`` is a copy)."""
    filename = filename or wheel.name
    name = parse_wheel_filename(filename)[0]
    try:
        with zipfile.ZipFile(wheel) as zf:
            found = [
                member
                for member in zf.namelist()
                if member.count("/") == 1
                and member.endswith(".dist-info/METADATA")
                and canonicalize_name(member[: -len(".dist-info/METADATA")].rsplit("-", 1)[0]) == name
            ]
            if len(found) != 1:
                raise WheelReadError(
                    f"{filename}: expected one {name}-<version>.dist-info/METADATA, found {len(found)}"
                )
            return zf.read(found[0])
    except (zipfile.BadZipFile, OSError) as exc:
        raise WheelReadError(f"{filename}: not a readable wheel: {exc}") from None


def _requires_python(metadata: bytes) -> str | None:
    headers = HeaderParser().parsestr(metadata.decode("utf-8", errors="replace"))
    value = headers.get("Requires-Python")
    return str(value).strip() if value else None


def check_root(root: Path) -> None:
    """Refuse (:class:`UsageError`) a ``root`` that is not a directory and cannot become one below a
    writable directory; writes nothing."""
    if root.exists():
        if not root.is_dir():
            raise UsageError(f"{root}: exists and is not a directory; the index must be a directory")
        if not os.access(root, os.W_OK | os.X_OK):
            raise UsageError(f"{root}: the index directory is not writable")
        return
    existing = root.absolute().parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"{root}: cannot be created: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{root}: cannot be created: {existing} is not writable")


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    try:
        root.mkdir(parents=True, exist_ok=True)
        handle = (root / LOCK_NAME).open("a")
    except OSError as exc:  # e.g. /proc/idx: the parent looks writable but refuses new entries
        raise UsageError(f"{root}: cannot write the index there: {exc.strerror or exc}") from None
    with handle as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _recorded(project_dir: Path) -> dict[str, dict[str, Any]]:
    """Files recorded in the project's index.json: filename -> PEP 691 file entry."""
    page = project_dir / "index.json"
    if not page.is_file():
        return {}
    try:
        data = json.loads(page.read_text(encoding="utf-8"))
        return {str(f["filename"]): f for f in data.get("files", [])}
    except (ValueError, KeyError, TypeError):
        return {}


def _scan(project_dir: Path) -> list[_IndexedFile]:
    """Every wheel of a project folder; hashes recomputed unless index.json records the same size."""
    recorded = _recorded(project_dir)
    files = []
    for wheel in sorted(project_dir.glob("*.whl")):
        size = wheel.stat().st_size
        entry = recorded.get(wheel.name)
        if entry is not None and entry.get("size") == size and "sha256" in entry.get("hashes", {}):
            sha = str(entry["hashes"]["sha256"])
        else:
            sha = sha256_file(wheel)
        meta_file = wheel.with_name(wheel.name + ".metadata")
        if meta_file.is_file():
            meta = meta_file.read_bytes()
            meta_sha: str | None = hashlib.sha256(meta).hexdigest()
            requires = _requires_python(meta)
        else:
            meta_sha, requires = None, None
        served = wheel.with_name(wheel.name + PROVENANCE_SUFFIX).is_file()
        files.append(_IndexedFile(wheel.name, sha, size, requires, meta_sha, served))
    return files


def _render_project_html(name: str, files: list[_IndexedFile]) -> str:
    lines = [
        "<!DOCTYPE html>",
        "<html>",
        "<head>",
        '<meta name="pypi:repository-version" content="1.1">',
        f"<title>Links for {html.escape(name)}</title>",
        "</head>",
        "<body>",
        f"<h1>Links for {html.escape(name)}</h1>",
    ]
    for f in files:
        attrs = [f'href="{html.escape(f.filename)}#sha256={f.sha256}"']
        if f.requires_python:
            attrs.append(f'data-requires-python="{html.escape(f.requires_python)}"')
        if f.metadata_sha256:
            attrs.append(f'data-dist-info-metadata="sha256={f.metadata_sha256}"')
            attrs.append(f'data-core-metadata="sha256={f.metadata_sha256}"')
        if f.provenance:
            attrs.append(f'data-provenance="{html.escape(f.filename + PROVENANCE_SUFFIX)}"')
        lines.append(f"<a {' '.join(attrs)}>{html.escape(f.filename)}</a><br>")
    lines += ["</body>", "</html>", ""]
    return "\n".join(lines)


def _render_project_json(name: str, files: list[_IndexedFile]) -> str:
    versions = sorted({str(parse_wheel_filename(f.filename)[1]) for f in files})
    data = {
        "meta": {"api-version": _API_VERSION},
        "name": name,
        "versions": versions,
        "files": [f.to_json() for f in files],
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _render_root_html(projects: list[str]) -> str:
    lines = [
        "<!DOCTYPE html>",
        "<html>",
        "<head>",
        '<meta name="pypi:repository-version" content="1.1">',
        "<title>Simple index</title>",
        "</head>",
        "<body>",
    ]
    lines += [f'<a href="{html.escape(p)}/">{html.escape(p)}</a><br>' for p in projects]
    lines += ["</body>", "</html>", ""]
    return "\n".join(lines)


def _render_root_json(projects: list[str]) -> str:
    data = {"meta": {"api-version": _API_VERSION}, "projects": [{"name": p} for p in projects]}
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _simple_dir(root: Path) -> Path:
    return root / "simple"


def add_wheel(root: Path, wheel: Path, sha256: str, provenance: bytes | None = None) -> _AddResult:
    """Add one wheel: :func:`add_wheels` with a single item."""
    return add_wheels(root, [(wheel, sha256)], {wheel: provenance} if provenance else None)[0]


@dataclass
class _Staged:
    wheel: Path
    sha256: str
    project: str
    target: Path
    tmp: Path | None = None
    metadata: bytes = b""
    provenance: bytes | None = None


def check_additions(root: Path, wheels: Sequence[tuple[Path, str]]) -> list[_AddResult]:
    """What :func:`add_wheels` would do (and refuse), writing nothing, without the lock (``--dry-run``)."""
    return _plan(root, wheels)[0]


def _plan(root: Path, wheels: Sequence[tuple[Path, str]]) -> tuple[list[_AddResult], list[_Staged]]:
    """Each wheel's status against the index at ``root`` and the new ones to add; conflicts refused."""
    results: list[_AddResult] = []
    pending: list[_Staged] = []
    conflicts: list[str] = []
    seen: dict[str, str] = {}
    for wheel, sha256 in wheels:
        project = canonicalize_name(parse_wheel_filename(wheel.name)[0])
        target = _simple_dir(root) / project / wheel.name
        results.append(_AddResult("already", project, target))
        if wheel.name in seen:
            if seen[wheel.name] != sha256:
                conflicts.append(
                    f"{wheel}: another wheel being published has this file name with other bytes "
                    f"(sha256 {seen[wheel.name]}, this wheel {sha256})"
                )
            continue
        seen[wheel.name] = sha256
        if target.is_file():
            existing = sha256_file(target)
            if existing != sha256:
                conflicts.append(
                    f"{wheel.name}: the index at {root} already has a file of this name with other "
                    f"bytes (sha256 {existing}, this wheel {sha256}); a released file is never "
                    "replaced: bump the version or a build tag"
                )
            continue
        results[-1] = _AddResult("published", project, target)
        pending.append(_Staged(wheel, sha256, project, target))
    if len(conflicts) == 1 and len(wheels) == 1:
        raise PublishRefused(conflicts[0])
    if conflicts:
        head = f"publish refused: {len(conflicts)} of {len(wheels)} wheel(s); nothing was published"
        raise PublishRefused("\n".join([head, *(f"  {c}" for c in conflicts)]))
    return results, pending


def add_wheels(
    root: Path, wheels: Sequence[tuple[Path, str]], provenance: Mapping[Path, bytes] | None = None
) -> list[_AddResult]:
    """Add each ``(wheel, sha256)`` to the static index at ``root``: all of them, or none (the steps: the
    module's docstring, :mod:`buildkit.publish.journal`). ``provenance``: the verified DSSE envelope of a
    wheel, by its path in ``wheels``, served beside it as ``<wheel>.provenance``; a wheel changed since it
    was checked refuses the batch."""
    with _locked(root):
        _recover(root)
        results, pending = _plan(root, wheels)
        if not pending:
            return results
        created: list[Path] = []
        staged: list[Path] = []
        try:
            for item in pending:
                for folder in (_simple_dir(root), item.target.parent):
                    if not folder.is_dir():
                        folder.mkdir()
                        created.append(folder)
                item.tmp = journal.temporary(item.target)
                staged.append(item.tmp)
                copy_verified(item.wheel, item.tmp, item.sha256)
                item.metadata = _wheel_metadata(item.tmp, item.wheel.name)
                item.provenance = (provenance or {}).get(item.wheel)
            moves = _stage(root, pending, staged)
        except BaseException:
            for path in staged:
                path.unlink(missing_ok=True)
            for folder in reversed(created):
                with contextlib.suppress(OSError):
                    folder.rmdir()
            raise
        journal.commit(root, moves)
    return results


def _stage(root: Path, pending: list[_Staged], staged: list[Path]) -> list[tuple[Path, Path]]:
    """Write the ``.metadata`` files and every page the batch changes as temporary files (each added
    to ``staged``); the renames that put the batch in place, in commit order."""
    metadata_moves: list[tuple[Path, Path]] = []
    wheel_moves: list[tuple[Path, Path]] = []
    added: dict[str, list[_IndexedFile]] = {}
    for item in pending:
        assert item.tmp is not None
        meta = item.target.with_name(item.target.name + ".metadata")
        metadata_moves.append((_stage_file(meta, item.metadata, staged), meta))
        if item.provenance is not None:
            served = item.target.with_name(item.target.name + PROVENANCE_SUFFIX)
            metadata_moves.append((_stage_file(served, item.provenance, staged), served))
        wheel_moves.append((item.tmp, item.target))
        added.setdefault(item.project, []).append(
            _IndexedFile(
                item.target.name,
                item.sha256,
                item.tmp.stat().st_size,
                _requires_python(item.metadata),
                hashlib.sha256(item.metadata).hexdigest(),
                item.provenance is not None,
            )
        )
    page_moves: list[tuple[Path, Path]] = []
    simple = _simple_dir(root)
    for project in sorted(added):
        project_dir = simple / project
        files = sorted([*_scan(project_dir), *added[project]], key=lambda f: f.filename)
        for name, text in (
            ("index.json", _render_project_json(project, files)),
            ("index.html", _render_project_html(project, files)),
        ):
            page_moves.append((_stage_file(project_dir / name, text.encode(), staged), project_dir / name))
    listed = {p.name for p in simple.iterdir() if p.is_dir() and (p / "index.html").is_file()}
    projects = sorted(listed | set(added))
    for name, text in (
        ("index.json", _render_root_json(projects)),
        ("index.html", _render_root_html(projects)),
    ):
        page_moves.append((_stage_file(simple / name, text.encode(), staged), simple / name))
    return [*metadata_moves, *wheel_moves, *page_moves]


def _stage_file(final: Path, data: bytes, staged: list[Path]) -> Path:
    tmp = journal.temporary(final)
    staged.append(tmp)
    with tmp.open("xb") as fh:
        fh.write(data)
        fh.flush()
        os.fchmod(fh.fileno(), 0o644)
        os.fsync(fh.fileno())
    return tmp


def _recover(root: Path) -> str | None:
    simple = _simple_dir(root)
    folders = [simple, *(p for p in simple.iterdir() if p.is_dir())] if simple.is_dir() else []
    return journal.recover(root, folders)


def recover(root: Path) -> str | None:
    """Finish or undo an interrupted update of the index at ``root``, locked (:func:`journal.recover`)."""
    if not root.is_dir():
        return None
    with _locked(root):
        return _recover(root)
