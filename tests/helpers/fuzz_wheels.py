"""The fuzz target of ``check``'s readers: real seed wheels, mutations, and the one call that drives the
zip, ELF, offload-bundle and RECORD readers and the gate (what ``buildkit check WHEEL --json`` does).

Seeds (:func:`seed_wheels`): a gcc-built HIP library whose ``.hip_fatbin`` holds a plain bundle and
zlib and zstd compressed (CCOB) bundles of it; a wheel of ``.co``/``.hsaco`` code-object files; and,
when the corpus cache holds them, small real PyPI wheels (MarkupSafe, pyodbc: auditwheel-repaired).

Mutations (:func:`mutate`) work at three levels: the wheel file's bytes (the zip structure: local
headers, central directory, deflate streams), one member's bytes re-zipped with RECORD left as it was
or recomputed (so the ELF and bundle readers see the mutated bytes behind a consistent zip), and the
dist-info files (RECORD, WHEEL, METADATA). :func:`drive` runs the gate and renders both reports; the
only acceptable outcomes are a verdict or an ``unreadable`` failure (:class:`ReadFailure`) whose
message names the wheel's bytes: a member, an offset or a zip structure. Anything else raises.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from buildkit.gate.config import GateConfig
from buildkit.gate.options import rocm_pin
from buildkit.gate.report import render_all, to_json
from buildkit.judge import judge_wheels
from tests.helpers.offload_bundle import amdgpu_header, compressed_bundle, plain_bundle
from tests.helpers.shared_library import build_shared_library
from tests.helpers.wheel_zip import write_wheel

#: the mutation levels of :func:`mutate`
LEVELS = ("zip", "member", "member+record", "structure", "dist-info")
CORPUS_SEEDS = (
    "MarkupSafe-3.0.2-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "pyodbc-5.2.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
)
CONFIG = GateConfig(policy="manylinux_2_28", archs=("gfx90a", "gfx942"), **rocm_pin("6.4"))
#: how an unreadable verdict may name where the bad bytes are (besides a member's name)
_WHERE = re.compile(
    r"offset|byte|bytes|zip|central directory|header|truncat|member|entry|entries|RECORD|WHEEL|METADATA"
    r"|dist-info|bundle|section|segment|CCOB|crc|CRC|ELF|size|compress|inflate|deflate|encrypt|file name",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Seed:
    name: str  # the wheel's file name
    data: bytes  # the wheel's bytes


def _co(mach: int) -> bytes:
    return amdgpu_header(mach | 0x100) + b"\0" * 192


def seed_wheels(work: Path, corpus: Path | None = None) -> list[Seed]:
    """The seed wheels (built in ``work``; the corpus ones read from ``corpus`` when there)."""
    work.mkdir(parents=True, exist_ok=True)
    plain = plain_bundle(
        [
            ("host-x86_64-unknown-linux-gnu-", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", _co(0x3F)),
            ("hipv4-amdgcn-amd-amdhsa--gfx942", _co(0x4C)),
        ],
        align=64,
    )
    fatbin = b"".join(
        [
            plain,
            b"\0" * (-len(plain) % 64),
            compressed_bundle(plain, method="zlib"),
            b"\0" * 8,
            compressed_bundle(plain, method="zstd", version=3),
        ]
    )
    library = build_shared_library(work / "h.so", "int f(void){return 1;}\n", fatbin=fatbin).read_bytes()
    seeds = []
    hip = work / "demo-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    write_wheel(hip, {"demo/__init__.py": b"", "demo/_hip.cpython-312-x86_64-linux-gnu.so": library})
    seeds.append(Seed(hip.name, hip.read_bytes()))
    kernels = work / "kern-1.0-py3-none-manylinux_2_28_x86_64.whl"
    write_wheel(
        kernels,
        {
            "kern/co/k.co": plain,
            "kern/co/z.co": compressed_bundle(plain, method="zstd"),
            "kern/co/raw.hsaco": _co(0x3F),
        },
        compression=zipfile.ZIP_STORED,
    )
    seeds.append(Seed(kernels.name, kernels.read_bytes()))
    for name in CORPUS_SEEDS if corpus is not None else ():
        assert corpus is not None
        path = corpus / name
        if path.is_file() and path.stat().st_size <= 1 << 20:
            seeds.append(Seed(name, path.read_bytes()))
    return seeds


def _edit(data: bytes, edits: Sequence[tuple[int, bytes]], cut: int = 0) -> bytes:
    out = bytearray(data)
    for at, patch in edits:
        if not out:
            break
        at %= len(out)
        out[at : at + len(patch)] = patch
    if cut:
        out = out[: max(1, len(out) * (100 - cut) // 100)]
    return bytes(out)


def _record(members: dict[str, bytes], dist_info: str) -> bytes:
    rows = []
    for member, data in members.items():
        if member == f"{dist_info}/RECORD":
            continue
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{member},sha256={digest},{len(data)}")
    rows.append(f"{dist_info}/RECORD,,")
    return ("\n".join(rows) + "\n").encode()


def mutate(seed: Seed, level: str, pick: int, edits: Sequence[tuple[int, bytes]], cut: int = 0) -> bytes:
    """The bytes of ``seed`` mutated at ``level``: ``"zip"`` (the file's bytes), ``"member"`` (member
    number ``pick`` edited, RECORD as it was), ``"member+record"`` (RECORD recomputed), ``"structure"``
    (as ``"member+record"``, each edit within 96 bytes of a header: the ELF header, its program and
    section header tables, each offload bundle and CCOB header) or ``"dist-info"`` (RECORD, WHEEL or
    METADATA edited)."""
    if level == "zip":
        return _edit(seed.data, edits, cut)
    with zipfile.ZipFile(io.BytesIO(seed.data)) as zf:
        infos = zf.infolist()
        members = {i.filename: zf.read(i) for i in infos}
        kinds = {i.filename: i.compress_type for i in infos}
    names = list(members)
    dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/RECORD"))
    if level == "dist-info":
        targets = [n for n in names if n.startswith(dist_info + "/")]
    else:
        targets = [n for n in names if not n.startswith(dist_info + "/")] or names
    target = targets[pick % len(targets)]
    if level == "structure":  # each edit lands near a header: ELF, program/section headers, bundles
        anchors = _anchors(members[target])
        edits = [(anchors[at % len(anchors)] + (at >> 8) % 96, patch) for at, patch in edits]
        members[f"{dist_info}/RECORD"] = b""  # recomputed below
    members[target] = _edit(members[target], edits, cut)
    if level == "structure":
        members[f"{dist_info}/RECORD"] = _record(members, dist_info)
    if level == "member+record":
        members[f"{dist_info}/RECORD"] = _record(members, dist_info)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in members.items():
            zf.writestr(
                zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0)), data, compress_type=kinds[name]
            )
    return out.getvalue()


def _anchors(data: bytes) -> list[int]:
    """Where the headers of a member are: 0, an ELF's program and section header tables, and every
    offload bundle (``__CLANG_OFFLOAD_BUNDLE__``) and compressed bundle (``CCOB``) magic."""
    anchors = [0]
    if data[:4] == b"\x7fELF" and len(data) >= 64:
        anchors += [int.from_bytes(data[32:40], "little"), int.from_bytes(data[40:48], "little")]
    for magic in (b"__CLANG_OFFLOAD_BUNDLE__", b"CCOB"):
        anchors += [m.start() for m in re.finditer(re.escape(magic), data)]
    return [a for a in anchors if a < max(len(data), 1)] or [0]


class Unexplained(AssertionError):
    """An outcome the readers must never give: a traceback, or an unreadable verdict naming nothing."""


def drive(path: Path) -> str:
    """Gate the wheel at ``path`` as ``buildkit check --json`` and ``-v`` do; ``"verdict"`` or
    ``"unreadable"``. An exception other than the gate's own handling is the caller's crash to keep."""
    verdicts, failures = judge_wheels([path], CONFIG)
    render_all(verdicts, failures, verbose=True)
    json.dumps(to_json(verdicts, failures))
    if failures:
        [failure] = failures
        if not failure.error.strip() or not _WHERE.search(failure.error):
            raise Unexplained(f"an unreadable verdict that names no bytes: {failure.error!r}")
        return "unreadable"
    assert len(verdicts) == 1
    return "verdict"
