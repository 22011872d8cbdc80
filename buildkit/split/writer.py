"""Writing one output wheel of a split, deterministically: the same input gives the same bytes.

What makes the bytes repeatable: the members in a fixed order (the package's files sorted, then the
``.dist-info`` files sorted with ``RECORD`` last, as the wheel spec recommends), one timestamp for all
(1980-01-01 00:00, the zip format's first day: installers do not keep it), the input's compression
method and permission bits (``external_attr``: pip keeps the executable bit), zlib's default level, no
zip comment. The wheel is written to a temporary name in the split's staging folder."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

#: every member's timestamp: the zip format's first day (an installer does not keep it)
EPOCH = (1980, 1, 1, 0, 0, 0)
_REGULAR = 0o100644
_CHUNK = 1 << 20
#: the input's RECORD signatures: they sign the input's RECORD, not the output's, so they are dropped
SIGNATURES = ("RECORD.jws", "RECORD.p7s")


class Copied(NamedTuple):
    """A member taken from the input wheel, under its name in the output (``name``: a ``.data`` folder
    is renamed for a device wheel)."""

    name: str
    source: zipfile.ZipInfo


class Written(NamedTuple):
    """An output wheel as written: its files (name -> size) and its RECORD text."""

    path: Path
    files: Mapping[str, int]
    record: str


def _record_hash(digest: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _info(name: str, mode: int, compress_type: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, EPOCH)
    info.create_system = 3  # unix: the permission bits below are read
    info.external_attr = (mode & 0xFFFF) << 16
    if name.endswith("/"):
        info.external_attr |= 0x10  # MS-DOS directory bit, as zipfile writes it
    info.compress_type = compress_type
    return info


def _mode(source: zipfile.ZipInfo) -> int:
    """The input's permission bits (pip keeps the executable bit), as a regular file's (a folder's);
    none at all (a zip made on Windows) gives 0o644."""
    permissions = (source.external_attr >> 16) & 0o7777
    if source.filename.endswith("/"):
        return 0o040000 | (permissions or 0o755)
    return 0o100000 | (permissions or 0o644)


def write_wheel(
    dest: Path,
    source: zipfile.ZipFile,
    copied: Sequence[Copied],
    generated: Mapping[str, bytes],
    dist_info: str,
) -> Written:
    """Write the wheel ``dest``: ``copied`` from ``source``, ``generated`` from memory (names inside
    the wheel), then ``<dist_info>/RECORD``."""
    record_name = f"{dist_info}/RECORD"
    entries: list[tuple[str, Copied | bytes]] = [(c.name, c) for c in copied]
    entries += list(generated.items())
    inside = f"{dist_info}/"
    entries.sort(key=lambda e: (e[0].startswith(inside), e[0]))
    rows: list[tuple[str, str, str]] = []
    files: dict[str, int] = {}
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for name, what in entries:
            if isinstance(what, Copied):
                src = what.source
                method = (
                    src.compress_type
                    if src.compress_type in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
                    else zipfile.ZIP_DEFLATED
                )
                info = _info(name, _mode(src), method)
                if name.endswith("/"):
                    out.writestr(info, b"")
                    continue
                digest = hashlib.sha256()
                size = 0
                with (
                    source.open(src) as reader,
                    out.open(info, "w", force_zip64=src.file_size >= zipfile.ZIP64_LIMIT) as writer,
                ):
                    while chunk := reader.read(_CHUNK):
                        digest.update(chunk)
                        writer.write(chunk)
                        size += len(chunk)
            else:
                info = _info(name, _REGULAR, zipfile.ZIP_DEFLATED)
                out.writestr(info, what)
                digest, size = hashlib.sha256(what), len(what)
            rows.append((name, _record_hash(digest.digest()), str(size)))
            files[name] = size
        text = io.StringIO()
        writer_csv = csv.writer(text, lineterminator="\n")
        writer_csv.writerows(rows)
        writer_csv.writerow((record_name, "", ""))
        record = text.getvalue()
        out.writestr(_info(record_name, _REGULAR, zipfile.ZIP_DEFLATED), record.encode("utf-8"))
        files[record_name] = len(record.encode("utf-8"))
    with open(dest, "rb") as written:  # on disk before it is renamed into place
        os.fsync(written.fileno())
    return Written(dest, files, record)
