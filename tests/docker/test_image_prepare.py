"""``buildkit image prepare RECIPE`` on the real engine: the images a CI workflow's images job hands to
the build and smoke jobs (issue 36) are exactly those ``buildkit build`` and ``buildkit smoke`` then use,
with the bases their content tags depend on, and a second call builds nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from buildkit.service.image import prepare_images
from buildkit.smoke import resolve_image

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "reference-trixie.yaml"  # debian-rocm builds, debian-runtime smokes


def test_prepare_lists_the_builder_the_runtime_and_their_base(
    docker_client: Any, debian_rocm_image: Any
) -> None:
    lines: list[str] = []
    prepared = prepare_images(RECIPE, client=docker_client, progress=lines.append)
    by_role = {(p.role, p.ref.split(":")[0]): p for p in prepared}
    assert sorted(by_role) == [
        ("base", "debian"),
        ("builder", "rocm-buildkit/debian-rocm"),
        ("runtime", "rocm-buildkit/debian-runtime"),
    ]
    assert by_role["base", "debian"].ref == "debian:trixie-slim"
    # the very tags build and smoke compute for themselves
    assert by_role["builder", "rocm-buildkit/debian-rocm"].ref == debian_rocm_image.tag
    runtime = resolve_image(docker_client, "rocm-buildkit/debian-runtime", lambda _line: None, rocm="5.7")
    assert by_role["runtime", "rocm-buildkit/debian-runtime"].ref == runtime
    for item in prepared:
        docker_client.images.get(item.ref)  # each is in the engine: docker save takes them all
    again: list[str] = []
    assert prepare_images(RECIPE, client=docker_client, progress=again.append) == prepared
    assert again and all(line.startswith("reusing ") for line in again), again
