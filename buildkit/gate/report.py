"""Rendering gate verdicts: a human report (like the verdicts posted on release PRs) and JSON.

The JSON document follows ``buildkit/schema/check-report.schema.json`` (``schema_version`` 1). Optional
fields are added freely (every field since version 1 was); renaming or removing a field bumps
``schema_version``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from buildkit.gate.device import DeviceCode
from buildkit.gate.findings import Finding
from buildkit.gate.verdict import GfxObject, Integrity, Verdict
from buildkit.records import to_data
from buildkit.rocm import processor_sort_key
from buildkit.units import format_size

if TYPE_CHECKING:  # the torch-abi reader and the demangler load only for a torch-abi report
    from buildkit.gate.torchabi import TorchAbiResult

SCHEMA_ID = "rocm-buildkit/check-report"
SCHEMA_VERSION = 1


class ReadFailure(NamedTuple):
    """A wheel that could not be read (exit code 6)."""

    wheel: str
    error: str


def load_schema() -> dict[str, Any]:
    from importlib import resources  # only when a caller validates (tests, --json consumers)

    text = (
        resources.files("buildkit").joinpath("schema").joinpath("check-report.schema.json").read_text("utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


def verdict_to_json(v: Verdict) -> dict[str, Any]:
    return {
        "wheel": v.wheel,
        "size": v.size,
        "sha256": v.sha256,
        "passed": v.passed,
        "config": to_data(v.config),
        "platform": {
            "overall_tag": v.overall_tag,
            "sym_tag": v.sym_tag,
            "library_tag": v.lib_policy.tag if v.lib_policy else None,
            "file_tags": list(v.file_tags),
            "arch": v.arch,
            "pure": v.pure,
            "libc": v.libc,
        },
        "symbols": to_data(v.symbols),
        "libraries": to_data(v.libraries),
        "external_libraries": v.external_libraries(),
        "gfx": to_data(v.gfx),
        "device_code": to_data(v.device),
        "findings": to_data(v.findings),
        "integrity": to_data(v.integrity),
        "torch_abi": to_data(v.torch_abi),
        # only for a stable-ABI wheel: the other reports stay what they were
        **({"torch_stable": to_data(v.torch_stable)} if v.torch_stable is not None else {}),
    }


def to_json(verdicts: Sequence[Verdict], failures: Sequence[ReadFailure] = ()) -> dict[str, Any]:
    wheels: list[dict[str, Any]] = [verdict_to_json(v) for v in verdicts]
    wheels += [{"wheel": f.wheel, "error": f.error} for f in failures]
    return {
        "schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "passed": not failures and all(v.passed for v in verdicts),
        "wheels": wheels,
    }


# Without -v the report stays short enough to paste on a release PR; the JSON always lists everything.
GFX_LIST_MAX = 12  # up to this many objects, one line per object
GFX_EXAMPLES = 3  # example members per (kind, targets) group
GFX_GROUPS_MAX = 8  # groups shown with examples; the rest are counted on one line
FINDINGS_SHOWN: dict[str, int] = {"error": 20, "warning": 5, "waived": 20}  # per (severity, rule)
GFX_MORE = "(-v lists every object, --json too)"
FINDINGS_MORE = "(-v lists all, --json too)"


def render_human(v: Verdict, *, verbose: bool = False) -> str:
    """The verdict of one wheel as text: tag, symbols, libraries, gfx targets, each failed rule.

    Findings are grouped by (severity, rule) in order of first appearance. Without ``verbose``, more
    than :data:`GFX_LIST_MAX` gfx objects are summarised (per-target and per-kind counts, then each
    (kind, targets) group with its count and a few example members) and each group of findings is cut
    after :data:`FINDINGS_SHOWN` lines with a line saying how many more there are; the verdict line
    always gives the real totals."""
    lines = _verdict_lines(v)
    if v.symbols:
        lines.append("  max required symbol versions:")
        width = max(len(s.library) for s in v.symbols)
        for s in v.symbols:
            more = f" (+{len(s.files) - 1} more)" if len(s.files) > 1 else ""
            lines.append(f"    {s.library:<{width}}  {s.version:<16} {s.file}{more}")
    if v.libraries:
        lines.append("  needed libraries:")
        width = max(len(u.library) for u in v.libraries)
        for u in v.libraries:
            detail = f" ({u.detail})" if u.detail else ""
            lines.append(f"    {u.library:<{width}}  {u.status}{detail}")
    ext = v.external_libraries()
    lines.append(f"  external libraries: {', '.join(ext) if ext else 'none'}")
    if v.integrity is not None:
        lines.append(_record_line(v.integrity, sum(f.rule == "record" for f in v.findings)))
    if v.torch_abi is not None:
        lines += _torch_abi_lines(v.torch_abi, verbose=verbose)
    if v.torch_stable is not None:
        from buildkit.gate.torchshim import summary_line

        lines.append(f"  torch stable ABI: {summary_line(v.torch_stable)}")
        if verbose:
            lines += [f"    shim {since}  {n.name}  ({n.member})" for n, since in v.torch_stable.shim]
    if v.gfx:
        lines.append("  gfx targets:")
        if verbose or len(v.gfx) <= GFX_LIST_MAX:
            lines += [f"    {g.file} [{g.kind}]: {' '.join(g.targets)}" for g in v.gfx]
        else:
            lines += _gfx_summary(v.gfx)
    if v.device.members:
        lines += _device_lines(v.device, verbose=verbose)
    lines += _finding_lines(v.findings, verbose=verbose, recipe=recipe_of(v))
    return "\n".join(lines)


def _verdict_lines(v: Verdict) -> list[str]:
    """The wheel, the verdict with its counts, what it was gated as, its platform and file name tags."""
    lines = [f"{v.wheel}  ({format_size(v.size)}, sha256 {v.sha256[:12]})"]
    status = "PASS" if v.passed else "FAIL"
    waived = f", {len(v.waived)} waived" if v.waived else ""
    lines.append(f"  verdict: {status} ({len(v.errors)} error(s), {len(v.warnings)} warning(s){waived})")
    lines.append(f"  gated as: {gated_as(v)}")
    if v.pure:
        lines.append("  platform: no host ELF code (pure wheel)")
    elif v.overall_tag is None:
        lines.append(
            "  platform tag: none can be judged (host code of an architecture or libc auditwheel's "
            "policies do not cover: see the elf-machine/elf-libc findings)"
        )
    else:
        lines.append(
            f"  platform tag: {v.overall_tag}  (symbols allow {v.sym_tag}; "
            f"libraries allow {v.lib_policy.tag if v.lib_policy else '-'})"
        )
    lines.append(f"  file name tags: {', '.join(v.file_tags) or '-'}")
    return lines


def _record_line(i: Integrity, problems: int) -> str:
    state = f"{problems} problem(s)" if problems else "consistent"
    head = f"  RECORD: {i.record_entries} entries for {i.files} files"
    if i.hashes_verified:
        return f"{head}, hashes verified: {state}"
    return f"{head}, names and sizes: {state}; hashes not verified (--no-verify-record)"


def _device_lines(device: DeviceCode, *, verbose: bool) -> list[str]:
    """``device code per gfx target``: each target's bytes in the members (and the code objects' own
    size when compressed bundles make them differ), the bundles plain and compressed; with
    ``verbose``, each member's targets and each bundle."""
    totals = device.per_target()
    plain = sum(b.compression is None for b in device.bundles)
    packed = len(device.bundles) - plain
    files = len({m.file for m in device.members})
    stored = sum(s for _, s in totals.values())
    head = f"  device code: {format_size(stored)} in {files} member(s)"
    if device.bundles:
        head += f", {len(device.bundles)} offload bundle(s): {plain} plain, {packed} compressed (CCOB)"
    lines = [head]
    for target in sorted(totals, key=processor_sort_key):
        size, kept = totals[target]
        own = f"  (code objects {format_size(size)})" if size != kept else ""
        lines.append(f"    {target:<8} {format_size(kept):>10}{own}")
    if verbose:
        for m in device.members:
            own = f" (code objects {format_size(m.bytes)})" if m.bytes != m.stored else ""
            lines.append(f"    {m.file} {m.target}: {format_size(m.stored)}{own}")
        for b in device.bundles:
            kind = f"compressed ({b.compression})" if b.compression else "plain"
            saving = f", compressing saves about {format_size(b.saving)}" if b.saving else ""
            lines.append(
                f"    {b.file} bundle {b.number}: {kind}, {format_size(b.stored)} stored, "
                f"code objects {format_size(b.bytes)}{saving}"
            )
    return lines


def _torch_abi_lines(result: TorchAbiResult, *, verbose: bool) -> list[str]:
    """The ``torch ABI:`` line (what was checked against, the counts); with ``verbose``, every symbol
    needed from torch and every one left to the other libraries, demangled."""
    from buildkit.gate.demangle import demangle
    from buildkit.gate.torchabi import summary_line

    lines = [f"  torch ABI: {summary_line(result)}"]
    if verbose:
        missing = {m.symbol for m in result.missing}
        for need in result.needed:
            state = "MISSING" if need in missing else "found"
            lines.append(f"    {state:<7} {demangle(need.name)}  ({need.member})")
        for need in result.others:
            lines.append(f"    other   {demangle(need.name)}  ({need.member}: left to its other libraries)")
    return lines


def recipe_of(v: Verdict) -> str | None:
    """The recipe file the verdict's configuration came from, as given (None: flags)."""
    return v.config.identity.recipe if v.config.identity is not None else None


def gated_as(v: Verdict) -> str:
    """What the wheel was gated against, on one line: the job and recipe (or ``flags``), then the
    policy, ceilings, archs, ROCm pin, torch pin, exclusions and size budget."""
    c, ident = v.config, v.config.identity
    if ident is None:
        origin = "flags"
    else:
        origin = f"job {ident.job}"
        if ident.recipe is not None:
            origin += f" of {ident.recipe}"
        if ident.recipe_sha256 is not None:
            origin += f" (build sha256 {ident.recipe_sha256[:12]})"
    if c.policy is not None:
        policy = f"policy {v.target_policy.name if v.target_policy else c.policy}"
    elif v.target_policy is not None:
        policy = f"policy {v.target_policy.name} (the file name's)"
    else:
        policy = "no policy"
    parts = [policy]
    ceilings = v.gated_ceilings
    if ceilings:
        parts.append(" ".join(f"{prefix}<={value}" for prefix, value in ceilings.items()))
    archs = " ".join(c.archs)
    parts.append(f"archs {archs}{' (features matched)' if c.match_features else ''}" if archs else "no archs")
    if c.rocm is not None:
        parts.append(f"ROCm {c.rocm}" + (f" as {c.toolchain} packages it" if c.toolchain else ""))
    if c.torch is not None:
        parts.append(f"torch {c.torch}")
    if c.torch_abi is not None:
        parts.append(f"torch ABI of {c.torch_abi}")
    if c.torch_stable is not None:
        parts.append(f"torch stable ABI >={c.torch_stable}" + (f",<{c.torch_below}" if c.torch_below else ""))
    if c.device_target is not None:
        parts.append(f"device wheel of {c.device_target}")
    if c.exclude_globs:
        parts.append(f"{len(c.exclude_globs)} exclude glob(s)")
    if c.waivers:
        parts.append(f"{len(c.waivers)} waiver(s)")
    if c.required:
        parts.append(f"{len(c.required)} required member glob(s)")
    if c.size_warn is None and c.size_limit is None:
        parts.append("no size budget")
    else:
        warn = f"warn {format_size(c.size_warn)} " if c.size_warn is not None else ""
        limit = f"limit {format_size(c.size_limit)}" if c.size_limit is not None else "no limit"
        parts.append(f"size {warn}{limit}")
    return f"{origin}; {', '.join(parts)}"


def _counts(items: Iterable[str]) -> str:
    return ", ".join(f"{name} x{n}" for name, n in Counter(items).items())


def _gfx_summary(gfx: Sequence[GfxObject]) -> list[str]:
    """Totals per kind and per target id, then each (kind, targets) group, largest first."""
    kinds = _counts(sorted(g.kind for g in gfx))
    targets = _counts(sorted((t for g in gfx for t in g.targets), key=processor_sort_key))
    lines = [f"    {len(gfx)} objects ({kinds}): {targets or 'no targets'}"]
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for g in gfx:
        groups.setdefault((g.kind, g.targets), []).append(g.file)
    ranked = sorted(groups.items(), key=lambda item: -len(item[1]))  # stable: ties keep first appearance
    for (kind, ids), files in ranked[:GFX_GROUPS_MAX]:
        lines.append(f"    {len(files)} [{kind}]: {' '.join(ids) or 'none'}")
        lines += [f"      {file}" for file in files[:GFX_EXAMPLES]]
        if len(files) > GFX_EXAMPLES:
            lines.append(f"      ... {len(files) - GFX_EXAMPLES} more {GFX_MORE}")
    rest = ranked[GFX_GROUPS_MAX:]
    if rest:
        objects = sum(len(files) for _, files in rest)
        lines.append(f"    ... {len(rest)} more (kind, targets) group(s) of {objects} object(s) {GFX_MORE}")
    return lines


def _finding_lines(findings: Sequence[Finding], *, verbose: bool, recipe: str | None = None) -> list[str]:
    """Errors and warnings grouped by (severity, rule) in order of first appearance, then the
    waived findings grouped by rule (``WAIVED``, each with its waiver and reason)."""
    groups: dict[tuple[str, str], list[Finding]] = {}
    for f in sorted(findings, key=lambda f: f.waived is not None):  # stable: waived ones last
        groups.setdefault(("waived" if f.waived else f.severity, f.rule), []).append(f)
    lines: list[str] = []
    for (status, rule), group in groups.items():
        shown = len(group) if verbose else FINDINGS_SHOWN.get(status, len(group))
        lines += [_finding_line(f, recipe) for f in group[:shown]]
        if len(group) > shown:
            what = "waived finding" if status == "waived" else status
            lines.append(f"  ... and {len(group) - shown} more {rule} {what}(s) {FINDINGS_MORE}")
    return lines


def _finding_line(f: Finding, recipe: str | None = None) -> str:
    parts = (
        f"file {f.file}" if f.file and not _names_path(f.message, f.file) else "",
        f"library {f.library}" if f.library else "",
        f"{f.symbol_label} {f.symbol}" if f.symbol else "",
    )
    where = ", ".join(part for part in parts if part)
    status = "WAIVED" if f.waived is not None else f.severity.upper()
    line = f"  {status} [{f.rule}] {f.message}" + (f"  ({where})" if where else "")
    if f.waived is not None:
        line += f"  waived by {f.waived.position(recipe)}: {f.waived.reason}"
    return line


def _names_path(message: str, path: str) -> bool:
    """Whether ``message`` contains ``path`` as a whole path (not ``a/b.so`` inside ``a/b.so.1``)."""
    pattern = r"(?<![\w./-])" + re.escape(path) + r"(?![\w/-]|\.\w)"
    return re.search(pattern, message) is not None


def render_all(
    verdicts: Sequence[Verdict], failures: Sequence[ReadFailure] = (), *, verbose: bool = False
) -> str:
    parts = [render_human(v, verbose=verbose) for v in verdicts]
    parts += [f"{f.wheel}\n  verdict: UNREADABLE: {f.error}" for f in failures]
    failed = sum(not v.passed for v in verdicts)
    summary = f"{len(verdicts) - failed} passed, {failed} failed"
    if failures:
        summary += f", {len(failures)} unreadable"
    return "\n\n".join([*parts, summary])
