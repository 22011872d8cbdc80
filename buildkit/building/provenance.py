"""Provenance of a built wheel: the inputs listed in its manifest, and an in-toto attestation.

What is captured (``manifest["provenance"]``):

* ``build_environment``: read once per builder image *id* and interpreter (cached under
  ``$XDG_CACHE_HOME/rocm-buildkit/build-env/``): ``python_packages`` (``pip list`` of the job's
  interpreter) and ``system_packages`` (``dpkg-query`` or ``rpm -qa``, as ``name=version``).
* ``build_backend``: the source's declared ``[build-system] requires`` / ``build-backend`` and, when
  the build ran in an isolated environment, the backend that actually wrote the wheel as recorded
  in the wheel's own ``WHEEL`` file (``Generator: setuptools (80.9.0)``). The other packages of
  that isolated environment are *not* captured: ``build`` deletes the environment inside the
  container before cibuildwheel returns.
* ``build_isolation``; ``attestation``: the file name, ``signed`` and the signer's ``keyid``.

The statement signs the recipe, the job, the wheel (subject: name + sha256) and the job's gate
configuration (``internalParameters.gate``): ``publish --public-key`` runs the gate with that
configuration only once this signature verifies (:mod:`buildkit.publish.trust`).

The attestation ``<wheel>.intoto.json`` is a DSSE envelope (payloadType
``application/vnd.in-toto+json``) around an in-toto Statement v1 with an SLSA provenance v1 predicate;
unsigned without ``BUILDKIT_SIGNING_KEY`` (empty ``signatures``; the manifest says ``signed: false``).
Sigstore keyless signing (Fulcio + Rekor) needs network access to those services and is not done here.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import sys
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from buildkit import __version__
from buildkit import manifest as manifests
from buildkit.attestation import PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_TYPE, attestation_path, keyid, pae
from buildkit.errors import BuildFailed, UsageError
from buildkit.fsutil import atomic_write, cache_home

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

BUILD_TYPE = "https://github.com/rocm-buildkit/rocm-buildkit/buildtypes/cibuildwheel/v1"
BUILDER_ID = "https://github.com/rocm-buildkit/rocm-buildkit/builder/buildkit-build"
SIGNING_KEY_ENV = "BUILDKIT_SIGNING_KEY"
#: the default build interpreter (the Debian builder's only one); a job's own is
#: ``build.toolchain.job_interpreter(job)`` (``/opt/python/cp312-cp312/bin/python`` for a cp312 job)
BUILDER_PYTHON = "/opt/python/cp313-cp313/bin/python"


def environment_script(interpreter: str = BUILDER_PYTHON) -> str:
    """The probe's shell script: ``pip list`` of ``interpreter``, then the distribution packages."""
    python = shlex.quote(interpreter)
    return (
        f"echo '--- pip'; {python} -m pip list --format json --disable-pip-version-check 2>/dev/null;"
        "echo '--- system';"
        "if command -v dpkg-query >/dev/null; then dpkg-query -W -f '${Package}=${Version}\\n';"
        "elif command -v rpm >/dev/null; then rpm -qa --qf '%{NAME}=%{VERSION}-%{RELEASE}\\n'; fi"
    )


# --------------------------------------------------------------------------- build environment
def cache_dir() -> Path:
    return cache_home() / "build-env"


def parse_environment_listing(text: str) -> dict[str, Any]:
    """The output of the probe script as ``{"python_packages": [...], "system_packages": [...]}``."""
    pip_part, _, system_part = text.partition("--- system")
    pip_json = pip_part.replace("--- pip", "", 1).strip()
    try:
        packages = json.loads(pip_json) if pip_json else []
    except json.JSONDecodeError:
        packages = []
    python_packages = sorted(
        ({"name": str(p["name"]), "version": str(p["version"])} for p in packages),
        key=lambda p: p["name"].lower(),
    )
    system = sorted({line.strip() for line in system_part.splitlines() if "=" in line})
    return {"python_packages": python_packages, "system_packages": system}


def build_environment(
    client: Any,
    image_id: str,
    image_tag: str,
    interpreter: str = BUILDER_PYTHON,
    run_id: str | None = None,
) -> dict[str, Any]:
    """Packages of the builder image as seen by ``interpreter`` (cached by image id and interpreter:
    an image id names its exact content); ``run_id``: the build the probe container belongs to."""
    safe = image_id.replace(":", "_").replace("/", "_")
    home = Path(interpreter).parent.parent.name or "python"  # /opt/python/cp312-cp312/bin/python
    cached = cache_dir() / f"{safe}--{home}.json"
    if cached.is_file():
        try:
            data: dict[str, Any] = json.loads(cached.read_text(encoding="utf-8"))
            if data.get("interpreter") == interpreter:
                return data
        except (OSError, json.JSONDecodeError):
            pass
    raw = _probe(client, image_tag, image_id, interpreter, run_id)
    data = {"image_id": image_id, "interpreter": interpreter, **parse_environment_listing(raw.decode())}
    cached.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(cached, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


def _probe(
    client: Any, image_tag: str, image_id: str, interpreter: str = BUILDER_PYTHON, run_id: str | None = None
) -> bytes:
    """Run the listing script in a throwaway container, removed in every case (Ctrl-C too)."""
    # imported here for start-up time: checking an attestation (`buildkit verify`) needs no Docker SDK
    from buildkit.docker_engine import throwaway

    script = ["sh", "-c", environment_script(interpreter)]
    with throwaway(client, image_tag, script, purpose="provenance", run_id=run_id) as box:
        done = box.run()
    if done.exit_code != 0:
        err = done.stderr.decode(errors="replace").strip()
        code = done.exit_code
        raise BuildFailed(
            f"listing the packages of the builder image {image_tag} failed (exit {code}): {err[-2000:]}"
        )
    return done.stdout


def build_backend(source: Path, wheel: Path, isolation: bool) -> dict[str, Any]:
    """Declared build requirements of the source and the generator recorded in the wheel."""
    out: dict[str, Any] = {"isolation": isolation}
    pyproject = source / "pyproject.toml"
    if pyproject.is_file():
        system = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("build-system", {})
        out["requires"] = list(system.get("requires", []))
        out["build_backend"] = system.get("build-backend")
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.count("/") == 1 and name.endswith(".dist-info/WHEEL"):
                for line in zf.read(name).decode(errors="replace").splitlines():
                    if line.startswith("Generator:"):
                        out["generator"] = line.partition(":")[2].strip()
    return out


# --------------------------------------------------------------------------- statement
def statement(wheel_name: str, sha256: str, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """An in-toto Statement v1 with a SLSA provenance v1 predicate for one wheel."""
    recipe = manifest.get("recipe", {})
    source = manifest.get("source", {})
    image = manifest.get("image", {})
    deps: list[dict[str, Any]] = []
    if source.get("commit"):
        uri = source.get("git") or source.get("path") or ""
        deps.append(
            {"uri": f"git+{uri}" if source.get("git") else uri, "digest": {"gitCommit": source["commit"]}}
        )
    if source.get("sha256"):  # an sdist or archive pinned by its sha256
        name, _, version = str(source.get("sdist", "")).partition("==")
        uri = f"pkg:pypi/{name}@{version}" if source.get("sdist") else str(source.get("url", ""))
        deps.append({"uri": uri, "digest": {"sha256": source["sha256"]}})
    if image.get("id"):
        algo, _, hexdigest = str(image["id"]).partition(":")
        deps.append({"uri": f"docker-image:{image.get('tag', '')}", "digest": {algo or "sha256": hexdigest}})
    internal: dict[str, Any] = {
        "source_date_epoch": manifest.get("source_date_epoch"),
        "inputs_key": manifest.get("inputs_key"),
        "toolchain": manifest.get("toolchain", {}),
    }
    if manifest.get("gate") is not None:  # the gate configuration `publish` runs the gate with again
        internal["gate"] = manifest["gate"]
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": wheel_name, "digest": {"sha256": sha256}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {
                    "recipe": {
                        "name": recipe.get("name"),
                        "file": recipe.get("file"),
                        "digest": {"sha256": recipe.get("sha256")},
                    },
                    "job": manifest.get("job", {}),
                },
                "internalParameters": internal,
                "resolvedDependencies": deps,
            },
            "runDetails": {
                "builder": {"id": BUILDER_ID, "version": {"rocm-buildkit": _buildkit_version()}},
                "metadata": {"invocationId": manifest.get("inputs_key", "")},
            },
        },
    }


def _buildkit_version() -> str:
    return __version__


# --------------------------------------------------------------------------- DSSE
def envelope(statement_data: Mapping[str, Any], key: Ed25519PrivateKey | None) -> dict[str, Any]:
    """A DSSE envelope of the statement, signed by ``key`` (or with no signature when None)."""
    payload = json.dumps(statement_data, sort_keys=True, separators=(",", ":")).encode()
    signatures = []
    if key is not None:
        sig = key.sign(pae(PAYLOAD_TYPE, payload))
        signatures.append({"keyid": keyid(key.public_key()), "sig": base64.b64encode(sig).decode()})
    return {
        "payload": base64.b64encode(payload).decode(),
        "payloadType": PAYLOAD_TYPE,
        "signatures": signatures,
    }


def load_private_key(path: Path) -> Ed25519PrivateKey:
    # cryptography (~60 ms to import) is imported only when a build signs or verify checks
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise UsageError(f"cannot read the signing key {path}: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UsageError(
            f"{path}: not an ed25519 private key (make one with "
            "`openssl genpkey -algorithm ed25519 -out key.pem`)"
        )
    return key


def signing_key(env: Mapping[str, str] | None = None) -> Ed25519PrivateKey | None:
    """The key named by ``BUILDKIT_SIGNING_KEY`` (a PEM file), or None when the variable is unset."""
    environ = os.environ if env is None else env
    value = environ.get(SIGNING_KEY_ENV, "").strip()
    return load_private_key(Path(value)) if value else None


def companions(wheel: Path) -> list[Path]:
    """Files written beside ``wheel`` by this module (moved with it into the output)."""
    path = attestation_path(wheel)
    return [path] if path.exists() else []


@dataclass(frozen=True)
class Attestation:
    path: Path
    signed: bool
    keyid: str | None

    def to_json(self) -> dict[str, Any]:
        # hand-written, no JsonShape (buildkit/records.py): the format's constants
        return {
            "file": self.path.name,
            "format": "dsse+in-toto-statement-v1",
            "predicate_type": PREDICATE_TYPE,
            "signed": self.signed,
            "keyid": self.keyid,
        }


def write_attestation(wheel: Path, manifest: Mapping[str, Any], key: Ed25519PrivateKey | None) -> Attestation:
    wheel_info = manifest["wheel"]
    data = envelope(statement(wheel_info["filename"], wheel_info["sha256"], manifest), key)
    path = attestation_path(wheel)
    atomic_write(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    return Attestation(path, key is not None, keyid(key.public_key()) if key is not None else None)


def attach(
    wheel: Path,
    manifest: dict[str, Any],
    *,
    client: Any,
    image: Any,
    source: Path,
    isolation: bool,
    env: Mapping[str, str] | None = None,
    interpreter: str = BUILDER_PYTHON,
    run_id: str | None = None,
) -> dict[str, Any]:
    """Add ``manifest["provenance"]`` and write the attestation beside ``wheel`` (in its staging folder, so
    it moves into the output with the wheel); returns the manifest."""
    key = signing_key(env)
    provenance: dict[str, Any] = {
        "build_environment": build_environment(client, image.id, image.tag, interpreter, run_id),
        "build_backend": build_backend(source, wheel, isolation),
        "build_isolation": isolation,
    }
    manifest["provenance"] = provenance
    provenance["attestation"] = write_attestation(wheel, manifest, key).to_json()
    return manifest


def record(
    wheel: Path,
    *,
    client: Any,
    image: Any,
    source: Path,
    isolation: bool,
    env: Mapping[str, str] | None = None,
    interpreter: str = BUILDER_PYTHON,
    run_id: str | None = None,
) -> Path:
    """Re-write the manifest beside ``wheel`` with its provenance and the attestation (the hook of
    :mod:`buildkit.building.steps.record`); ``interpreter``: the job's Python, whose packages are recorded."""
    data = manifests.read(wheel)
    data.pop("schema", None)
    data.pop("schema_version", None)
    attach(
        wheel,
        data,
        client=client,
        image=image,
        source=source,
        isolation=isolation,
        env=env,
        interpreter=interpreter,
        run_id=run_id,
    )
    return manifests.write(wheel, data)
