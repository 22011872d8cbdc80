"""``buildkit verify`` on the real engine: the reference recipe rebuilt byte for byte, a tampered copy
named member by member, provenance and a signed attestation recorded by ``buildkit build``.

The first tests need Docker (marked); the member comparison tests at the end are pure zip work.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from buildkit.building.verify import diff_members
from buildkit.manifest import read as read_manifest
from buildkit.manifest import sha256_file

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "reference-trixie.yaml"
TAMPERED_MEMBER = "refkernels/__init__.py"


def _buildkit(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=1800,
        # the tree under test, whatever the editable install points at
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def _rewrite_member(src: Path, dest: Path, member: str, append: bytes) -> None:
    """Copy a wheel changing one member's bytes; every other member and all zip metadata kept."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info, data + append if info.filename == member else data)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, debian_rocm_image: Any) -> dict[str, Any]:
    """One build of the reference recipe, signed with a key made for this test module."""
    tmp = tmp_path_factory.mktemp("verify")
    key = Ed25519PrivateKey.generate()
    (tmp / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    (tmp / "key.pub").write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    proc = _buildkit(
        "build",
        str(RECIPE),
        "--out",
        str(tmp / "dist"),
        "--log-dir",
        str(tmp / "logs"),
        cwd=tmp,
        env={"BUILDKIT_SIGNING_KEY": str(tmp / "key.pem")},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = sorted((tmp / "dist").glob("*/*.whl"))
    assert len(wheels) == 1, wheels
    return {"tmp": tmp, "wheel": wheels[0], "public": tmp / "key.pub"}


@pytest.mark.docker
def test_manifest_lists_inputs_and_the_attestation_verifies(built: dict[str, Any]) -> None:
    wheel: Path = built["wheel"]
    data = read_manifest(wheel)
    assert data["recipe"]["sha256"] == sha256_file(RECIPE)
    assert data["image"]["id"].startswith("sha256:")
    prov = data["provenance"]
    env = prov["build_environment"]
    assert env["image_id"] == data["image"]["id"]
    names = {p["name"].lower() for p in env["python_packages"]}
    assert {"pip", "build", "setuptools"} <= names, names
    assert any(p.startswith("hipcc=5.7") for p in env["system_packages"]), env["system_packages"][:20]
    assert prov["build_backend"]["requires"] == ["setuptools>=77"]
    assert prov["build_backend"]["generator"].startswith("setuptools (")
    assert prov["attestation"]["signed"] is True
    attestation = wheel.with_name(wheel.name + ".intoto.json")
    assert prov["attestation"]["file"] == attestation.name
    lock = wheel.with_name(wheel.name + ".requirements.lock")  # the hermetic build's requirements
    assert data["build_requirements"]["lock"] == lock.name
    assert sorted(p.name for p in wheel.parent.iterdir()) == sorted(
        [wheel.name, wheel.name + ".manifest.json", attestation.name, lock.name]
    )
    ok = _buildkit(
        "verify", str(wheel), "--attestation", "--public-key", str(built["public"]), cwd=built["tmp"]
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr


@pytest.mark.docker
def test_rebuild_is_byte_identical(built: dict[str, Any]) -> None:
    # run from the repository root: the recipe is found as recipes/<file named in the manifest>
    # by default the rebuild compiles from scratch (no compiler-cache volume), so the cache cannot hide
    # a difference
    proc = _buildkit("verify", str(built["wheel"]), "--json", cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["identical"] is True
    assert result["rebuilt_sha256"] == result["original_sha256"] == sha256_file(built["wheel"])
    assert result["members"] == []
    assert not any("differs" in note for note in result["notes"]), result["notes"]
    # rebuilt from the build requirements the manifest locks, not from a new resolution
    assert not any("locks no build requirements" in note for note in result["notes"]), result["notes"]
    cached = _buildkit("verify", str(built["wheel"]), "--cache", "--json", cwd=ROOT)  # the quick variant
    assert cached.returncode == 0 and json.loads(cached.stdout)["identical"] is True, cached.stderr


@pytest.mark.docker
def test_tampered_copy_differs_and_names_the_member(built: dict[str, Any]) -> None:
    wheel: Path = built["wheel"]
    copy_dir = built["tmp"] / "tampered"
    copy_dir.mkdir()
    copy = copy_dir / wheel.name
    _rewrite_member(wheel, copy, TAMPERED_MEMBER, b"\n# tampered\n")
    for companion in (".manifest.json", ".intoto.json"):
        shutil.copy(wheel.with_name(wheel.name + companion), copy_dir / (wheel.name + companion))

    proc = _buildkit("verify", str(copy), "--recipe", str(RECIPE), "--json", cwd=built["tmp"])
    assert proc.returncode == 12, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["identical"] is False
    assert result["rebuilt_sha256"] == sha256_file(wheel)  # the rebuild matches the untouched original
    assert [(m["name"], m["status"]) for m in result["members"]] == [(TAMPERED_MEMBER, "changed")]
    member = result["members"][0]
    assert member["original_size"] == member["rebuilt_size"] + len(b"\n# tampered\n")
    assert any("the file was changed after the build" in n for n in result["notes"])
    assert TAMPERED_MEMBER in proc.stderr  # the NotReproducible message names it too

    att = _buildkit(
        "verify", str(copy), "--attestation", "--public-key", str(built["public"]), cwd=built["tmp"]
    )
    assert att.returncode == 12
    assert "not the attested subject" in att.stderr


@pytest.mark.docker
def test_refuses_a_recipe_with_other_bytes(built: dict[str, Any]) -> None:
    other = built["tmp"] / "reference-trixie.yaml"
    other.write_text(RECIPE.read_text() + "# edited\n")
    proc = _buildkit("verify", str(built["wheel"]), "--recipe", str(other), cwd=built["tmp"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert sha256_file(other) in proc.stderr and sha256_file(RECIPE) in proc.stderr
    assert "Traceback" not in proc.stderr


# --------------------------------------------------------------------------- member comparison (no Docker)
def _zip(path: Path, members: list[tuple[str, bytes]], date: tuple[int, ...] = (1980, 1, 1, 0, 0, 0)) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=date)  # type: ignore[arg-type]
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return path


def test_diff_members_names_changed_missing_and_added(tmp_path: Path) -> None:
    a = _zip(tmp_path / "a.whl", [("p/a.py", b"1"), ("p/b.py", b"2"), ("p/old.py", b"x")])
    b = _zip(tmp_path / "b.whl", [("p/a.py", b"1"), ("p/b.py", b"22"), ("p/new.py", b"y")])
    diffs = {d.name: d for d in diff_members(a, b)}
    assert sorted(diffs) == ["p/b.py", "p/new.py", "p/old.py"]
    assert diffs["p/b.py"].status == "changed"
    assert (diffs["p/b.py"].original_size, diffs["p/b.py"].rebuilt_size) == (1, 2)
    assert diffs["p/old.py"].status == "only-in-original"
    assert diffs["p/new.py"].status == "only-in-rebuild"
    assert "sha256" in diffs["p/b.py"].describe()


def test_diff_members_sees_timestamps_and_order(tmp_path: Path) -> None:
    a = _zip(tmp_path / "a.whl", [("p/a.py", b"1"), ("p/b.py", b"2")])
    later = _zip(tmp_path / "b.whl", [("p/a.py", b"1"), ("p/b.py", b"2")], date=(2024, 5, 1, 12, 0, 0))
    diffs = diff_members(a, later)
    assert [(d.name, d.status) for d in diffs] == [("p/a.py", "zip-metadata"), ("p/b.py", "zip-metadata")]
    assert "date_time" in diffs[0].detail
    swapped = _zip(tmp_path / "c.whl", [("p/b.py", b"2"), ("p/a.py", b"1")])
    assert [(d.name, d.detail) for d in diff_members(a, swapped)] == [
        ("<archive>", "members are stored in another order")
    ]
    assert diff_members(a, _zip(tmp_path / "d.whl", [("p/a.py", b"1"), ("p/b.py", b"2")])) == []


# --------------------------------------------------------------------------- provenance probe container
SLOW_PROBE_DOCKERFILE = """\
FROM debian:trixie-slim
RUN mkdir -p /opt/python/cp313-cp313/bin \\
 && printf '#!/bin/sh\\nsleep 120\\n' > /opt/python/cp313-cp313/bin/python \\
 && chmod +x /opt/python/cp313-cp313/bin/python
"""


def _probes(client: Any, image_id: str) -> list[Any]:
    """Containers of the test's own probe image (no other test uses it)."""
    return list(client.containers.list(all=True, filters={"ancestor": image_id}))


@pytest.mark.docker
def test_build_environment_probe_is_removed_on_ctrl_c(
    docker_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the probe container runs: KeyboardInterrupt propagates and the container is gone."""
    from buildkit.building import provenance

    digest = hashlib.sha256(SLOW_PROBE_DOCKERFILE.encode()).hexdigest()[:12]
    tag = f"rocm-buildkit-test/slow-probe:{digest}"
    try:
        image = docker_client.images.get(tag)
    except Exception:
        image, _ = docker_client.images.build(
            fileobj=io.BytesIO(SLOW_PROBE_DOCKERFILE.encode()), tag=tag, rm=True
        )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    seen: list[int] = []
    main = threading.main_thread().ident
    assert main is not None

    def interrupt_when_running() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            running = [c for c in _probes(docker_client, image.id) if c.status == "running"]
            if running:
                seen.append(len(running))
                time.sleep(0.5)  # let the main thread block in wait()
                signal.pthread_kill(main, signal.SIGINT)
                return
            time.sleep(0.1)

    # Ctrl-C as in a terminal, even when the runner started pytest with SIGINT ignored (``cmd &`` in a
    # script): Python then never installed its KeyboardInterrupt handler
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        watcher = threading.Thread(target=interrupt_when_running, daemon=True)
        watcher.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            provenance.build_environment(docker_client, image.id, tag)
        watcher.join(5)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == [1]  # the probe container ran while we waited
    assert _probes(docker_client, image.id) == []
    assert time.monotonic() - started < 60
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.json"))


@pytest.mark.docker
def test_build_environment_lists_the_image_packages(
    docker_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from buildkit.building import provenance

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    image = docker_client.images.get("debian:trixie-slim")
    data = provenance.build_environment(docker_client, image.id, "debian:trixie-slim")
    assert data["python_packages"] == []  # no /opt/python in a plain Debian image
    assert any(p.startswith("base-files=") for p in data["system_packages"]), data["system_packages"][:5]
    labelled = {"label": "io.rocm-buildkit.container=provenance"}
    assert docker_client.containers.list(all=True, filters=labelled) == []
    assert list((tmp_path / "cache").rglob("*.json"))  # cached by image id
