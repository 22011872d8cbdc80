"""Write wheels (zip files) from a dict of member name -> bytes, with valid dist-info files."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def write_wheel(
    path: Path,
    members: dict[str, bytes],
    *,
    tag: str | None = None,
    requires: tuple[str, ...] | list[str] = (),
    requires_python: str | None = None,
    compression: int = zipfile.ZIP_DEFLATED,
    fixed_time: bool = False,
    extras: tuple[str, ...] | list[str] = (),
) -> Path:
    """A valid wheel (WHEEL, METADATA, RECORD) at ``path``, which must be a wheel file name
    (``demo-1.0-cp311-cp311-linux_x86_64.whl``). ``tag`` defaults to the file name's own tag;
    ``fixed_time`` gives every member the same date and mode (byte-identical rebuilds)."""
    name, version, *tags = path.name[: -len(".whl")].split("-")
    tag = tag or "-".join(tags[-3:])
    dist_info = f"{name}-{version}.dist-info"
    files = dict(members)
    purelib = "true" if tag.endswith("-any") else "false"
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: {purelib}\nTag: {tag}\n"
    ).encode()
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    if requires_python:
        meta += f"Requires-Python: {requires_python}\n"
    meta += "".join(f"Provides-Extra: {e}\n" for e in extras)
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files[f"{dist_info}/METADATA"] = meta.encode()
    rows = []
    for member, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{member},sha256={digest},{len(data)}")
    rows.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(rows) + "\n").encode()
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for member, data in files.items():
            if fixed_time:
                info = zipfile.ZipInfo(member, date_time=(2024, 1, 1, 0, 0, 0))
                info.external_attr = 0o755 << 16
                info.compress_type = compression
                zf.writestr(info, data)
            else:
                zf.writestr(member, data)
    return path
