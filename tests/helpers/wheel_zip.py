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
    tag: str = "cp311-cp311-manylinux_2_28_x86_64",
    requires: tuple[str, ...] = (),
    compression: int = zipfile.ZIP_DEFLATED,
) -> Path:
    """``path`` must be a valid wheel file name (``demo-1.0-cp311-cp311-linux_x86_64.whl``)."""
    name, version = path.name.split("-")[:2]
    dist_info = f"{name}-{version}.dist-info"
    files = dict(members)
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: false\nTag: {tag}\n"
    ).encode()
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
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
            zf.writestr(member, data)
    return path
