"""Small wheels with manifests for the publish tests: passing, failing, mismatched, missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from buildkit import manifest
from tests.helpers import wheel_zip

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
    return wheel_zip.write_wheel(path, members, requires_python=requires_python, requires=requires)


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
