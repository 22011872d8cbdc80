"""Rewrite a wheel's zip after it was written (tests/helpers/wheel_zip.py): add, replace or drop
members, keeping RECORD as it was (the tampering the integrity rules must catch) or rewriting it."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path


def record_row(member: str, data: bytes, algorithm: str = "sha256") -> str:
    digest = base64.urlsafe_b64encode(hashlib.new(algorithm, data).digest()).rstrip(b"=").decode()
    return f"{member},{algorithm}={digest},{len(data)}"


def read_members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def edit_wheel(
    path: Path,
    *,
    put: Mapping[str, bytes] | None = None,
    drop: Iterable[str] = (),
    rerecord: bool = False,
    out: Path | None = None,
) -> Path:
    """Members of ``put`` are added or replace the old bytes, ``drop`` ones removed. RECORD is kept
    byte for byte unless ``rerecord`` (then rewritten for the new contents, sha256)."""
    members = read_members(path)
    for name in drop:
        del members[name]
    members.update(put or {})
    if rerecord:
        record = next(n for n in members if n.endswith(".dist-info/RECORD"))
        rows = [record_row(n, d) for n, d in members.items() if n != record] + [f"{record},,"]
        members[record] = ("\n".join(rows) + "\n").encode()
    target = out or path
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return target
