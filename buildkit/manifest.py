"""``<wheel>.manifest.json``: what a wheel was built from and the gate's verdict on it.

The claim that the gate passed on exactly these bytes (``publish`` checks it: :mod:`buildkit.publish.trust`).

Schema version 1 (keys sorted, UTF-8, trailing newline)::

    {"schema": "rocm-buildkit/manifest", "schema_version": 1,
     "wheel": {"filename", "sha256", "size"},
     "recipe": {"name", "file", "sha256", "build_sha256" (the recipe less publish: and smoke:,
         ``Recipe.build_sha256``; absent in manifests of older builds), "build_keys" (each top-level key
         build_sha256 covers -> the sha256 of its value, 16 hex, ``Recipe.build_keys``: what ``plan``
         names when the recipe changed since the build; absent in older manifests)}, "job": <to_data(Job)>,
     "image": {"profile", "tag", "id"}, "toolchain": {"hipcc": ..., "python": ..., ...},
     "archs": [...], "source": {...}, "source_date_epoch": int,
     "network": bool (the recipe's: the build container had the network),
     "build_requirements": null (network: true) or {"python", "platforms", "requested": [...],
         "files": [{"name", "version", "file", "sha256"}], "sha256", "lock"},
     "torch": null (no torch pin) or {"requirement": "torch==2.13.*", "index_url": str | null,
         "version", "file", "sha256"} (the torch wheel built against, from the lock; null: none locked),
     "compiler_cache": {"hits", "misses", "hit_rate"} | null (no cache, or no statistics),
     "host_isa": {"level": str | null (null: not x86_64), "flags_seen", "rewritten", "allowed"} | null
         (no launcher in the image): the ISA flags the compiles asked for and what the launcher did,
         sorted, each once (``recipe.sections.host_isa.summary``; absent in older manifests),
     "verdict": {"passed": bool, "overall_tag", "sym_tag", "findings": [...]},
     "gate": the job's gate configuration (``GateConfig.to_json`` without the recipe's path; absent in
         manifests of older builds): what ``publish`` runs the gate with again, once the signed
         attestation, which records the same, verifies (``publish --public-key``)}

``build_requirements`` is the lock of a hermetic build (:mod:`buildkit.building.requirements`),
also written beside the wheel (:func:`lock_path`). A refused wheel gets no manifest but a
``<wheel>.refused.json`` in the quarantine (:func:`refused_path`, :mod:`buildkit.building.quarantine`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from buildkit.fsutil import atomic_write

SCHEMA = "rocm-buildkit/manifest"
SCHEMA_VERSION = 1
SUFFIX = ".manifest.json"
#: the quarantine of refused wheels inside ``--out`` (a dot-folder: ``publish`` never reads it)
REFUSED_DIR = ".refused"
REFUSED_SCHEMA = "rocm-buildkit/refused"
_REFUSED_SUFFIX = ".refused.json"
LOCK_SUFFIX = ".requirements.lock"


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes (:func:`sha256_fd`)."""
    with path.open("rb", buffering=0) as fh:
        return sha256_fd(fh.fileno())


def sha256_fd(fd: int, chunk: int = 4 << 20) -> str:
    """The sha256 of an open file's bytes, read with ``os.pread`` (no seek state: other readers may
    share the descriptor) into one reused block (a 550 MB torch wheel costs no allocation per block)."""
    digest = hashlib.sha256()
    block = bytearray(chunk)
    view = memoryview(block)
    offset = 0
    while size := os.preadv(fd, [block], offset):
        digest.update(view[:size])
        offset += size
    return digest.hexdigest()


def manifest_path(wheel: Path) -> Path:
    return wheel.with_name(wheel.name + SUFFIX)


def lock_path(wheel: Path) -> Path:
    """The build requirements of a hermetic build, locked by sha256 (a pip requirements file)."""
    return wheel.with_name(wheel.name + LOCK_SUFFIX)


def refused_path(wheel: Path) -> Path:
    """The record of why the gate refused ``wheel`` (beside it in its quarantine folder)."""
    return wheel.with_name(wheel.name + _REFUSED_SUFFIX)


def render(data: Mapping[str, Any]) -> str:
    return (
        json.dumps({"schema": SCHEMA, "schema_version": SCHEMA_VERSION, **data}, indent=2, sort_keys=True)
        + "\n"
    )


def write(wheel: Path, data: Mapping[str, Any]) -> Path:
    """Write the manifest of ``wheel`` atomically (:func:`~buildkit.fsutil.atomic_write`)."""
    return atomic_write(manifest_path(wheel), render(data))


def read(wheel: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(manifest_path(wheel).read_text(encoding="utf-8"))
    return data
