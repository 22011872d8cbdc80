"""What the container gets, copied in with ``put_archive`` (nothing of the host is mounted): the
folder ``/bk-smoke`` with the wheel, the wheelhouse and, with an index, the host's CA bundle; later
the dependencies downloaded on the host."""

from __future__ import annotations

import os
import tarfile
import tempfile
from pathlib import Path
from typing import IO

from buildkit.docker_engine import Throwaway
from buildkit.errors import SmokeFailed, UsageError
from buildkit.smoke.spec import SmokeSpec

WORKDIR = "/bk-smoke"  # put_archive at "/": the one folder every image has
VENV = f"{WORKDIR}/venv"
CA_CANDIDATES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")
_TOP = WORKDIR.lstrip("/")


def host_ca_bundle() -> Path:
    for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(name)
        if value and Path(value).is_file():
            return Path(value)
    for candidate in CA_CANDIDATES:
        if Path(candidate).is_file():
            return Path(candidate)
    raise UsageError("--index-url needs the host's CA bundle: set PIP_CERT or SSL_CERT_FILE")


def _add_file(tar: tarfile.TarFile, source: Path, arcname: str) -> None:
    info = tar.gettarinfo(str(source), arcname)
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mode = 0o644
    with source.open("rb") as fh:
        tar.addfile(info, fh)


def _add_dir(tar: tarfile.TarFile, arcname: str, mode: int = 0o777) -> None:
    info = tarfile.TarInfo(arcname)
    info.type = tarfile.DIRTYPE
    info.mode = mode
    tar.addfile(info)


def write_payload(stream: IO[bytes], wheel: Path, wheelhouse: Path | None, ca_bundle: Path | None) -> None:
    """Write to ``stream`` (a temporary file: wheels can be large) the tar of :data:`WORKDIR`."""
    with tarfile.open(fileobj=stream, mode="w") as tar:
        _add_dir(tar, _TOP)
        _add_dir(tar, f"{_TOP}/tmp", 0o1777)
        _add_dir(tar, f"{_TOP}/wheel")
        _add_file(tar, wheel, f"{_TOP}/wheel/{wheel.name}")
        _add_dir(tar, f"{_TOP}/wheelhouse")
        if wheelhouse is not None:
            for dep in sorted(wheelhouse.glob("*.whl")):
                if dep.name != wheel.name:
                    _add_file(tar, dep, f"{_TOP}/wheelhouse/{dep.name}")
        if ca_bundle is not None:
            _add_file(tar, ca_bundle, f"{_TOP}/ca-bundle.crt")
    stream.seek(0)


def copy_payload(
    container: Throwaway, spec: SmokeSpec, wheel: Path, wheelhouse: Path | None, ca_bundle: Path | None
) -> None:
    """The payload into the (created, not started) container of the smoke test ``spec``."""
    with tempfile.TemporaryFile() as payload:
        write_payload(payload, wheel, wheelhouse, ca_bundle)
        name, image = spec.name, spec.image
        try:
            copied = container.put_archive("/", payload)
        except Exception as exc:  # docker.errors.APIError/NotFound: the image's filesystem refused it
            raise SmokeFailed(
                f"smoke {name}: could not copy {wheel.name} into {WORKDIR} of a {image} container: {exc}"
            ) from None
        if not copied:
            raise SmokeFailed(f"smoke {name}: could not copy {wheel.name} into the {image} container")


def copy_wheels(container: Throwaway, files: list[Path]) -> None:
    """Copy ``files`` into the container's ``/bk-smoke/wheelhouse``."""
    with tempfile.TemporaryFile() as payload:
        with tarfile.open(fileobj=payload, mode="w") as tar:
            for f in files:
                _add_file(tar, f, f"{_TOP}/wheelhouse/{f.name}")
        payload.seek(0)
        if not container.put_archive("/", payload):
            raise SmokeFailed(f"could not copy the dependencies into {WORKDIR}/wheelhouse")
