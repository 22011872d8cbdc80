"""The real engine, asked to build FROM an image of a registry it cannot reach (none is reachable from this
machine's engine; on a machine where quay.io answers, the pull of a tag that does not exist is refused just
the same): exit 17 with the way offline, not exit 9 (issue 36)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from buildkit.errors import RegistryUnavailable
from buildkit.image.engine import build_logged

pytestmark = pytest.mark.docker


def test_a_base_image_no_registry_serves(tmp_path: Path, docker_client: Any) -> None:
    (tmp_path / "x.Dockerfile").write_text("FROM quay.io/pypa/manylinux_2_28_x86_64:2099.01.01-0000000\n")
    tag = "rocm-buildkit-test/unreachable:1"
    with pytest.raises(RegistryUnavailable) as info:
        build_logged(docker_client, tmp_path, "x.Dockerfile", tag, {}, {}, tmp_path / "log", print)
    assert info.value.exit_code == 17
    assert "cannot reach a registry" in str(info.value) and "buildkit image seed" in str(info.value)
