"""The inputs key of a job (everything its wheel and verdict are made from) and the up-to-date check
built on it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from buildkit import __version__, manifest
from buildkit.plan.models import Job
from buildkit.records import to_data


def tool_versions() -> dict[str, str | None]:
    """Versions of the host tools that shape a wheel or its verdict: cibuildwheel drives the build,
    auditwheel's policy data is the gate's (the auditwheel that repairs runs in the builder image,
    whose id is part of the key)."""
    versions: dict[str, str | None] = {}
    for name in ("cibuildwheel", "auditwheel"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def inputs_key(
    job: Job,
    image_id: str,
    source_digest: str,
    epoch: int,
    isolation: bool,
    *,
    recipe_sha256: str,
    gate: Mapping[str, Any],
    tools: Mapping[str, str | None],
    build_requirements: str | None = None,
) -> str:
    """Everything a job's wheel and its verdict are made from: equal keys, equal wheels judged by equal
    rules. ``build_requirements``: :func:`buildkit.building.requirements.request_key` (None with
    ``network: true``)."""
    payload = {
        "buildkit": __version__,
        "job": to_data(job),
        "image": image_id,
        "source": source_digest,
        "source_date_epoch": epoch,
        "isolation": isolation,
        "recipe_sha256": recipe_sha256,
        "gate": dict(gate),
        "tools": dict(tools),
        "build_requirements": build_requirements,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def up_to_date(dest: Path, key: str) -> Path | None:
    """The wheel in ``dest`` when its manifest records ``key`` and its bytes still match."""
    for wheel in sorted(dest.glob("*.whl")):
        if up_to_date_wheel(wheel, key):
            return wheel
    return None


def up_to_date_wheel(wheel: Path, key: str) -> bool:
    """``wheel``'s manifest records ``key`` and a passing verdict, and its bytes still match."""
    try:
        data = manifest.read(wheel)
    except (OSError, ValueError):
        return False
    return (
        data.get("inputs_key") == key
        and data.get("verdict", {}).get("passed") is True
        and data.get("wheel", {}).get("sha256") == manifest.sha256_file(wheel)
    )
