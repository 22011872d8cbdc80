"""Integrity rules of the gate: is the wheel what it says it is, and does it load only from itself?

Each rule reads the :class:`~buildkit.inspect.models.WheelReport` only (never the wheel) and returns
:class:`~buildkit.gate.findings.Finding` objects; :func:`check_integrity` runs them all for
:func:`buildkit.gate.evaluate`.

* ``record`` (errors): ``.dist-info/RECORD`` lists exactly the archive's files. A file RECORD omits is
  hidden from installers' bookkeeping (a *hidden binary* when it is ELF); an entry without a file is
  a broken wheel; an entry without a hash, with a weak (md5, sha1) or unknown algorithm, with a size
  other than the zip's, or (when the inspection hashed the members: ``WheelReport.record_verified``)
  with a digest other than the member's, is an error naming the member. RECORD's own line and its
  signatures (``RECORD.jws``, ``RECORD.p7s``) are exempt, as the wheel spec says.
* ``wheel-tags`` (warning: pip and every installer read the file name, nothing breaks): the
  ``Tag:`` lines of ``.dist-info/WHEEL`` equal the file name's tags, as sets, compressed tag sets
  (``py2.py3-none-any``) expanded on both sides.
* ``rpath`` (error / warning): every RPATH/RUNPATH entry starts with ``$ORIGIN`` and stays inside the
  install root (site-packages) once resolved (leaving it for at most 3 levels, still inside the
  environment's prefix, is a warning); entries under ``/opt/rocm*`` are warnings (many ROCm
  wheels rely on a system ROCm there); every other absolute or relative path is an error, named a
  leaked build directory when it lies under ``/tmp``, ``/project``, ``/home``, ``/root`` or another
  usual build root.
* ``load-order`` (warning): a DT_NEEDED that a member of the wheel carries (same file name or
  SONAME) but ld.so does not find there from the needing object (:func:`resolve_libraries`): no
  search path of it reaches that member's directory, or one does but the file there has another
  name (``libhelper.so`` with SONAME ``libhelper.so.1``: ld.so opens ``dir/libhelper.so.1``). It loads
  only when something else loaded the library first; the gate (:mod:`buildkit.gate`) counts such a
  library as not in the wheel (external, unless whitelisted or excluded). Search paths follow
  ld.so: the object's RUNPATH alone when it has one, else its RPATH and the RPATHs of the in-wheel
  objects that load it (transitively; ld.so uses the loader chain's DT_RPATH, which is how
  auditwheel's grafted libraries find one another).
* ``pure-wheel``: a wheel whose tags all have platform ``any`` must not carry host code (error per
  host ELF); standalone GPU code objects there are data for a runtime loader (warning).

:func:`not_elf_load` tells the gate whether a member named like a shared library that is not ELF
(the inspection's ``not-elf-library`` finding) is loaded once installed, which then fails: an
extension module name Python imports, a library in a ``*.libs`` folder, a file ld.so opens for a
DT_NEEDED. Elsewhere (``.dist-info``, ``.data/{data,headers,scripts}``, a versioned ``libfoo.so.1``
nothing needs, a plain ``libfoo.so`` under ``include``/``lib``/``lib64``: a linker script for
the link editor) it is only odd.
"""

from __future__ import annotations

import hashlib
import itertools
import posixpath
import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from packaging.tags import parse_tag

from buildkit.gate.findings import Finding
from buildkit.inspect.models import ElfInfo, RecordEntry, WheelReport

RECORD_EXEMPT = ("RECORD", "RECORD.jws", "RECORD.p7s")
WEAK_HASHES = frozenset({"md5", "sha1"})
# Where CI and container builds put their sources and trees (cibuildwheel mounts /project; GitHub
# runners use /home/runner and /__w; conda-build and others /tmp, /build, /builddir, /io, /src).
BUILD_ROOTS = (
    "/tmp",
    "/var/tmp",
    "/project",
    "/home",
    "/root",
    "/build",
    "/builddir",
    "/io",
    "/src",
    "/__w",
    "/workspace",
    "/github",
    "/usr/src",
)
ROCM_PREFIX = "/opt/rocm"
_ORIGIN = ("$ORIGIN", "${ORIGIN}")


def check_integrity(report: WheelReport, resolution: Resolution | None = None) -> list[Finding]:
    """Every integrity rule, in a stable order (``resolution``: :func:`resolve_libraries` of the
    report's ELF members, when the caller has it)."""
    return [
        *check_record(report),
        *check_wheel_tags(report),
        *check_search_paths(report),
        *check_load_order(report, resolution),
        *check_pure(report),
    ]


# --------------------------------------------------------------------------- RECORD
def _normal_hash(value: str) -> tuple[str, str]:
    algorithm, _, digest = value.partition("=")
    return algorithm.strip().lower(), digest.strip().rstrip("=")


def _files(report: WheelReport) -> dict[str, tuple[int | None, str | None]]:
    """File members -> (size, digest): from ``report.files`` or, for reports without them, the names."""
    if report.files:
        return {f.name: (f.size, f.hash) for f in report.files}
    return {m: (None, None) for m in report.members if not m.endswith("/")}


def check_record(report: WheelReport) -> list[Finding]:
    dist_info = report.dist_info_dir
    if dist_info is None:
        return [Finding("record", "error", "no single top-level *.dist-info/WHEEL: cannot find RECORD")]
    record_name = f"{dist_info}/RECORD"
    exempt = {f"{dist_info}/{name}" for name in RECORD_EXEMPT}
    files = _files(report)
    if record_name not in files:
        return [Finding("record", "error", f"the wheel has no {record_name} (a wheel must list its files)")]
    out: list[Finding] = []
    listed: dict[str, RecordEntry] = {}
    for entry in report.record:
        if entry.path in listed:
            out.append(Finding("record", "error", f"RECORD lists {entry.path} twice", file=entry.path))
            continue
        listed[entry.path] = entry
    binaries = {e.member for e in report.elves} | {c.member for c in report.code_objects}
    for name in files:
        if name in listed or name in exempt:
            continue
        what = "a hidden binary" if name in binaries else "a file installers will not track or uninstall"
        out.append(
            Finding(
                "record",
                "error",
                f"{name} is in the archive but not in RECORD: {what}",
                file=name,
            )
        )
    for path, entry in listed.items():
        if path not in files:
            if path not in exempt:
                out.append(
                    Finding(
                        "record",
                        "error",
                        f"RECORD lists {path} but the archive has no such file: a broken wheel",
                        file=path,
                    )
                )
            continue
        if path in exempt:
            continue
        out.extend(_check_entry(entry, *files[path], verified=report.record_verified))
    return out


def _check_entry(
    entry: RecordEntry, size: int | None, digest: str | None, *, verified: bool
) -> list[Finding]:
    path = entry.path
    if entry.hash is None:
        # pip installs it and nothing breaks; only the gate cannot tell it from a modified file
        # (onnxruntime-rocm 1.22.2.post3 lists every file without a hash): hygiene, a warning
        return [
            Finding("record", "warning", f"RECORD gives no hash for {path}: it cannot be verified", file=path)
        ]
    algorithm, value = _normal_hash(entry.hash)
    if algorithm in WEAK_HASHES:
        return [
            Finding(
                "record",
                "error",
                f"RECORD hashes {path} with {algorithm}, which the wheel spec forbids (use sha256)",
                file=path,
                symbol=entry.hash,
            )
        ]
    if algorithm not in hashlib.algorithms_guaranteed or algorithm.startswith("shake"):
        return [
            Finding(
                "record",
                "error",
                f"RECORD hashes {path} with {algorithm or '(nothing)'!r}, not a hashlib algorithm",
                file=path,
                symbol=entry.hash,
            )
        ]
    out = []
    if entry.size is not None and size is not None and entry.size != size:
        out.append(
            Finding(
                "record",
                "error",
                f"RECORD says {path} is {entry.size} bytes, the archive holds {size}",
                file=path,
            )
        )
    if verified and digest is not None and _normal_hash(digest) != (algorithm, value):
        out.append(
            Finding(
                "record",
                "error",
                f"{path} does not match its RECORD hash (RECORD {entry.hash}, archive {digest}): "
                "modified after the wheel was built",
                file=path,
                symbol=entry.hash,
            )
        )
    return out


# --------------------------------------------------------------------------- WHEEL tags
def check_wheel_tags(report: WheelReport) -> list[Finding]:
    where = f"{report.dist_info_dir or '*.dist-info'}/WHEEL"
    if not report.wheel_tags:
        return [Finding("wheel-tags", "warning", f"{where} has no Tag: lines", file=where)]
    declared: set[str] = set()
    out = []
    for line in report.wheel_tags:
        try:
            declared |= {str(t) for t in parse_tag(line)}
        except (ValueError, IndexError):
            out.append(Finding("wheel-tags", "warning", f"{where}: malformed Tag: {line!r}", file=where))
    named = set(report.tags)
    missing, extra = sorted(named - declared), sorted(declared - named)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"the file name's {', '.join(missing)} not in {where}")
        if extra:
            parts.append(f"{where}'s {', '.join(extra)} not in the file name")
        out.append(
            Finding(
                "wheel-tags",
                "warning",
                "WHEEL Tag: lines differ from the file name's tags: " + "; ".join(parts),
                file=where,
                symbol=", ".join(missing + extra),
            )
        )
    return out


# --------------------------------------------------------------------------- RPATH / RUNPATH
def install_path(member: str) -> str | None:
    """Where a member lands relative to the install root (site-packages); ``None`` for ``.data``
    categories installed elsewhere (scripts, headers, data)."""
    top, _, rest = member.partition("/")
    if top.endswith(".data"):
        category, _, inner = rest.partition("/")
        return inner if category in ("purelib", "platlib") else None
    return member


def _origin_rest(entry: str) -> str | None:
    """The part after ``$ORIGIN``/``${ORIGIN}`` (``""``, ``"/../lib"``), or None when it does not start so."""
    for token in _ORIGIN:
        if entry == token or entry.startswith(token + "/"):
            return entry[len(token) :]
    return None


def resolve_origin(member: str, entry: str) -> str | None:
    """The directory (relative to the install root, ``"."`` for the root) an ``$ORIGIN`` entry of
    ``member`` names; ``".."``-prefixed when it escapes the root; None when it is not ``$ORIGIN`` or
    the member's install location is unknown."""
    rest = _origin_rest(entry)
    where = install_path(member)
    if rest is None or where is None:
        return None
    return posixpath.normpath(posixpath.join(posixpath.dirname(where) or ".", "./" + rest.lstrip("/")))


_PREFIX_DEPTH = 3  # site-packages -> pythonX.Y -> lib -> the environment's prefix


def _escapes(path: str) -> bool:
    return path == ".." or path.startswith("../")


def _path_finding(e: ElfInfo, kind: str, entry: str) -> Finding | None:
    rest = _origin_rest(entry)
    if rest is not None:
        resolved = resolve_origin(e.member, entry)
        if resolved is not None and _escapes(resolved):
            up = len(list(itertools.takewhile(lambda part: part == "..", resolved.split("/"))))
            if up <= _PREFIX_DEPTH:
                # still inside the environment (site-packages is lib/pythonX.Y/site-packages): it
                # finds only what that environment installs there (jaxlib, the jax CUDA/ROCm plugins
                # point at other wheels' libraries so): hygiene, a warning
                return Finding(
                    "rpath",
                    "warning",
                    f"{kind} entry {entry} of {e.member} resolves outside the wheel's install root, "
                    f"{up} level{'s' if up > 1 else ''} above site-packages (inside the environment)",
                    file=e.member,
                    symbol=entry,
                )
            return Finding(
                "rpath",
                "error",
                f"{kind} entry {entry} of {e.member} resolves {up} levels above site-packages, outside "
                "the Python environment: it can load a library the environment does not control",
                file=e.member,
                symbol=entry,
            )
        return None
    if entry == ROCM_PREFIX or entry.startswith((ROCM_PREFIX + "/", ROCM_PREFIX + "-")):
        return Finding(
            "rpath",
            "warning",
            f"{kind} entry {entry} of {e.member} points at a system ROCm install outside the wheel "
            "(common in ROCm wheels; the ROCm libraries must be there at run time)",
            file=e.member,
            symbol=entry,
        )
    if entry.startswith("/"):
        leaked = any(entry == root or entry.startswith(root + "/") for root in BUILD_ROOTS)
        why = "a leaked build directory" if leaked else "an absolute path outside the wheel"
        return Finding(
            "rpath",
            "error",
            f"{kind} entry {entry} of {e.member} is {why}: use $ORIGIN-relative paths",
            file=e.member,
            symbol=entry,
        )
    return Finding(
        "rpath",
        "error",
        f"{kind} entry {entry} of {e.member} is relative to the current directory at run time: "
        "use $ORIGIN-relative paths",
        file=e.member,
        symbol=entry,
    )


def check_search_paths(report: WheelReport) -> list[Finding]:
    out = []
    for e in report.elves:
        for kind, entries in (("RPATH", e.rpath), ("RUNPATH", e.runpath)):
            for entry in entries:
                found = _path_finding(e, kind, entry)
                if found is not None:
                    out.append(found)
    return out


# --------------------------------------------------------------------------- load order
@dataclass(frozen=True)
class Resolution:
    """Where ld.so finds, inside the wheel, each DT_NEEDED of each ELF member (:func:`resolve_libraries`).

    ``found`` maps ``(member, needed name)`` to the member ld.so loads for it; a name missing there is
    not found in the wheel by any search path of that member. ``dirs`` gives each member's search
    directories in the wheel (relative to the install root, ``"."`` for the root), in search order.
    """

    found: Mapping[tuple[str, str], str]
    dirs: Mapping[str, tuple[str, ...]]

    def provider(self, member: str, name: str) -> str | None:
        return self.found.get((member, name))


def compatible(a: ElfInfo, b: ElfInfo) -> bool:
    """ld.so skips a file of another machine, class or byte order and goes on searching."""
    return (a.machine, a.elf_class, a.endian) == (b.machine, b.elf_class, b.endian)


def resolve_libraries(elves: Sequence[ElfInfo]) -> Resolution:
    """Resolve every DT_NEEDED the way ld.so does, inside the wheel: a needed name is found when a
    member with that FILE NAME (not SONAME) sits in a directory the needing object searches, and is
    an ELF of the same machine, class and byte order. The search directories of an object are its
    RUNPATH alone when it has one, else its RPATH followed by the RPATHs of the in-wheel objects that
    load it, transitively (ld.so's loader chain; a loader with a RUNPATH contributes no RPATH of its
    own but passes on what it inherited). Only ``$ORIGIN`` entries that stay inside the install root
    name wheel directories.

    Who loads whom depends on what is found, so a member whose inherited directories grow is
    resolved again (a worklist: each member's inherited set only grows, so it ends)."""
    by_member = {e.member: e for e in elves}
    at: dict[tuple[str, str], list[ElfInfo]] = {}
    for e in elves:
        at.setdefault(_location(e.member), []).append(e)
    own = {e.member: _dirs_of(e, e.runpath or e.rpath) for e in elves}
    passes_own = {e.member: () if e.runpath else own[e.member] for e in elves}
    inherited: dict[str, set[str]] = {e.member: set() for e in elves}
    found: dict[tuple[str, str], str] = {}
    dirs: dict[str, tuple[str, ...]] = {}
    todo = deque(by_member)
    queued = set(by_member)
    while todo:
        member = todo.popleft()
        queued.discard(member)
        e = by_member[member]
        extra = () if e.runpath else tuple(sorted(inherited[member] - set(own[member])))
        dirs[member] = own[member] + extra
        passing = set(passes_own[member]) | inherited[member]
        for name in e.needed:
            if "/" in name:  # a path: relative to the process's working directory, never the wheel
                continue
            hits = [p for d in dirs[member] for p in at.get((d, name), ()) if compatible(e, p)]
            if hits:
                found[(member, name)] = hits[0].member
            for p in hits:
                if p.member != member and not passing <= inherited[p.member]:
                    inherited[p.member] |= passing
                    if p.member not in queued:
                        todo.append(p.member)
                        queued.add(p.member)
    return Resolution(found, dirs)


def _carriers(elves: Sequence[ElfInfo]) -> dict[str, list[ElfInfo]]:
    """Members by each name they could be asked for by: their file name and their SONAME."""
    out: dict[str, list[ElfInfo]] = {}
    for e in elves:
        for name in {posixpath.basename(e.member)} | ({e.soname} if e.soname else set()):
            out.setdefault(name, []).append(e)
    return out


def check_load_order(report: WheelReport, resolution: Resolution | None = None) -> list[Finding]:
    """A DT_NEEDED that some member carries (same file name or SONAME) but ld.so does not find in the
    wheel from the needing object (:func:`resolve_libraries`): it loads only when something else
    loaded that library first, so the gate does not count it as in the wheel."""
    elves = report.elves
    res = resolution or resolve_libraries(elves)
    carriers = _carriers(elves)
    out = []
    for e in elves:
        for name in e.needed:
            if "/" in name or res.provider(e.member, name) is not None:
                continue
            found = [p for p in carriers.get(name, ()) if p.member != e.member and compatible(e, p)]
            if not found:
                continue
            out.append(_load_order_finding(e, name, found, res.dirs[e.member]))
    return out


def _load_order_finding(e: ElfInfo, name: str, found: Sequence[ElfInfo], dirs: Sequence[str]) -> Finding:
    via = "RUNPATH" if e.runpath else "RPATH"
    searched = ", ".join(dirs) or "none"
    consequence = (
        "it loads only when something else loaded it first, so the gate does not count it as in the wheel"
    )
    misnamed = [p for p in found if _location(p.member)[0] in dirs]
    if misnamed:
        where = _dirs(misnamed)
        message = (
            f"{e.member} needs {name}, which {_names(misnamed)} carries as its SONAME, but ld.so looks for "
            f"a file named {name} and the {via} of {e.member} reaches {where} where there is none "
            f"(name the file {name}): {consequence}"
        )
    else:
        message = (
            f"{e.member} needs {name}, which {_names(found)} provides, but no {via} of "
            f"{e.member} reaches {_dirs(found)} (searched: {searched}): {consequence}"
        )
    return Finding("load-order", "warning", message, file=e.member, library=name, symbol=found[0].member)


def _dirs_of(e: ElfInfo, entries: Iterable[str]) -> tuple[str, ...]:
    resolved = (resolve_origin(e.member, x) for x in entries)
    return tuple(dict.fromkeys(d for d in resolved if d is not None and not _escapes(d)))


def _location(member: str) -> tuple[str, str]:
    where = install_path(member) or member
    return posixpath.dirname(where) or ".", posixpath.basename(where)


def _names(found: Sequence[ElfInfo]) -> str:
    return " and ".join(p.member for p in found)


def _dirs(found: Sequence[ElfInfo]) -> str:
    return " or ".join(sorted({_location(p.member)[0] for p in found}))


# --------------------------------------------------------------------------- not-ELF libraries
#: an extension module's file name: a module name and one of the suffixes of
#: ``importlib.machinery.EXTENSION_SUFFIXES`` of any CPython or PyPy on Linux
#: (``.cpython-311-x86_64-linux-gnu.so``, ``.cpython-313t-...``, ``.abi3.so``, ``.pypy310-pp73-...``,
#: ``.so``)
_EXTENSION_NAME = re.compile(r"(?P<module>[^.]+)(?P<abi>\.(?:abi3|cpython-[^.]+|pypy[^.]*))?\.so")
#: folders of build-time files (headers, libraries to link with, their linker scripts): a plain
#: ``libfoo.so`` there is for the link editor, not for ``import``
DEV_AREAS = frozenset({"include", "lib", "lib64"})


def not_elf_load(member: str, elves: Sequence[ElfInfo], resolution: Resolution) -> str | None:
    """How the installed wheel loads ``member``, a file named like a shared library that is not ELF
    (so loading it fails), or None when nothing imports or loads it from where it lies.

    Loaded: a DT_NEEDED of an ELF member that ld.so looks up in ``member``'s directory before any
    ELF of that name (``invalid ELF header``); a library in a ``*.libs`` folder (auditwheel's grafted
    libraries); an extension module name (:data:`_EXTENSION_NAME`) in an importable folder (every
    folder a Python identifier), except a plain ``name.so`` under a :data:`DEV_AREAS` folder.
    Never loaded: members installed outside site-packages (``.data/{data,headers,scripts}``) and
    ``.dist-info`` files."""
    where = install_path(member)
    if where is None:
        return None
    *folders, base = where.split("/")
    if folders and folders[0].endswith(".dist-info"):
        return None
    needer = _needing(member, base, elves, resolution)
    if needer is not None:
        return f"{needer} needs {base} and ld.so opens this file for it"
    libs = next((f for f in folders if f.endswith(".libs")), None)
    if libs is not None:
        return f"ld.so loads the libraries of {libs}/ (auditwheel's grafted libraries)"
    name = _EXTENSION_NAME.fullmatch(base)
    if name is None or not all(part.isidentifier() for part in [*folders, name["module"]]):
        return None
    if name["abi"] is None and DEV_AREAS.intersection(folders):
        return None
    return f"`import {'.'.join([*folders, name['module']])}` loads it as an extension module"


def _needing(member: str, base: str, elves: Sequence[ElfInfo], resolution: Resolution) -> str | None:
    """The first ELF member whose search for DT_NEEDED ``base`` reaches ``member`` before any ELF."""
    folder = _location(member)[0]
    for e in elves:
        searched = resolution.dirs.get(e.member, ())
        if base not in e.needed or folder not in searched:
            continue
        provider = resolution.provider(e.member, base)
        if provider is None or searched.index(_location(provider)[0]) > searched.index(folder):
            return e.member
    return None


# --------------------------------------------------------------------------- pure wheels
def check_pure(report: WheelReport) -> list[Finding]:
    platforms = {t.rsplit("-", 1)[-1] for t in report.tags}
    if not platforms or platforms != {"any"}:
        return []
    tag = ", ".join(report.tags)
    out = [
        Finding(
            "pure-wheel",
            "error",
            f"{e.member} is {e.machine} machine code but the wheel is tagged {tag} (platform-independent)",
            file=e.member,
        )
        for e in report.elves
    ]
    out += [
        Finding(
            "pure-wheel",
            "warning",
            f"{c.member} is a standalone GPU code object ({c.target_id}) in a {tag} wheel: loaded by a "
            "runtime at run time, not linked; no host code, so not failed",
            file=c.member,
            symbol=c.target_id,
        )
        for c in report.code_objects
    ]
    return out
