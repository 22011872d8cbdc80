"""Integrity rules of the gate: is the wheel what it says it is, and does it load only from itself?

Each rule reads the :class:`~buildkit.inspect.models.WheelReport` only (never the wheel) and returns
:class:`~buildkit.gate.findings.Finding` objects; :func:`check_integrity` runs them all for
:func:`buildkit.gate.evaluate.evaluate`.

Each rule's ``checks`` and ``prevents`` say what it judges (docs/GATE-RULES.md); ld.so's search
inside the wheel is :func:`~buildkit.gate.loading.resolve_libraries`. RECORD's exemptions are the
wheel spec's.
"""

from __future__ import annotations

import hashlib
import itertools
import posixpath
from collections.abc import Sequence

from packaging.tags import parse_tag

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding, Severity
from buildkit.gate.loading import (
    PREFIX_DEPTH,
    Resolution,
    compatible,
    escapes,
    location,
    origin_rest,
    resolve_libraries,
    resolve_origin,
)
from buildkit.gate.rule import Rule
from buildkit.inspect.models import ElfInfo, RecordEntry, WheelReport

RECORD = Rule(
    "record",
    ("error", "warning"),
    checks=(
        "`.dist-info/RECORD` exists and lists exactly the archive's files (`RECORD`, "
        "`RECORD.jws`, `RECORD.p7s` exempt), once each, each with a hash (sha256 expected; md5, "
        "sha1 and algorithms hashlib does not guarantee are refused), the zip's size and, when "
        "hashes are verified, the member's digest."
    ),
    prevents=(
        "A corrupted or modified file (changed after the build) shipping undetected; a hidden "
        "binary or file that installers do not track and `pip uninstall` leaves behind; an entry "
        "without a file (a broken wheel). Warning: an entry without a hash (it cannot be "
        "verified; pip installs it)."
    ),
    never_waived=(
        "RECORD problems mean the wheel's files are not the ones its build wrote (corrupted, "
        "modified, or a member installers do not track): rebuild the wheel"
    ),
)

WHEEL_TAGS = Rule(
    "wheel-tags",
    ("warning",),
    checks=(
        "The `Tag:` lines of `.dist-info/WHEEL` exist, parse, and equal the file name's tags as "
        "expanded sets."
    ),
    prevents=(
        "Nothing breaks (pip, uv and PyPI select by the file name): a warning that a renamed "
        "wheel's metadata lags behind, so tools that read WHEEL (retagging, `wheel tags`) see "
        "other tags. Calibrated on 13 corpus wheels (cupy, playwright, xgboost ...)."
    ),
)

RPATH = Rule(
    "rpath",
    ("error", "warning"),
    checks=(
        "Every RPATH/RUNPATH entry of every ELF starts with `$ORIGIN` and stays inside the "
        "install root (site-packages) once resolved. Error: an absolute path (named a leaked "
        "build directory under `/tmp`, `/project`, `/home`, `/root`, `/build`, `/__w`, ...), a "
        "path relative to the working directory, or `$ORIGIN/..` escaping the Python environment "
        "(more than three levels above site-packages). Warning: an `$ORIGIN` entry leaving the "
        "wheel but staying in the environment (jaxlib, the jax CUDA/ROCm plugins). Warning: an "
        "entry under `/opt/rocm*`."
    ),
    prevents=(
        "A path that can load a foreign library: ld.so searches a directory on the user's machine"
        " (a writable `/tmp/build/lib`, a path relative to wherever Python runs, a directory "
        "outside the wheel) and loads whatever library of that name it finds there first."
    ),
)

LOAD_ORDER = Rule(
    "load-order",
    ("warning",),
    checks=(
        "A DT_NEEDED that a wheel member carries (same file name or SONAME) is not found there by"
        " ld.so from the needing object (no search path reaches it, or the file is named by its "
        "SONAME only). The gate then counts the library as not in the wheel, so "
        "`external-library`/`platform-tag` judge it."
    ),
    prevents=(
        "The library loads only if something else loaded it first (import-order dependent "
        "ImportError); the error, if any, comes from `external-library`."
    ),
)

PURE_WHEEL = Rule(
    "pure-wheel",
    ("error", "warning"),
    checks=(
        "A wheel whose tags are all platform `any`: error per host ELF it carries; warning per "
        "standalone GPU code object."
    ),
    prevents=(
        "Error: pip installs a `py3-none-any` wheel on any OS and CPU (macOS, Windows, aarch64) "
        "where its compiled code cannot load."
    ),
)
RULES = (RECORD, WHEEL_TAGS, RPATH, LOAD_ORDER, PURE_WHEEL)

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


def check(facts: Facts) -> list[Finding]:
    """The integrity rules of the gate (:func:`check_integrity` with the facts' resolution)."""
    return check_integrity(facts.report, facts.resolution)


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
        return [RECORD.error("no single top-level *.dist-info/WHEEL: cannot find RECORD")]
    record_name = f"{dist_info}/RECORD"
    exempt = {f"{dist_info}/{name}" for name in RECORD_EXEMPT}
    files = _files(report)
    if record_name not in files:
        return [RECORD.error(f"the wheel has no {record_name} (a wheel must list its files)")]
    out: list[Finding] = []
    listed: dict[str, RecordEntry] = {}
    for entry in report.record:
        if entry.path in listed:
            out.append(RECORD.error(f"RECORD lists {entry.path} twice", file=entry.path))
            continue
        listed[entry.path] = entry
    binaries = {e.member for e in report.elves} | {c.member for c in report.code_objects}
    for name in files:
        if name in listed or name in exempt:
            continue
        what = "a hidden binary" if name in binaries else "a file installers will not track or uninstall"
        out.append(
            RECORD.error(
                f"{name} is in the archive but not in RECORD: {what}",
                file=name,
            )
        )
    for path, entry in listed.items():
        if path not in files:
            if path not in exempt:
                out.append(
                    RECORD.error(
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
        return [RECORD.warning(f"RECORD gives no hash for {path}: it cannot be verified", file=path)]
    algorithm, value = _normal_hash(entry.hash)
    if algorithm in WEAK_HASHES:
        return [
            RECORD.error(
                f"RECORD hashes {path} with {algorithm}, which the wheel spec forbids (use sha256)",
                file=path,
                symbol=entry.hash,
            )
        ]
    if algorithm not in hashlib.algorithms_guaranteed or algorithm.startswith("shake"):
        return [
            RECORD.error(
                f"RECORD hashes {path} with {algorithm or '(nothing)'!r}, not a hashlib algorithm",
                file=path,
                symbol=entry.hash,
            )
        ]
    out = []
    if entry.size is not None and size is not None and entry.size != size:
        out.append(
            RECORD.error(
                f"RECORD says {path} is {entry.size} bytes, the archive holds {size}",
                file=path,
            )
        )
    if verified and digest is not None and _normal_hash(digest) != (algorithm, value):
        out.append(
            RECORD.error(
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
        return [WHEEL_TAGS.warning(f"{where} has no Tag: lines", file=where)]
    declared: set[str] = set()
    out = []
    for line in report.wheel_tags:
        try:
            declared |= {str(t) for t in parse_tag(line)}
        except (ValueError, IndexError):
            out.append(WHEEL_TAGS.warning(f"{where}: malformed Tag: {line!r}", file=where))
    named = set(report.tags)
    missing, extra = sorted(named - declared), sorted(declared - named)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"the file name's {', '.join(missing)} not in {where}")
        if extra:
            parts.append(f"{where}'s {', '.join(extra)} not in the file name")
        out.append(
            WHEEL_TAGS.warning(
                "WHEEL Tag: lines differ from the file name's tags: " + "; ".join(parts),
                file=where,
                symbol=", ".join(missing + extra),
            )
        )
    return out


# --------------------------------------------------------------------------- RPATH / RUNPATH


def _path_finding(e: ElfInfo, kind: str, entry: str) -> Finding | None:
    severity: Severity = "error"
    if origin_rest(entry) is not None:
        resolved = resolve_origin(e.member, entry)
        if resolved is None or not escapes(resolved):
            return None
        up = len(list(itertools.takewhile(lambda part: part == "..", resolved.split("/"))))
        if up <= PREFIX_DEPTH:
            # still inside the environment (site-packages is lib/pythonX.Y/site-packages): it finds
            # only what that environment installs there (jaxlib, the jax CUDA/ROCm plugins point at
            # other wheels' libraries so): hygiene, a warning
            severity = "warning"
            why = (
                f"resolves outside the wheel's install root, {up} level{'s' if up > 1 else ''} above "
                "site-packages (inside the environment)"
            )
        else:
            why = (
                f"resolves {up} levels above site-packages, outside the Python environment: it can "
                "load a library the environment does not control"
            )
    elif entry == ROCM_PREFIX or entry.startswith((ROCM_PREFIX + "/", ROCM_PREFIX + "-")):
        severity = "warning"
        why = (
            "points at a system ROCm install outside the wheel (common in ROCm wheels; the ROCm "
            "libraries must be there at run time)"
        )
    elif entry.startswith("/"):
        leaked = any(entry == root or entry.startswith(root + "/") for root in BUILD_ROOTS)
        why = "a leaked build directory" if leaked else "an absolute path outside the wheel"
        why = f"is {why}: use $ORIGIN-relative paths"
    else:
        why = "is relative to the current directory at run time: use $ORIGIN-relative paths"
    return RPATH.finding(severity, f"{kind} entry {entry} of {e.member} {why}", file=e.member, symbol=entry)


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


def carriers(elves: Sequence[ElfInfo]) -> dict[str, list[ElfInfo]]:
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
    by_name = carriers(elves)
    out = []
    for e in elves:
        for name in e.needed:
            if "/" in name or res.provider(e.member, name) is not None:
                continue
            found = [p for p in by_name.get(name, ()) if p.member != e.member and compatible(e, p)]
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
    misnamed = [p for p in found if location(p.member)[0] in dirs]
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
    return LOAD_ORDER.warning(message, file=e.member, library=name, symbol=found[0].member)


def _names(found: Sequence[ElfInfo]) -> str:
    return " and ".join(p.member for p in found)


def _dirs(found: Sequence[ElfInfo]) -> str:
    return " or ".join(sorted({location(p.member)[0] for p in found}))


# --------------------------------------------------------------------------- not-ELF libraries


# --------------------------------------------------------------------------- pure wheels
def check_pure(report: WheelReport) -> list[Finding]:
    platforms = {t.rsplit("-", 1)[-1] for t in report.tags}
    if not platforms or platforms != {"any"}:
        return []
    tag = ", ".join(report.tags)
    out = [
        PURE_WHEEL.error(
            f"{e.member} is {e.machine} machine code but the wheel is tagged {tag} (platform-independent)",
            file=e.member,
        )
        for e in report.elves
    ]
    out += [
        PURE_WHEEL.warning(
            f"{c.member} is a standalone GPU code object ({c.target_id}) in a {tag} wheel: loaded by a "
            "runtime at run time, not linked; no host code, so not failed",
            file=c.member,
            symbol=c.target_id,
        )
        for c in report.code_objects
    ]
    return out
