"""``buildkit cache export|import`` on the real engine: a cache volume's files leave through a
throwaway container (no host mount), as a .tar file and as a folder, and come back into an empty
volume of the same name byte for byte; an archive with anything but ccache's files is refused."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from buildkit.building import cache_store
from buildkit.docker_engine import throwaway

pytestmark = pytest.mark.docker

VOLUME = "rocm-buildkit-ccache-0e0e0e0e0e29"
FILL = (
    "set -e; mkdir -p /c/a/b; printf 'result-bytes' > /c/a/b/0123R; "
    "head -c 100000 /dev/urandom > /c/a/b/4567M; echo 'max_size = 1G' > /c/ccache.conf"
)
LIST = "cd /c && find . -type f | sort | xargs sha256sum"


def _in_volume(client: Any, script: str) -> str:
    image = cache_store.carrier_image(client)
    with throwaway(
        client, image, ["-c", script], purpose="test-cache", entrypoint=["/bin/sh"], volumes={VOLUME: "/c"}
    ) as box:
        done = box.run(timeout=120)
    assert done.exit_code == 0, done.stderr
    return done.stdout.decode()


def _remove(client: Any) -> None:
    with contextlib.suppress(Exception):
        client.volumes.get(VOLUME).remove(force=True)


def _buildkit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "buildkit", "cache", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("form", ["cache.tar", "cache-dir"])
def test_export_then_import_into_an_empty_volume_gives_the_same_files(
    tmp_path: Path, docker_client: Any, form: str
) -> None:
    _remove(docker_client)
    try:
        before = _in_volume(docker_client, FILL + "; " + LIST)
        assert before.count("\n") == 3
        done = _buildkit("export", form, "--volume", VOLUME, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"exported 1 cache volume(s) ({VOLUME}): 3 files" in done.stdout
        if form.endswith(".tar"):
            with tarfile.open(tmp_path / form) as tar:
                assert sorted(m.name for m in tar if m.isfile()) == sorted(
                    f"{VOLUME}/{p}" for p in ("a/b/0123R", "a/b/4567M", "ccache.conf")
                )
        else:
            assert (tmp_path / form / VOLUME / "a" / "b" / "0123R").read_bytes() == b"result-bytes"
        _remove(docker_client)  # "machine B": no such volume
        done = _buildkit("import", form, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"imported 1 cache volume(s) ({VOLUME}): 3 files" in done.stdout
        assert _in_volume(docker_client, LIST) == before
    finally:
        _remove(docker_client)


def test_an_archive_with_a_link_or_a_foreign_name_is_refused(tmp_path: Path, docker_client: Any) -> None:
    for name, kind in ((f"{VOLUME}/evil", tarfile.SYMTYPE), ("elsewhere/file", tarfile.REGTYPE)):
        path = tmp_path / "bad.tar"
        with tarfile.open(path, "w") as tar:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
            tar.addfile(info, io.BytesIO(b"") if kind == tarfile.REGTYPE else None)
        done = _buildkit("import", str(path), cwd=tmp_path)
        assert done.returncode != 0 and "bad.tar" in done.stderr, done.stderr
    assert VOLUME not in cache_store.cache_volumes(docker_client)
