"""The in-toto attestation beside a built wheel (``<wheel>.intoto.json``), the reading side: its DSSE
envelope format, the publisher's public key, and :func:`verify_attestation` (``publish --public-key``,
:mod:`buildkit.publish.trust`, and ``verify``). ``build`` writes and signs it
(:mod:`buildkit.building.provenance`, which says what the statement holds). A static index serves the
envelope that verified at publish beside the wheel (``<wheel>.provenance``): :func:`verify_published`
checks a downloaded wheel against it (``verify --index``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from buildkit import manifest as manifests
from buildkit import pyindex
from buildkit.errors import NotReproducible, UsageError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
SUFFIX = ".intoto.json"


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: ``DSSEv1 SP LEN(type) SP type SP LEN(body) SP body``."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def keyid(public_key: Ed25519PublicKey) -> str:
    # cryptography (~60 ms to import) is imported only when a build signs or verify checks
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return hashlib.sha256(public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)).hexdigest()


def load_public_key(path: Path) -> Ed25519PublicKey:
    # cryptography (~60 ms to import) is imported only when a build signs or verify checks
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        key = load_pem_public_key(path.read_bytes())
    except (OSError, ValueError, TypeError) as exc:
        raise UsageError(f"cannot read the public key {path}: {exc}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise UsageError(f"{path}: not an ed25519 public key")
    return key


def attestation_path(wheel: Path) -> Path:
    return wheel.with_name(wheel.name + SUFFIX)


# --------------------------------------------------------------------------- verification
@dataclass(frozen=True)
class AttestationCheck:
    wheel: str
    sha256: str
    keyid: str
    statement: dict[str, Any]
    envelope: bytes  # the DSSE envelope's bytes as read and verified (what a static index serves)


def verify_attestation(
    wheel: Path, public_key: Ed25519PublicKey, path: Path | None = None
) -> AttestationCheck:
    """Check the DSSE signature with ``public_key`` and that the statement's subject is ``wheel``.

    Raises :class:`NotReproducible` (exit 12) naming what failed: no signature, a signature that
    does not verify, a statement of another type, or a subject whose name/sha256 is not the wheel's.
    """
    path = path or attestation_path(wheel)
    payload_type, payload, signatures, envelope = _read_envelope(path)
    if payload_type != PAYLOAD_TYPE:
        raise NotReproducible(f"{path}: payloadType is {payload_type!r}, expected {PAYLOAD_TYPE!r}")
    if not signatures:
        raise NotReproducible(f"{path}: the attestation is unsigned (no BUILDKIT_SIGNING_KEY at build time)")
    wanted = keyid(public_key)
    _check_signatures(path, signatures, public_key, pae(payload_type, payload))
    stmt = _statement(path, payload)
    subjects = stmt.get("subject")
    if not isinstance(subjects, list):
        raise NotReproducible(f"{path}: the statement's subject is not a list")
    actual = manifests.sha256_file(wheel)
    named = []
    for subject in subjects:
        name = subject.get("name") if isinstance(subject, dict) else None
        digest = subject.get("digest") if isinstance(subject, dict) else None
        sha = digest.get("sha256") if isinstance(digest, dict) else None
        if name == wheel.name and sha == actual:
            return AttestationCheck(wheel.name, actual, wanted, stmt, envelope)
        named.append(f"{name} sha256:{sha}")
    raise NotReproducible(
        f"{wheel.name} (sha256:{actual}) is not the attested subject ({', '.join(named)}): the wheel was "
        "changed after it was built, or the attestation belongs to another wheel"
    )


def _check_signatures(
    path: Path, signatures: list[dict[str, Any]], public_key: Ed25519PublicKey, message: bytes
) -> None:
    """NotReproducible unless one of the envelope's signatures verifies ``message`` with the key."""
    # cryptography (~60 ms to import) is imported only when a build signs or verify checks
    from cryptography.exceptions import InvalidSignature

    for sig in signatures:
        value = sig.get("sig")
        if not isinstance(value, str):
            continue  # malformed: cannot verify (named below)
        try:
            public_key.verify(base64.b64decode(value, validate=True), message)
        except (InvalidSignature, ValueError):
            continue
        return
    ids = ", ".join(_describe_signature(s) for s in signatures)
    raise NotReproducible(
        f"{path}: no signature verifies with the given public key (keyid {keyid(public_key)}); the envelope "
        f"has {len(signatures)} signature(s): {ids}; the payload or signature was altered, or the key "
        "is another one"
    )


def _statement(path: Path, payload: bytes) -> dict[str, Any]:
    """The signed payload as an in-toto statement of our predicate type; NotReproducible otherwise."""
    try:
        stmt = json.loads(payload)
    except ValueError as exc:
        raise NotReproducible(f"{path}: the signed payload is not JSON ({exc})") from None
    if not isinstance(stmt, dict):
        raise NotReproducible(f"{path}: the signed payload is not an in-toto statement (a JSON object)")
    if stmt.get("_type") != STATEMENT_TYPE or stmt.get("predicateType") != PREDICATE_TYPE:
        raise NotReproducible(
            f"{path}: statement type {stmt.get('_type')!r} / predicate {stmt.get('predicateType')!r}, "
            f"expected {STATEMENT_TYPE} / {PREDICATE_TYPE}"
        )
    return stmt


#: the largest provenance file downloaded (an envelope is a few kB)
_MAX_PROVENANCE_BYTES = 1 << 20


def verify_published(
    wheel: Path, public_key: Ed25519PublicKey, index_url: str, client: pyindex.IndexClient | None = None
) -> AttestationCheck:
    """Check ``wheel`` against the provenance the index at ``index_url`` links from its project page (PEP
    740 ``data-provenance``), as :func:`verify_attestation` does. NotReproducible (exit 12) when the
    page, the wheel's entry or its provenance is missing or does not hold; IndexUnavailable (exit 13)."""
    try:
        project = parse_wheel_filename(wheel.name)[0]
    except InvalidWheelFilename as exc:
        raise UsageError(f"{wheel.name}: not a wheel file name ({exc})") from None
    if "://" not in index_url:  # a local index folder
        index_url = Path(index_url).absolute().as_uri()
    client = client or pyindex.IndexClient()
    page_url = pyindex.simple_page_url(index_url, project)
    shown = pyindex.redact(page_url)
    try:
        link = next((x for x in client.page(page_url).links if x.filename == wheel.name), None)
        if link is None:
            raise NotReproducible(f"{shown} does not list {wheel.name}: it was not published there")
        if link.provenance is None:
            raise NotReproducible(
                f"{shown} serves no provenance for {wheel.name} (no data-provenance): it was published "
                "without a verified attestation (publish --public-key K), or the index serves none"
            )
        with tempfile.TemporaryDirectory(prefix="buildkit-provenance-") as folder:
            path = Path(folder) / (wheel.name + ".provenance")
            client.download(link.provenance, path, max_bytes=_MAX_PROVENANCE_BYTES)
            try:
                return verify_attestation(wheel, public_key, path)
            except NotReproducible as exc:  # named by its URL, not the temporary copy
                where = pyindex.redact(link.provenance)
                raise NotReproducible(exc.message.replace(str(path), where)) from None
    except (pyindex.NotFound, pyindex.IndexRefused, pyindex.TooLarge) as exc:
        raise NotReproducible(f"cannot read the provenance of {wheel.name} from {shown}: {exc}") from None


def _read_envelope(path: Path) -> tuple[str, bytes, list[dict[str, Any]], bytes]:
    """payloadType, decoded payload, signatures and bytes of a DSSE envelope; NotReproducible when
    malformed."""
    if not path.is_file():
        raise NotReproducible(
            f"no attestation at {path}: `buildkit build` writes WHEEL.intoto.json next to each wheel it "
            "signs (BUILDKIT_SIGNING_KEY set); copy it along with the wheel or pass --attestation-file"
        )
    try:
        raw = path.read_bytes()
        env = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError) as exc:
        reason = f"{exc.__class__.__name__}: {exc}"
        raise NotReproducible(f"{path}: not a readable DSSE envelope ({reason})") from None
    shape = "a JSON object {payload, payloadType, signatures: [{keyid, sig}]}"
    if not isinstance(env, dict):
        raise NotReproducible(f"{path}: not a DSSE envelope: a JSON {type(env).__name__}, expected {shape}")
    payload_text, payload_type = env.get("payload"), env.get("payloadType")
    signatures = env.get("signatures", [])
    if not isinstance(payload_text, str) or not isinstance(payload_type, str):
        raise NotReproducible(
            f"{path}: not a DSSE envelope: payload and payloadType must be strings ({shape})"
        )
    if not isinstance(signatures, list) or not all(isinstance(s, dict) for s in signatures):
        raise NotReproducible(
            f"{path}: not a DSSE envelope: signatures must be a list of {{keyid, sig}} objects, "
            f"not {json.dumps(signatures)[:80]}"
        )
    try:
        payload = base64.b64decode(payload_text, validate=True)
    except ValueError as exc:
        raise NotReproducible(f"{path}: the payload is not base64 ({exc})") from None
    return payload_type, payload, signatures, raw


def _describe_signature(sig: Mapping[str, Any]) -> str:
    key = sig.get("keyid")
    who = f"keyid {key}" if isinstance(key, str) and key else "one without keyid"
    if not isinstance(sig.get("sig"), str):
        who += " (malformed: sig is not a base64 string)"
    return who
