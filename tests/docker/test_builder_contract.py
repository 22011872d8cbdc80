"""Builder images from the recipe's ``image:`` on the real engine: the contract probe refuses an image
lacking what builds need (one message naming every gap, before anything is compiled), a profile
extended with ``packages`` gets a generated layer (content-addressed, reused), and an ``image.ref``
is taken as it is.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from buildkit import image as images
from buildkit.errors import BuilderContractError, DockerUnavailable
from buildkit.image.builder import LABEL_PACKAGES, ensure_builder
from buildkit.image.probe import Contract, check_builder
from buildkit.recipe.sections.image import ImageSpec

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
#: the debian-rocm builder without auditwheel and without its only CPython (cp39-cp39, cibuildwheel's
#: utility interpreter, is a symlink to it and goes too)
STRIPPED = """\
ARG BASE_IMAGE=rocm-buildkit/debian-rocm:missing
FROM ${BASE_IMAGE}
RUN rm -f /usr/local/bin/auditwheel && rm -rf /opt/buildkit-tools /opt/python/cp313-cp313
"""


def test_the_probe_refuses_a_stripped_image_naming_every_gap(tmp_path: Path, debian_rocm_image: Any) -> None:
    (tmp_path / "builder").mkdir()
    (tmp_path / "builder" / "Stripped.Dockerfile").write_text(STRIPPED)
    data = yaml.safe_load((ROOT / "recipes" / "reference-trixie.yaml").read_text())
    data["source"] = {"path": str(ROOT / "csrc")}
    data["image"] = {
        "dockerfile": "builder/Stripped.Dockerfile",
        "context": "builder",
        "build_args": {"BASE_IMAGE": debian_rocm_image.tag},
    }
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(data, sort_keys=False))
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "buildkit", "build", str(recipe), "--out", "dist", "--log-dir", "logs"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == BuilderContractError.exit_code, proc.stdout + proc.stderr
    message = proc.stderr
    assert "does not meet the builder contract" in message
    assert "/opt/python/cp313-cp313/bin/python (the planned CPython cp313-cp313)" in message
    assert "auditwheel >= 6.2.0 on PATH" in message
    assert "Traceback" not in message
    # refused before cibuildwheel started: no job log, no wheel, no staging folder left
    assert not (tmp_path / "logs" / "cp313-rocm5.7.log").exists()
    assert not list(tmp_path.glob("dist/**/*.whl"))
    assert elapsed < 300, elapsed


def test_the_probe_passes_the_debian_builder_and_remembers_it(
    debian_rocm_image: Any, docker_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    contract = Contract.of(["cp313"], ["gfx908", "gfx90a", "gfx942"])
    lines: list[str] = []
    check_builder(docker_client, debian_rocm_image.tag, debian_rocm_image.id, contract, progress=lines.append)
    assert any("probing" in line for line in lines)
    assert list((tmp_path / "rocm-buildkit" / "probe").glob("*.json"))
    lines.clear()
    check_builder(docker_client, debian_rocm_image.tag, debian_rocm_image.id, contract, progress=lines.append)
    assert lines == []  # cached by image id and contract: not probed again
    # an arch Debian's clang 17 cannot compile is a gap, said with the compiler's words
    with pytest.raises(BuilderContractError, match=r"every planned arch \(gfx950\).*gfx950"):
        check_builder(
            docker_client, debian_rocm_image.tag, debian_rocm_image.id, Contract.of(["cp313"], ["gfx950"])
        )


def test_packages_go_into_a_generated_layer_reused_by_content(
    debian_rocm_image: Any, docker_client: Any
) -> None:
    spec = ImageSpec(profile="debian-rocm", packages=("jq",))
    lines: list[str] = []
    ref = ensure_builder(
        spec, "5.7", recipe_dir=ROOT, recipe_name="t", client=docker_client, progress=lines.append
    )
    assert ref.tag.startswith("rocm-buildkit/debian-rocm:") and ref.tag != debian_rocm_image.tag
    image = docker_client.images.get(ref.tag)
    assert image.labels[LABEL_PACKAGES] == '["jq"]'
    assert image.labels[images.LABEL_PROFILE] == "debian-rocm"
    out = docker_client.containers.run(ref.tag, ["jq", "--version"], remove=True, network_mode="none")
    assert out.decode().startswith("jq-")
    again = ensure_builder(
        spec, "5.7", recipe_dir=ROOT, recipe_name="t", client=docker_client, progress=print
    )
    assert again.tag == ref.tag and again.id == ref.id and not again.built


def test_an_image_ref_is_used_as_it_is(debian_rocm_image: Any, docker_client: Any) -> None:
    ref = ensure_builder(
        ImageSpec(ref=debian_rocm_image.tag),
        "5.7",
        recipe_dir=ROOT,
        recipe_name="t",
        client=docker_client,
        progress=print,
    )
    assert ref.id == debian_rocm_image.id and not ref.built
    with pytest.raises(DockerUnavailable, match=r"image\.ref rocm-buildkit-test/absent:1 is not in the"):
        ensure_builder(
            ImageSpec(ref="rocm-buildkit-test/absent:1"),
            "5.7",
            recipe_dir=ROOT,
            recipe_name="t",
            client=docker_client,
            progress=print,
        )
