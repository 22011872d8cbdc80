"""Provenance: in-toto statements, DSSE signing with a local ed25519 key, and their verification.

Keys are generated per test with the ``cryptography`` package; signatures are also checked with
the ``openssl`` command (an independent ed25519 implementation) so that PAE and signing are not
only checked against themselves.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from buildkit import attestation
from buildkit.building import provenance as prov
from buildkit.errors import NotReproducible, UsageError
from buildkit.manifest import sha256_file
from tests.helpers.wheel_zip import write_wheel

ROOT = Path(__file__).resolve().parents[2]
WHEEL = "demo-1.0-cp313-cp313-manylinux_2_41_x86_64.whl"


def _key_files(tmp: Path, name: str = "key") -> tuple[Ed25519PrivateKey, Path, Path]:
    key = Ed25519PrivateKey.generate()
    private = tmp / f"{name}.pem"
    public = tmp / f"{name}.pub"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return key, private, public


def _wheel(tmp: Path) -> Path:
    return write_wheel(tmp / WHEEL, {"demo/__init__.py": b"x = 1\n", "demo/_ext.so": b"\x7fELF" + bytes(60)})


def _manifest(wheel: Path) -> dict[str, Any]:
    return {
        "wheel": {"filename": wheel.name, "sha256": sha256_file(wheel), "size": wheel.stat().st_size},
        "recipe": {"name": "demo", "file": "demo.yaml", "sha256": "ab" * 32},
        "job": {"id": "cp313-rocm5.7", "python": "3.13", "rocm": "5.7"},
        "image": {
            "profile": "debian-rocm",
            "tag": "rocm-buildkit/debian-rocm:0123",
            "id": "sha256:" + "cd" * 32,
        },
        "source": {"path": "../csrc", "commit": "ef" * 20},
        "toolchain": {"hipcc": "HIP version: 5.7.31921"},
        "source_date_epoch": 315532800,
        "inputs_key": "12" * 32,
    }


def _rewrite_member(src: Path, dest: Path, member: str, data: bytes) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info, data if info.filename == member else zin.read(info))


# --------------------------------------------------------------------------- DSSE / statement
def test_pae_matches_the_dsse_specification_example() -> None:
    # the example of the DSSE v1 protocol document
    assert (
        attestation.pae("http://example.com/HelloWorld", b"hello world")
        == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )
    assert attestation.pae("", b"") == b"DSSEv1 0  0 "


def test_statement_is_in_toto_v1_with_slsa_provenance(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    data = _manifest(wheel)
    stmt = prov.statement(wheel.name, data["wheel"]["sha256"], data)
    assert stmt["_type"] == "https://in-toto.io/Statement/v1"
    assert stmt["predicateType"] == "https://slsa.dev/provenance/v1"
    assert stmt["subject"] == [{"name": wheel.name, "digest": {"sha256": sha256_file(wheel)}}]
    build = stmt["predicate"]["buildDefinition"]
    assert build["externalParameters"]["recipe"]["digest"] == {"sha256": "ab" * 32}
    assert build["externalParameters"]["job"]["id"] == "cp313-rocm5.7"
    deps = {d["uri"]: d["digest"] for d in build["resolvedDependencies"]}
    assert deps["../csrc"] == {"gitCommit": "ef" * 20}
    assert deps["docker-image:rocm-buildkit/debian-rocm:0123"] == {"sha256": "cd" * 32}
    assert stmt["predicate"]["runDetails"]["builder"]["id"] == prov.BUILDER_ID


@pytest.mark.parametrize(
    ("source", "uri"),
    [
        ({"sdist": "cupy==13.6.0", "sha256": "a1" * 32}, "pkg:pypi/cupy@13.6.0"),
        (
            {"url": "https://example.org/x-1.0.tar.gz", "sha256": "a1" * 32},
            "https://example.org/x-1.0.tar.gz",
        ),
    ],
)
def test_a_downloaded_source_is_a_dependency_by_its_sha256(
    tmp_path: Path, source: dict[str, str], uri: str
) -> None:
    wheel = _wheel(tmp_path)
    data = {**_manifest(wheel), "source": source}
    build = prov.statement(wheel.name, data["wheel"]["sha256"], data)["predicate"]["buildDefinition"]
    deps = {d["uri"]: d["digest"] for d in build["resolvedDependencies"]}
    assert deps[uri] == {"sha256": "a1" * 32}
    assert len(deps) == 2  # the archive and the image


def test_signed_attestation_verifies_and_openssl_agrees(tmp_path: Path) -> None:
    key, _private, public = _key_files(tmp_path)
    wheel = _wheel(tmp_path)
    att = prov.write_attestation(wheel, _manifest(wheel), key)
    assert att.signed and att.path == tmp_path / (WHEEL + ".intoto.json")
    check = attestation.verify_attestation(wheel, attestation.load_public_key(public))
    assert check.sha256 == sha256_file(wheel)
    assert check.keyid == att.keyid

    envelope = json.loads(att.path.read_text())
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed for the independent signature check")
    payload = base64.b64decode(envelope["payload"])
    (tmp_path / "pae.bin").write_bytes(attestation.pae(envelope["payloadType"], payload))
    (tmp_path / "sig.bin").write_bytes(base64.b64decode(envelope["signatures"][0]["sig"]))
    args = ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", str(public), "-rawin"]
    ok = subprocess.run([*args, "-in", "pae.bin", "-sigfile", "sig.bin"], cwd=tmp_path, capture_output=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    (tmp_path / "pae.bin").write_bytes(attestation.pae(envelope["payloadType"], payload + b" "))
    bad = subprocess.run([*args, "-in", "pae.bin", "-sigfile", "sig.bin"], cwd=tmp_path, capture_output=True)
    assert bad.returncode != 0


def test_tampered_wheel_fails_verification(tmp_path: Path) -> None:
    key, _private, public = _key_files(tmp_path)
    wheel = _wheel(tmp_path)
    prov.write_attestation(wheel, _manifest(wheel), key)
    original = tmp_path / "orig.whl"
    shutil.copy(wheel, original)
    _rewrite_member(original, wheel, "demo/__init__.py", b"x = 2\n")
    with pytest.raises(NotReproducible, match="is not the attested subject"):
        attestation.verify_attestation(wheel, attestation.load_public_key(public))


def test_tampered_payload_fails_verification(tmp_path: Path) -> None:
    key, _private, public = _key_files(tmp_path)
    wheel = _wheel(tmp_path)
    att = prov.write_attestation(wheel, _manifest(wheel), key)
    envelope = json.loads(att.path.read_text())
    stmt = json.loads(base64.b64decode(envelope["payload"]))
    stmt["predicate"]["buildDefinition"]["externalParameters"]["job"]["rocm"] = "7.2"
    envelope["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    att.path.write_text(json.dumps(envelope))
    with pytest.raises(NotReproducible, match="no signature verifies"):
        attestation.verify_attestation(wheel, attestation.load_public_key(public))


def test_other_key_unsigned_and_wrong_type_fail(tmp_path: Path) -> None:
    key, _private, _public = _key_files(tmp_path)
    _other, _p, other_public = _key_files(tmp_path, "other")
    wheel = _wheel(tmp_path)
    att = prov.write_attestation(wheel, _manifest(wheel), key)
    with pytest.raises(NotReproducible, match="no signature verifies"):
        attestation.verify_attestation(wheel, attestation.load_public_key(other_public))

    unsigned = prov.write_attestation(wheel, _manifest(wheel), None)
    assert not unsigned.signed and unsigned.keyid is None
    assert json.loads(unsigned.path.read_text())["signatures"] == []
    with pytest.raises(NotReproducible, match="unsigned"):
        attestation.verify_attestation(wheel, attestation.load_public_key(other_public))

    envelope = json.loads(prov.write_attestation(wheel, _manifest(wheel), key).path.read_text())
    envelope["payloadType"] = "text/plain"
    att.path.write_text(json.dumps(envelope))
    with pytest.raises(NotReproducible, match="payloadType"):
        attestation.verify_attestation(wheel, attestation.load_public_key(other_public))


def test_renamed_wheel_is_not_the_subject(tmp_path: Path) -> None:
    key, _private, public = _key_files(tmp_path)
    wheel = _wheel(tmp_path)
    att = prov.write_attestation(wheel, _manifest(wheel), key)
    renamed = tmp_path / "demo-1.0-cp313-cp313-manylinux_2_28_x86_64.whl"
    shutil.copy(wheel, renamed)
    with pytest.raises(NotReproducible, match="not the attested subject"):
        attestation.verify_attestation(renamed, attestation.load_public_key(public), att.path)


# --------------------------------------------------------------------------- keys
def test_signing_key_from_environment(tmp_path: Path) -> None:
    key, private, _public = _key_files(tmp_path)
    assert prov.signing_key({}) is None
    loaded = prov.signing_key({"BUILDKIT_SIGNING_KEY": str(private)})
    assert loaded is not None and attestation.keyid(loaded.public_key()) == attestation.keyid(
        key.public_key()
    )
    with pytest.raises(UsageError, match="cannot read the signing key"):
        prov.signing_key({"BUILDKIT_SIGNING_KEY": str(tmp_path / "missing.pem")})
    ec_key = tmp_path / "ec.pem"
    ec_key.write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    with pytest.raises(UsageError, match="not an ed25519 private key"):
        prov.signing_key({"BUILDKIT_SIGNING_KEY": str(ec_key)})


# --------------------------------------------------------------------------- manifest inputs
def test_parse_environment_listing() -> None:
    text = (
        '--- pip\n[{"name": "setuptools", "version": "80.9.0"}, {"name": "Build", "version": "1.2"}]\n'
        "--- system\nhipcc=5.7.1-3\nbase-files=13.8\n\nhipcc=5.7.1-3\n"
    )
    parsed = prov.parse_environment_listing(text)
    assert parsed["python_packages"] == [
        {"name": "Build", "version": "1.2"},
        {"name": "setuptools", "version": "80.9.0"},
    ]
    assert parsed["system_packages"] == ["base-files=13.8", "hipcc=5.7.1-3"]


def test_build_backend_reads_pyproject_and_the_wheel_generator(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=77", "wheel"]\nbuild-backend = "setuptools.build_meta"\n'
    )
    wheel = _wheel(tmp_path)
    info = prov.build_backend(tmp_path / "src", wheel, isolation=True)
    assert info == {
        "isolation": True,
        "requires": ["setuptools>=77", "wheel"],
        "build_backend": "setuptools.build_meta",
        "generator": "tests",  # tests/helpers/wheel_zip.py writes "Generator: tests"
    }


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)  # this tree's buildkit


def test_cli_verify_attestation_exit_codes(tmp_path: Path) -> None:
    key, _private, public = _key_files(tmp_path)
    wheel = _wheel(tmp_path)
    prov.write_attestation(wheel, _manifest(wheel), key)
    cmd = [
        sys.executable,
        "-m",
        "buildkit",
        "verify",
        str(wheel),
        "--attestation",
        "--public-key",
        str(public),
    ]
    ok = _run(cmd)
    assert ok.returncode == 0, ok.stderr
    assert "attestation verified" in ok.stdout
    _rewrite_member(wheel, tmp_path / "t.whl", "demo/_ext.so", b"\x7fELF" + bytes(61))
    shutil.move(tmp_path / "t.whl", wheel)
    bad = _run(cmd)
    assert bad.returncode == 12, bad.stdout + bad.stderr
    assert "not the attested subject" in bad.stderr and "Traceback" not in bad.stderr
    missing_key = _run(cmd[:-2])
    assert missing_key.returncode == 2 and "--public-key" in missing_key.stderr


# --------------------------------------------------------------------------- malformed attestations
def _signed(tmp_path: Path) -> tuple[Path, Path, dict[str, Any]]:
    key, _private, public = _key_files(tmp_path)
    wheel = _wheel(tmp_path)
    att = prov.write_attestation(wheel, _manifest(wheel), key)
    return wheel, public, json.loads(att.path.read_text())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"signatures": "x"}, "signatures must be a list of {keyid, sig} objects"),
        ({"signatures": [1]}, "signatures must be a list of {keyid, sig} objects"),
        ({"signatures": [{"sig": 5}]}, "signature(s): one without keyid (malformed: sig is not a base64"),
        ({"signatures": [{"keyid": "k1", "sig": ["x"]}]}, "keyid k1 (malformed"),
        ({"payload": 5}, "payload and payloadType must be strings"),
        ({"payload": "%%%"}, "the payload is not base64"),
    ],
)
def test_malformed_envelope_is_not_reproducible(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    wheel, public, envelope = _signed(tmp_path)
    attestation.attestation_path(wheel).write_text(json.dumps({**envelope, **change}))
    with pytest.raises(NotReproducible) as info:
        attestation.verify_attestation(wheel, attestation.load_public_key(public))
    assert message in str(info.value)
    assert "None" not in str(info.value)


def test_envelope_that_is_not_an_object_and_statement_shapes(tmp_path: Path) -> None:
    key, _private, public = _key_files(tmp_path)
    wheel = _wheel(tmp_path)
    path = attestation.attestation_path(wheel)
    path.write_text("[]")
    with pytest.raises(NotReproducible, match="not a DSSE envelope: a JSON list"):
        attestation.verify_attestation(wheel, attestation.load_public_key(public))
    # a correctly signed payload whose statement has the wrong shapes: no AttributeError either
    head = {"_type": attestation.STATEMENT_TYPE, "predicateType": attestation.PREDICATE_TYPE}
    cases: list[tuple[Any, str]] = [
        ([1], "not an in-toto statement"),
        ({**head, "subject": "x"}, "subject is not a list"),
        (
            {**head, "subject": [1, {"digest": 2}]},
            "is not the attested subject (None sha256:None, None sha256:None)",
        ),
    ]
    for stmt, message in cases:
        path.write_text(json.dumps(prov.envelope(stmt, key)))
        with pytest.raises(NotReproducible, match=re.escape(message)):
            attestation.verify_attestation(wheel, attestation.load_public_key(public))


def test_cli_malformed_attestation_exits_12(tmp_path: Path) -> None:
    wheel, public, envelope = _signed(tmp_path)
    cmd = [
        sys.executable,
        "-m",
        "buildkit",
        "verify",
        str(wheel),
        "--attestation",
        "--public-key",
        str(public),
    ]
    for signatures in ("x", [1], [{"sig": 5}]):
        attestation.attestation_path(wheel).write_text(json.dumps({**envelope, "signatures": signatures}))
        proc = _run(cmd)
        assert proc.returncode == 12, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr and "signatures by None" not in proc.stderr


def test_missing_attestation_says_where_it_was_looked_for(tmp_path: Path) -> None:
    _key, _private, public = _key_files(tmp_path)
    wheel = _wheel(tmp_path)
    with pytest.raises(NotReproducible) as info:
        attestation.verify_attestation(wheel, attestation.load_public_key(public))
    text = str(info.value)
    assert f"no attestation at {attestation.attestation_path(wheel)}" in text
    assert "--attestation-file" in text and "Errno" not in text
