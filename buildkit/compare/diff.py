"""Release-over-release wheel diff: what changed between the last published wheel and a candidate.

Both wheels are read by the streaming inspection (:mod:`buildkit.inspect`) and judged by the gate's
own evaluation (:func:`buildkit.gate.evaluate.evaluate` with the default config, only its facts are used: per
library and prefix the highest symbol version, the libraries and their status, gfx targets per
object, the manylinux tag). :func:`diff_reports` compares them:

* **symbol versions** per needed library and prefix (``libc.so.6`` ``GLIBC`` 2.28 -> 2.34). A
  regression when the new version exceeds the highest version of that prefix the old wheel needed
  from any library (the wheel now needs a newer runtime), or when the prefix is new altogether;
* **manylinux tag** the wheel's symbols and libraries are consistent with: less compatible = regression;
* **platform tags** of the file name: a removed tag is a regression unless a new tag still covers it
  (same interpreter and ABI; for manylinux, the same architecture and an older or equal glibc);
* **external libraries** (not whitelisted, not grafted, not excluded by ``exclude_globs``): one added
  or turned external is a regression;
* **gfx targets per object** (offload bundles, code objects): a target removed from an object, or gone
  from the wheel, is a regression unless a new target of the same processor with fewer features
  covers it (``gfx90a`` covers ``gfx90a:xnack-``);
* **size** (bytes and %), **members** added and removed: reported, never regressions.

The libraries provided at run time (``exclude_globs``, the only part of the gate configuration that
changes the facts compared here) are named as ``buildkit check`` names them
(:func:`buildkit.service.check.run_time_globs`). :func:`baseline_from_index` finds the newest
published wheel of the same project with compatible tags in a simple index (:mod:`buildkit.pyindex`),
downloads it and verifies its listed hash.
"""

from __future__ import annotations

import posixpath
import re
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from packaging.tags import Tag, parse_tag
from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import Version

from buildkit import pyindex
from buildkit.errors import UsageError, WheelReadError
from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.gate.rules.gfx import split_target
from buildkit.gate.torchabi import needs_change
from buildkit.gate.verdict import Verdict
from buildkit.inspect import inspect_wheel
from buildkit.inspect.models import WheelReport
from buildkit.inspect.wheel import WheelHandle, open_wheel
from buildkit.judge.wheel import torch_needs
from buildkit.policy import parse_platform_tag, split_symbol_version, version_tuple
from buildkit.records import Key, json_shape, to_data

SCHEMA_VERSION = 1
SymbolChangeKind = Literal["raised", "lowered", "added", "removed"]


# --------------------------------------------------------------------------- result model
@json_shape()
@dataclass(frozen=True)
class SymbolChange:
    library: str  # "libc.so.6"
    prefix: str  # "GLIBC"
    old: str | None  # "2.28"
    new: str | None  # "2.34"
    change: SymbolChangeKind
    regression: bool
    files: tuple[str, ...]  # the new (or, when removed, old) members requiring that version


@json_shape()
@dataclass(frozen=True)
class LibraryChange:
    library: str
    old: str | None  # status in the old wheel ("external", "whitelisted", "grafted", "excluded")
    new: str | None
    regression: bool


@json_shape()
@dataclass(frozen=True)
class GfxChange:
    file: str
    old: tuple[str, ...]
    new: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    regression: bool


@dataclass(frozen=True)
class WheelDiff:
    old: WheelReport
    new: WheelReport
    old_policy: str | None  # the manylinux tag each wheel's content is consistent with
    new_policy: str | None
    policy_regression: bool
    symbols: tuple[SymbolChange, ...]
    tags_added: tuple[str, ...]
    tags_removed: tuple[str, ...]
    tags_uncovered: tuple[str, ...]  # removed tags no new tag covers (regressions)
    libraries: tuple[LibraryChange, ...]
    gfx: tuple[GfxChange, ...]
    gfx_removed: tuple[str, ...]  # targets gone from the whole wheel (regressions)
    gfx_added: tuple[str, ...]
    members_added: tuple[str, ...]
    members_removed: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())
    exclude_globs: tuple[str, ...] = field(default=())  # the libraries taken as provided at run time
    #: the symbols needed from torch (by name, :func:`buildkit.gate.torchabi.needs_change`) the new
    #: wheel adds and drops, demangled; reported, never regressions
    torch_added: tuple[str, ...] = field(default=())
    torch_removed: tuple[str, ...] = field(default=())

    @property
    def size_delta(self) -> int:
        return self.new.size - self.old.size

    @property
    def size_percent(self) -> float | None:
        return None if self.old.size == 0 else 100.0 * self.size_delta / self.old.size

    @property
    def regressions(self) -> tuple[str, ...]:
        """One sentence per regression, in a stable order."""
        out: list[str] = []
        if self.policy_regression:
            out.append(f"manylinux tag {self.old_policy} -> {self.new_policy}")
        for s in self.symbols:
            if s.regression:
                out.append(f"{s.library} {s.prefix} {s.old or 'none'} -> {s.new} (needed by {s.files[0]})")
        out += [f"platform tag {t} no longer provided" for t in self.tags_uncovered]
        for lib in self.libraries:
            if lib.regression:
                was = "new" if lib.old is None else f"was {lib.old}"
                out.append(f"external library {lib.library} ({was})")
        for g in self.gfx:
            if g.regression:
                out.append(f"{g.file}: gfx target(s) removed: {', '.join(g.removed)}")
        per_object = {t for g in self.gfx if g.regression for t in g.removed}
        out += [f"gfx target {t} gone from the wheel" for t in self.gfx_removed if t not in per_object]
        return tuple(out)

    @property
    def regression(self) -> bool:
        return bool(self.regressions)

    def to_json(self, *, baseline: dict[str, Any] | None = None) -> dict[str, Any]:
        # hand-written, no JsonShape (buildkit/records.py): grouped keys, computed, and an argument
        def ident(r: WheelReport) -> dict[str, Any]:
            return {
                "filename": r.filename,
                "name": r.name,
                "version": r.version,
                "tags": list(r.tags),
                "size": r.size,
                "uncompressed_size": r.uncompressed_size,
                "sha256": r.sha256,
            }

        pct = self.size_percent
        doc: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "old": ident(self.old),
            "new": ident(self.new),
            "regression": self.regression,
            "regressions": list(self.regressions),
            "policy": {"old": self.old_policy, "new": self.new_policy, "regression": self.policy_regression},
            "symbols": to_data(self.symbols),
            "tags": {
                "added": list(self.tags_added),
                "removed": list(self.tags_removed),
                "uncovered": list(self.tags_uncovered),
            },
            "libraries": to_data(self.libraries),
            "gfx": {
                "objects": to_data(self.gfx),
                "added": list(self.gfx_added),
                "removed": list(self.gfx_removed),
            },
            "size": {
                "old": self.old.size,
                "new": self.new.size,
                "delta": self.size_delta,
                "percent": None if pct is None else round(pct, 2),
                "uncompressed_old": self.old.uncompressed_size,
                "uncompressed_new": self.new.uncompressed_size,
            },
            "members": {"added": list(self.members_added), "removed": list(self.members_removed)},
            "torch_symbols": {"added": list(self.torch_added), "removed": list(self.torch_removed)},
            "notes": list(self.notes),
            "exclude_globs": list(self.exclude_globs),
        }
        if baseline is not None:
            doc["baseline"] = baseline
        return doc


# --------------------------------------------------------------------------- comparison
def _vkey(version: str | None) -> tuple[int, ...]:
    return () if version is None else (version_tuple(version) or ())


def _symbol_table(verdict: Verdict) -> dict[tuple[str, str], tuple[str, tuple[str, ...]]]:
    out = {}
    for s in verdict.symbols:
        out[(s.library, s.prefix)] = (split_symbol_version(s.version)[1], s.files)
    return out


def _symbol_changes(old: Verdict, new: Verdict) -> list[SymbolChange]:
    before, after = _symbol_table(old), _symbol_table(new)
    old_top: dict[str, tuple[int, ...]] = {}
    for (_lib, prefix), (version, _files) in before.items():
        old_top[prefix] = max(old_top.get(prefix, ()), _vkey(version))
    out = []
    for key in sorted(set(before) | set(after)):
        library, prefix = key
        ov, of = before.get(key, (None, ()))
        nv, nf = after.get(key, (None, ()))
        if ov == nv:
            continue
        kind: SymbolChangeKind
        if ov is None:
            kind = "added"
        elif nv is None:
            kind = "removed"
        else:
            kind = "raised" if _vkey(nv) > _vkey(ov) else "lowered"
        regression = nv is not None and (prefix not in old_top or _vkey(nv) > old_top[prefix])
        out.append(SymbolChange(library, prefix, ov, nv, kind, regression, nf or of))
    return out


_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)$")


def _covers(new: Tag, old: Tag) -> bool:
    """Does a wheel tagged ``new`` install everywhere one tagged ``old`` did?"""
    if (new.interpreter, new.abi) != (old.interpreter, old.abi):
        return False
    if new.platform == old.platform:
        return True
    pn, po = parse_platform_tag(new.platform), parse_platform_tag(old.platform)
    if pn is None or po is None or pn[1] != po[1]:
        return False
    mn, mo = _MANYLINUX.match(pn[0]), _MANYLINUX.match(po[0])
    if mn is None or mo is None:
        return False
    return (int(mn[1]), int(mn[2])) <= (int(mo[1]), int(mo[2]))


def _tags(report: WheelReport) -> set[Tag]:
    out: set[Tag] = set()
    for text in report.tags:
        out |= parse_tag(text)
    return out


def _library_changes(old: Verdict, new: Verdict) -> list[LibraryChange]:
    before = {u.library: u.status for u in old.libraries}
    after = {u.library: u.status for u in new.libraries}
    out = []
    for lib in sorted(set(before) | set(after)):
        o, n = before.get(lib), after.get(lib)
        if o == n:
            continue
        out.append(LibraryChange(lib, o, n, regression=n == "external"))
    return out


def _target_covered(target: str, present: Iterable[str]) -> bool:
    """``gfx90a:xnack-`` is covered by ``gfx90a:xnack-`` or by ``gfx90a`` (any xnack mode)."""
    name, feats = split_target(target)
    for other in present:
        oname, ofeats = split_target(other)
        if oname == name and ofeats <= feats:
            return True
    return False


def _gfx_changes(old: Verdict, new: Verdict) -> tuple[list[GfxChange], list[str], list[str]]:
    before = {g.file: tuple(g.targets) for g in old.gfx}
    after = {g.file: tuple(g.targets) for g in new.gfx}
    out = []
    for file in sorted(set(before) | set(after)):
        o, n = before.get(file, ()), after.get(file, ())
        if o == n:
            continue
        removed = tuple(t for t in o if t not in n)
        added = tuple(t for t in n if t not in o)
        regression = file in after and any(not _target_covered(t, n) for t in removed)
        out.append(GfxChange(file, o, n, added, removed, regression))
    all_old = {t for ts in before.values() for t in ts}
    all_new = {t for ts in after.values() for t in ts}
    gone = sorted(t for t in all_old if not _target_covered(t, all_new))
    return out, gone, sorted(all_new - all_old)


def _members(report: WheelReport) -> dict[str, str]:
    """Members keyed without the version in ``NAME-VERSION.dist-info/`` / ``.data/`` (a new release
    renames those directories; their files are not added or removed)."""
    out = {}
    for member in report.members:
        top, sep, rest = member.partition("/")
        for suffix in (".dist-info", ".data"):
            if sep and top.endswith(suffix) and "-" in top:
                member_key = f"{{{suffix}}}/{rest}"
                break
        else:
            member_key = member
        out[member_key] = member
    return out


def diff_reports(
    old: WheelReport,
    new: WheelReport,
    *,
    exclude_globs: Sequence[str] = (),
    torch: tuple[tuple[str, ...], tuple[str, ...]] = ((), ()),
) -> WheelDiff:
    """Compare two inspected wheels; ``exclude_globs`` name libraries provided at run time;
    ``torch``: the symbols needed from torch added and removed (:func:`torch_changes`)."""
    config = GateConfig(exclude_globs=tuple(exclude_globs), size_warn=None)
    vo, vn = evaluate(old, config), evaluate(new, config)
    notes = []
    if canonicalize_name(old.name) != canonicalize_name(new.name):
        notes.append(f"different projects: {old.name} vs {new.name}")
    try:
        if Version(new.version) <= Version(old.version):
            notes.append(f"the new version {new.version} is not newer than {old.version}")
    except ValueError:
        pass
    policy_regression = (
        vo.overall_policy is not None
        and vn.overall_policy is not None
        and vn.overall_policy.priority < vo.overall_policy.priority
    )
    told, tnew = _tags(old), _tags(new)
    removed = told - tnew
    uncovered = sorted(str(t) for t in removed if not any(_covers(n, t) for n in tnew))
    gfx, gone, gfx_added = _gfx_changes(vo, vn)
    members_old, members_new = _members(old), _members(new)
    return WheelDiff(
        old=old,
        new=new,
        old_policy=vo.overall_tag,
        new_policy=vn.overall_tag,
        policy_regression=policy_regression,
        symbols=tuple(_symbol_changes(vo, vn)),
        tags_added=tuple(sorted(str(t) for t in tnew - told)),
        tags_removed=tuple(sorted(str(t) for t in removed)),
        tags_uncovered=tuple(uncovered),
        libraries=tuple(_library_changes(vo, vn)),
        gfx=tuple(gfx),
        gfx_removed=tuple(gone),
        gfx_added=tuple(gfx_added),
        members_added=tuple(sorted(members_new[k] for k in members_new.keys() - members_old.keys())),
        members_removed=tuple(sorted(members_old[k] for k in members_old.keys() - members_new.keys())),
        notes=tuple(notes),
        exclude_globs=config.exclude_globs,
        torch_added=torch[0],
        torch_removed=torch[1],
    )


def torch_changes(
    old: Path | WheelHandle, old_report: WheelReport, new: Path | WheelHandle, new_report: WheelReport
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The symbols needed from torch that ``new`` adds and removes (both wheels' tables streamed,
    :func:`buildkit.judge.wheel.torch_needs`)."""
    return needs_change(torch_needs(old, old_report), torch_needs(new, new_report))


def diff_wheels(old: Path, new: Path, *, exclude_globs: Sequence[str] = ()) -> WheelDiff:
    """``old`` and ``new`` compared, each opened once (inspection and needs from torch)."""
    with open_wheel(old) as o, open_wheel(new) as n:
        ro, rn = inspect_wheel(o), inspect_wheel(n)
        torch = torch_changes(o, ro, n, rn)
    return diff_reports(ro, rn, exclude_globs=exclude_globs, torch=torch)


# --------------------------------------------------------------------------- human output
def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def _globs_summary(globs: Sequence[str], shown: int = 4) -> str:
    text = ", ".join(globs[:shown])
    if len(globs) > shown:
        text += f" and {len(globs) - shown} more (--json lists them)"
    return text


def render_human(d: WheelDiff, *, baseline: str | None = None) -> str:
    lines = [f"old: {d.old.filename}" + (f"  ({baseline})" if baseline else ""), f"new: {d.new.filename}"]
    lines += [f"note: {n}" for n in d.notes]
    if d.exclude_globs:
        lines.append(f"provided at run time: {_globs_summary(d.exclude_globs)}")
    flag = "  REGRESSION" if d.policy_regression else ""
    if d.old_policy != d.new_policy:
        lines.append(f"manylinux tag: {d.old_policy} -> {d.new_policy}{flag}")
    else:
        lines.append(f"manylinux tag: {d.new_policy or 'none (no host code)'} (unchanged)")
    if d.symbols:
        lines.append("symbol versions:")
        for s in d.symbols:
            mark = "  REGRESSION" if s.regression else ""
            lines.append(
                f"  {s.library:<18} {s.prefix:<8} {s.old or '-':>8} -> {s.new or '-':<8} {s.change}{mark}"
                f"  ({s.files[0]})"
            )
    else:
        lines.append("symbol versions: unchanged")
    if d.tags_added or d.tags_removed:
        lines.append("platform tags:")
        lines += [f"  + {t}" for t in d.tags_added]
        lines += [f"  - {t}" + ("  REGRESSION" if t in d.tags_uncovered else "") for t in d.tags_removed]
    if d.libraries:
        lines.append("libraries:")
        for lib in d.libraries:
            mark = "  REGRESSION" if lib.regression else ""
            lines.append(f"  {lib.library:<28} {lib.old or '-'} -> {lib.new or '-'}{mark}")
    if d.gfx:
        lines.append("gfx targets:")
        for g in d.gfx:
            parts = [f"+{t}" for t in g.added] + [f"-{t}" for t in g.removed]
            mark = "  REGRESSION" if g.regression else ""
            lines.append(f"  {g.file}: {' '.join(parts)}{mark}")
        if d.gfx_removed:
            lines.append(f"  gone from the wheel: {', '.join(d.gfx_removed)}  REGRESSION")
    pct = d.size_percent
    pct_text = "" if pct is None else f", {pct:+.1f}%"
    lines.append(
        f"size: {_size(d.old.size)} -> {_size(d.new.size)} ({d.size_delta:+d} bytes{pct_text}); "
        f"unpacked {_size(d.old.uncompressed_size)} -> {_size(d.new.uncompressed_size)}"
    )
    if d.torch_added or d.torch_removed:
        lines.append(f"symbols needed from torch: +{len(d.torch_added)} -{len(d.torch_removed)}")
        lines += [f"  + {name}" for name in d.torch_added]
        lines += [f"  - {name}" for name in d.torch_removed]
    if d.members_added or d.members_removed:
        lines.append(f"members: {len(d.members_added)} added, {len(d.members_removed)} removed")
        lines += [f"  + {m}" for m in d.members_added]
        lines += [f"  - {m}" for m in d.members_removed]
    regs = d.regressions
    lines.append(f"regressions: {len(regs)}" if regs else "no regression")
    lines += [f"  - {r}" for r in regs]
    return "\n".join(lines)


# --------------------------------------------------------------------------- PEP 503 index
@json_shape("filename", "url", "hashes")
@dataclass(frozen=True)
class IndexFile:
    """One wheel link of a project page."""

    filename: str
    url: str  # without fragment
    hashes: dict[str, str]  # {"sha256": hex} from the URL fragment
    version: Version
    build: tuple[int, str] | tuple[()]
    tags: frozenset[Tag]
    yanked: bool


def project_url(index_url: str, project: str) -> str:
    """PEP 503: ``<root>/<normalized name>/``; a URL already ending with the project is kept."""
    root = index_url if index_url.endswith("/") else index_url + "/"
    last = posixpath.basename(urllib.parse.urlsplit(root).path.rstrip("/"))
    if canonicalize_name(last) == canonicalize_name(project):
        return root
    return pyindex.simple_page_url(root, project)


def _require_index_root(page: str) -> None:
    """A ``file://`` index whose root (the directory holding the project pages) does not exist is a
    wrong URL, not an index without the project: UsageError. Over http(s) a missing project page and
    a wrong root both answer 404 and the root page is not fetched (PyPI's lists every project)."""
    if urllib.parse.urlsplit(page).scheme != "file":
        return
    root = pyindex.file_path(page).parent
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "does not exist"
        raise UsageError(
            f"index {root.as_uri()}/ {what}: a file:// simple index is a directory of project pages\n"
            "  hint: check the URL (a first release needs an existing, possibly empty, index directory)"
        )


def _index_file(link: pyindex.Link, project: str) -> IndexFile | None:
    """A wheel of ``project`` listed by the page, else None."""
    if not link.filename.endswith(".whl"):
        return None
    try:
        name, version, build, tags = parse_wheel_filename(link.filename)
    except InvalidWheelFilename:
        return None
    if name != canonicalize_name(project):
        return None
    return IndexFile(link.filename, link.url, dict(link.hashes), version, build, tags, link.yanked)


def project_files(index_url: str, project: str) -> tuple[str, list[IndexFile]]:
    """``(page URL, wheels listed there)`` (:mod:`buildkit.pyindex`: PEP 691 or PEP 503); no page
    (404) gives an empty list, unless the index itself is missing (a ``file://`` root that is not a
    directory: UsageError). An index that cannot be reached is IndexUnavailable (exit 13), one that
    answers no (another HTTP status) a UsageError."""
    page = project_url(index_url, project)
    scheme = urllib.parse.urlsplit(page).scheme
    if scheme not in ("file", "http", "https"):
        raise UsageError(f"index URL must be file://, http:// or https://, not {index_url!r}")
    try:
        links = pyindex.IndexClient().page(page).links
    except pyindex.NotFound:
        _require_index_root(page)
        return page, []
    except pyindex.IndexRefused as exc:
        shown = pyindex.redact(exc.url)
        raise UsageError(f"index {shown} answered {exc.reason}" if exc.status else str(exc)) from None
    files = [f for f in (_index_file(link, project) for link in links) if f is not None]
    return page, files


def _compatible(candidate: Iterable[Tag], wanted: Iterable[Tag]) -> bool:
    """Same interpreter and ABI, and a platform of the same family (manylinux: the same arch)."""
    for c in candidate:
        for w in wanted:
            if (c.interpreter, c.abi) != (w.interpreter, w.abi):
                continue
            if c.platform == w.platform:
                return True
            pc, pw = parse_platform_tag(c.platform), parse_platform_tag(w.platform)
            if pc is not None and pw is not None and pc[1] == pw[1]:
                return True
    return False


def choose_baseline(files: Sequence[IndexFile], new: WheelReport) -> tuple[IndexFile | None, list[str]]:
    """The newest non-yanked wheel older than ``new`` with compatible tags, and why others were left.

    Only releases of the same product line count: when ``new`` has a local version label
    (``1.1+rocm7.2``), only earlier releases with exactly that label (``1.0+rocm7.2``); a sibling
    build with another label (``1.0+rocm7.0``) is another product line, never "the last release"
    (when none has the label this is that line's first release). Without a local label, only releases
    without one. Among those: the highest version, then the highest build tag, then an exact tag match.
    """
    wanted = _tags(new)
    mine = Version(new.version)
    label = mine.local
    notes = []
    candidates = []
    other_lines: set[str] = set()
    for f in files:
        if f.yanked:
            notes.append(f"{f.filename}: yanked")
        elif not _compatible(f.tags, wanted):
            continue
        elif f.version.local != label:
            other_lines.add(f"+{f.version.local}" if f.version.local else "no local label")
        elif f.version >= mine:
            notes.append(f"{f.filename}: not older than {new.version}")
        else:
            candidates.append(f)
    if other_lines:
        notes.append(
            "left out as other product lines (a different local version label): "
            + ", ".join(sorted(other_lines))
        )
    if not candidates:
        if label is not None:
            notes.append(f"no earlier release with local label {label}: a first release of that line")
        return None, notes
    best = max(candidates, key=lambda f: (f.version, f.build, bool(f.tags & wanted)))
    return best, notes


def download(file: IndexFile, dest: Path) -> Path:
    """Fetch ``file`` into ``dest`` verifying its URL-fragment hash (through a temporary file renamed
    into place: :meth:`buildkit.pyindex.IndexClient.download`); a mismatch is a WheelReadError."""
    if "/" in file.filename or file.filename in (".", ".."):
        raise WheelReadError(f"refusing index file name {file.filename!r}")
    target = dest / file.filename
    try:
        pyindex.IndexClient(timeout=300).download(file.url, target, hashes=file.hashes, part_suffix=".tmp")
    except pyindex.DigestMismatch as exc:
        raise WheelReadError(
            f"{file.filename} from the index does not match its {exc.algorithm}: "
            f"expected {exc.expected}, got {exc.actual}"
        ) from None
    except (pyindex.NotFound, pyindex.IndexRefused) as exc:
        raise UsageError(f"cannot download {file.url}: {exc}") from None
    except OSError as exc:
        raise UsageError(f"cannot download {file.url}: {exc}") from None
    return target


@json_shape("page", "file", Key("verified", "file.hashes", convert=sorted), "notes")
@dataclass(frozen=True)
class Baseline:
    """The wheel chosen from an index (``file`` None: no earlier compatible release)."""

    page: str
    file: IndexFile | None
    path: Path | None
    notes: tuple[str, ...]


def baseline_from_index(index_url: str, new: WheelReport, dest: Path) -> Baseline:
    page, files = project_files(index_url, new.name)
    chosen, notes = choose_baseline(files, new)
    if chosen is None:
        return Baseline(page, None, None, tuple(notes))
    return Baseline(page, chosen, download(chosen, dest), tuple(notes))


def diff_against_index(
    index_url: str, new: Path, *, exclude_globs: Sequence[str] = (), workdir: Path
) -> tuple[Baseline, WheelDiff | None]:
    """``new`` against the newest earlier compatible release at ``index_url`` (downloaded into
    ``workdir``); the diff is ``None`` when the index has no such release (a first release)."""

    report = inspect_wheel(new)
    baseline = baseline_from_index(index_url, report, workdir)
    if baseline.path is None:
        return baseline, None
    old = inspect_wheel(baseline.path)
    torch = torch_changes(baseline.path, old, new, report)
    return baseline, diff_reports(old, report, exclude_globs=exclude_globs, torch=torch)
