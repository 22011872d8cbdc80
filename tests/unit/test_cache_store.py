"""``buildkit cache``'s archive checks and stream reader, without an engine."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from buildkit.building import cache_store
from buildkit.errors import UsageError

VOLUME = "rocm-buildkit-ccache-0123456789ab"


def _info(name: str, kind: bytes = tarfile.REGTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    return info


def test_only_files_and_folders_of_cache_volumes_are_imported() -> None:
    where = Path("x.tar")
    assert cache_store._check_member(_info(f"{VOLUME}/a/b/R"), where) == VOLUME
    assert cache_store._check_member(_info(VOLUME, tarfile.DIRTYPE), where) == VOLUME
    for bad in ("/etc/passwd", f"{VOLUME}/../x", "rocm-buildkit-ccache-xyz/a", "other/a"):
        with pytest.raises(UsageError, match="is not a file of a rocm-buildkit cache volume"):
            cache_store._check_member(_info(bad), where)
    for kind in (tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE):
        with pytest.raises(UsageError, match="not a regular file or folder"):
            cache_store._check_member(_info(f"{VOLUME}/a", kind), where)


def test_the_engine_s_chunks_read_as_one_tar_stream() -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        data = b"x" * 70000
        info = _info(f"{VOLUME}/a")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    raw = buffer.getvalue()
    chunks = [raw[i : i + 4096] for i in range(0, len(raw), 4096)]
    reader = io.BufferedReader(cache_store._Chunks(chunks))
    members = [(m.name, t.extractfile(m).read()) for t, m in cache_store._members(reader)]  # type: ignore[union-attr]
    assert members == [(f"{VOLUME}/a", data)]
