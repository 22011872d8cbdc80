"""Small wheels with manifests for the publish tests: passing, failing, mismatched, missing."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path
from typing import Any

from buildkit import manifest

PASSING: dict[str, Any] = {"passed": True, "overall_tag": "manylinux_2_28_x86_64", "findings": []}
FAILING: dict[str, Any] = {
    "passed": False,
    "overall_tag": "linux_x86_64",
    "findings": [
        {"rule": "ceiling", "severity": "error", "message": "demo/_x.so needs GLIBC_2.38 > ceiling 2.28"}
    ],
}


def write_wheel(
    path: Path,
    members: dict[str, bytes],
    *,
    requires_python: str | None = None,
    requires: tuple[str, ...] = (),
) -> Path:
    """A valid wheel (WHEEL, METADATA, RECORD) named ``path`` (``name-version-py-abi-plat.whl``)."""
    name, version, *tags = path.name[: -len(".whl")].split("-")
    dist_info = f"{name}-{version}.dist-info"
    files = dict(members)
    tag = "-".join(tags[-3:])
    purelib = "true" if tag.endswith("-any") else "false"
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: {purelib}\nTag: {tag}\n".encode()
    )
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    if requires_python:
        meta += f"Requires-Python: {requires_python}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files[f"{dist_info}/METADATA"] = meta.encode()
    rows = []
    for member, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{member},sha256={digest},{len(data)}")
    rows.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(rows) + "\n").encode()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for member, data in files.items():
            zf.writestr(member, data)
    return path


def make_wheel(
    folder: Path,
    filename: str = "demo_pkg-1.0-py3-none-any.whl",
    *,
    payload: bytes = b"VALUE = 1\n",
    verdict: dict[str, Any] | None = None,
    manifest_sha256: str | None = None,
    with_manifest: bool = True,
    requires_python: str | None = None,
) -> Path:
    """Write a wheel under ``folder`` and (unless ``with_manifest=False``) its manifest.

    ``verdict`` defaults to a passing one; ``manifest_sha256`` overrides the recorded hash (mismatch).
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / filename
    module = filename.split("-")[0]
    write_wheel(path, {f"{module}/__init__.py": payload}, requires_python=requires_python)
    if with_manifest:
        manifest.write(
            path,
            {
                "wheel": {
                    "filename": path.name,
                    "sha256": manifest_sha256 or manifest.sha256_file(path),
                    "size": path.stat().st_size,
                },
                "verdict": PASSING if verdict is None else verdict,
            },
        )
    return path
