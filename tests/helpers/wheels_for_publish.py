"""Small wheels with manifests for the publish tests: passing, failing, mismatched, missing.

``publish`` runs the gate again with a configuration it trusts (:mod:`buildkit.publish.trust`): these
manifests record the gate configuration of a plain ``buildkit check`` and come with an attestation
signed by :data:`KEY`, a fixed test key whose public half :func:`public_key_file` writes. A test
that publishes names it (``publish(..., public_key=...)``, ``--public-key`` or ``BUILDKIT_PUBLISH_KEY``:
:func:`trust_test_key` sets the variable).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from buildkit import manifest
from buildkit.building.provenance import write_attestation
from buildkit.gate.config import GateConfig, gate_key
from buildkit.records import to_data
from tests.helpers import wheel_zip

#: the builds' signing key in these tests (fixed bytes: the same key in every process)
KEY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"rocm-buildkit publish tests").digest())
#: another key: what a forger signs with
OTHER_KEY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"someone else").digest())
#: the gate configuration of ``buildkit check WHEEL`` with no flags, as a manifest records it
PLAIN_GATE: dict[str, Any] = gate_key(GateConfig())


def public_key_file(folder: Path, key: Ed25519PrivateKey = KEY) -> Path:
    """The PEM public key of ``key`` in ``folder`` (what the publisher names with --public-key)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "publisher.pub.pem"
    path.write_bytes(key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    return path


def private_key_file(folder: Path, key: Ed25519PrivateKey = KEY) -> Path:
    """``key`` as the PEM file ``BUILDKIT_SIGNING_KEY`` names (what a build signs with)."""
    from cryptography.hazmat.primitives.serialization import NoEncryption, PrivateFormat

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "builder.key.pem"
    path.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    return path


def signing_environment(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Builds sign with :data:`KEY` (``BUILDKIT_SIGNING_KEY``) and publish trusts it
    (``BUILDKIT_PUBLISH_KEY``), for this process and the commands it runs."""
    monkeypatch.setenv("BUILDKIT_SIGNING_KEY", str(private_key_file(folder)))
    monkeypatch.setenv("BUILDKIT_PUBLISH_KEY", str(public_key_file(folder)))


def trust_test_key(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Path:
    """``BUILDKIT_PUBLISH_KEY`` names :data:`KEY`'s public half (for the test and its subprocesses)."""
    path = public_key_file(folder)
    monkeypatch.setenv("BUILDKIT_PUBLISH_KEY", str(path))
    return path


def sign(wheel: Path, key: Ed25519PrivateKey | None = KEY) -> Path:
    """(Re-)write the attestation of ``wheel`` from its manifest as it is now, signed by ``key``
    (None: unsigned), as ``build`` does."""
    return write_attestation(wheel, manifest.read(wheel), key).path


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
    gate: dict[str, Any] | None = None,
    key: Ed25519PrivateKey | None = KEY,
) -> Path:
    """Write a wheel under ``folder`` and (unless ``with_manifest=False``) its manifest, with the
    gate configuration ``gate`` (default :data:`PLAIN_GATE`) and an attestation signed by ``key``
    (None: unsigned).

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
                "gate": PLAIN_GATE if gate is None else gate,
            },
        )
        sign(path, key)
    return path


#: a C++ library that needs ``std::random_device::_M_getentropy() const@GLIBCXX_3.4.25``: above
#: manylinux_2_28's GLIBCXX ceiling (3.4.24)
GLIBCXX_3_4_25_SOURCE = """\
#include <random>
extern "C" double entropy_of_device() { std::random_device rd; return rd.entropy(); }
"""
PLAIN_SOURCE = "int answer(void) { return 42; }\n"


def hip_library(out: Path, *, archs: tuple[str, ...] = ("gfx90a",), source: str = PLAIN_SOURCE) -> Path:
    """A real x86_64 shared library built by the host's gcc/g++ with a ``.hip_fatbin`` holding one
    offload bundle with a code object per arch (the AMDGPU ELF header of each processor)."""
    from buildkit.targets import MACH_NAMES, parse_target_id
    from tests.helpers.offload_bundle import amdgpu_header, plain_bundle
    from tests.helpers.shared_library import build_shared_library

    entries = [("host-x86_64-unknown-linux-gnu-", b"")]
    for arch in archs:
        processor = parse_target_id(arch).name
        mach = next(m for m, n in MACH_NAMES.items() if n == processor)
        entries.append((f"hipv4-amdgcn-amd-amdhsa--{arch}", amdgpu_header(mach | 0x100) + b"\0" * 64))
    cplusplus = "#include" in source
    return build_shared_library(out, source, fatbin=plain_bundle(entries), cplusplus=cplusplus)


def job_wheel(
    folder: Path,
    recipe: Path,
    job_id: str,
    *,
    source: str = PLAIN_SOURCE,
    verdict: dict[str, Any] | None = None,
    key: Ed25519PrivateKey | None = KEY,
) -> Path:
    """The wheel ``build`` makes for job ``job_id`` of ``recipe`` (name, version, tags; a HIP library
    for the job's archs compiled from ``source``) and the manifest ``build`` writes (recipe, job, the
    job's gate configuration, the verdict: a passing one by default, whatever the gate says), signed
    by ``key``."""
    from buildkit.plan.expansion import expand
    from buildkit.recipe import load_recipe

    loaded = load_recipe(recipe)
    job = expand(loaded).job(job_id)
    name = loaded.name.replace("-", "_")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{job.version}-{job.cp_tag}-{job.cp_tag}-{job.platform_tag}.whl"
    library = hip_library(
        folder / ".build" / "lib.so", archs=tuple(str(t) for t in job.archs.kept), source=source
    )
    member = f"{name}/_ext.{job.cp_tag.replace('cp', 'cpython-')}-x86_64-linux-gnu.so"
    write_wheel(path, {f"{name}/__init__.py": b"", member: library.read_bytes()})
    manifest.write(
        path,
        {
            "wheel": {
                "filename": path.name,
                "sha256": manifest.sha256_file(path),
                "size": path.stat().st_size,
            },
            "recipe": loaded.record(),
            "job": to_data(job),
            "verdict": PASSING if verdict is None else verdict,
            "gate": gate_key(GateConfig.from_job(job, loaded)),
        },
    )
    sign(path, key)
    return path


#: a recipe of one job (cp312-rocm6.4, manylinux_2_28, gfx90a) publishing to a directory
DEMO_RECIPE = """\
name: demo
source:
  path: .
version:
  base: "1.0"
python: ["3.12"]
rocm: ["6.4"]
archs:
  list: [gfx90a]
manylinux:
  policy: manylinux_2_28
image: manylinux_2_28-rocm
publish:
  directory: site/index
"""


def forge_three_key_manifest(wheel: Path) -> None:
    """The issue's forgery: a three-key JSON claiming a pass for the wheel's real sha256, no signature."""
    for companion in wheel.parent.glob(wheel.name + ".*"):
        companion.unlink()
    forged = {
        "schema": "rocm-buildkit/manifest",
        "verdict": {"passed": True, "findings": []},
        "wheel": {"filename": wheel.name, "sha256": manifest.sha256_file(wheel)},
    }
    manifest.manifest_path(wheel).write_text(json.dumps(forged))
