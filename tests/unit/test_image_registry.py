"""An image build that cannot reach a registry is exit 17 (RegistryUnavailable) with a hint naming what builds
offline, not exit 9 with the engine's words alone (issue 36: `buildkit image build manylinux_2_28-rocm` ended
in 2.7 s with exit 9 and `Get "https://quay.io/v2/": dial tcp: lookup quay.io ... no such host`, no hint).

The engine's stream is stood in for by the chunks it sends (a registry cannot be made unreachable on demand in
the unit tier; tests/docker/test_image_registry_docker.py has the real engine fail to pull)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from buildkit.errors import BuildFailed, RegistryUnavailable
from buildkit.image.engine import build_logged

#: the issue's message, as the engine sends it
QUAY = 'Get "https://quay.io/v2/": dial tcp: lookup quay.io on 127.0.0.53:53: no such host'
COMPILE = "The command '/bin/sh -c make' returned a non-zero code: 2"


class _Api:
    def __init__(self, chunks: list[dict[str, Any]]) -> None:
        self.chunks = chunks

    def build(self, **_: Any) -> Any:
        return iter(self.chunks)


class _Client:
    def __init__(self, chunks: list[dict[str, Any]]) -> None:
        self.api = _Api(chunks)


def _build(tmp_path: Path, error: str) -> Exception:
    chunks = [{"stream": "Step 1/3 : FROM quay.io/pypa/manylinux_2_28_x86_64\n"}, {"error": error}]
    with pytest.raises((BuildFailed, RegistryUnavailable)) as info:
        build_logged(
            _Client(chunks), tmp_path, "x.Dockerfile", "rocm-buildkit/x:1", {}, {}, tmp_path / "l", print
        )
    return info.value


def test_an_unreachable_registry_is_its_own_exit_code_with_the_way_offline(tmp_path: Path) -> None:
    err = _build(tmp_path, QUAY)
    assert isinstance(err, RegistryUnavailable) and err.exit_code == 17
    assert "cannot reach a registry: " + QUAY in str(err)
    assert "buildkit image seed debian:sid-slim" in str(err) and "debian-sid-rocm" in str(err)
    assert "manylinux.sysroot: glibc2.31" in str(err)
    assert f"full log: {tmp_path / 'l'}" in str(err)


def test_a_failed_build_step_stays_a_build_failure(tmp_path: Path) -> None:
    err = _build(tmp_path, COMPILE)
    assert type(err) is BuildFailed and err.exit_code == 9
    assert "image seed" not in str(err)
