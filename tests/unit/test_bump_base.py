"""`buildkit image bump-base`: a tag resolved to the digest the registry serves, and the Dockerfile's pin
rewritten. The registry (quay.io) cannot be reached from this machine: `docker buildx imagetools
inspect` is replaced by a stand-in `docker` on PATH that prints a recorded answer
(tests/data/imagetools/, in the format Docker documents for the command) or fails as the real CLI does.
Everything after the CLI's answer (parsing, rewriting, writing the file, exit codes) is the real code.
"""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit import image as images
from buildkit.errors import BuildFailed, DockerUnavailable, UsageError
from buildkit.image import base

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "imagetools"
REPOSITORY = "quay.io/pypa/manylinux_2_28_x86_64"
THEROCK = "sha256:d632b5e68ab39e59e128dcf0e59e438b26f122d7f2d45f3eea69ffd2877ab017"
NEWER = "sha256:5f8e2b1e7a4d3c6b9a0f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3"


@pytest.fixture()
def docker_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "docker"
    shutil.copytree(ROOT / "docker", target)
    monkeypatch.setenv("BUILDKIT_DOCKER_DIR", str(target))
    return target


def _fake_docker(tmp_path: Path, *, stdout: Path | None = None, stderr: str = "", code: int = 0) -> Path:
    """A `docker` that records its arguments and answers like `docker buildx imagetools inspect`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "docker"
    out = f"cat {stdout}" if stdout else ":"
    script.write_text(
        f'#!/bin/sh\necho "$*" >> {tmp_path / "calls"}\n{out}\nprintf "%s" "{stderr}" >&2\nexit {code}\n'
    )
    script.chmod(0o755)
    return bin_dir


def _cli(
    bin_dir: Path, *args: str, docker_dir: Path, system_path: str = ":/usr/bin:/bin"
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{bin_dir}{system_path}", "BUILDKIT_DOCKER_DIR": str(docker_dir)}
    return subprocess.run(
        [sys.executable, "-m", "buildkit", "image", "bump-base", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def test_the_production_base_is_pinned_to_therock_s_digest() -> None:
    text = (ROOT / "docker" / "manylinux_2_28-rocm.Dockerfile").read_text()
    assert base.pinned_base(text) == base.Pin(REPOSITORY, THEROCK)
    assert "# base-image: quay.io/pypa/manylinux_2_28_x86_64 resolved-from=ROCm/TheRock" in text
    # the August 2023 digest (no CPython 3.13, no gcc-toolset-12, auditwheel 5.4.0, AlmaLinux's old key)
    assert "8ab319e0ecea2f642b2436dbf736993f1af3051186d2e2fd27ac79a461f47191" not in text


def test_parse_an_index_and_a_single_manifest() -> None:
    index = (DATA / "manylinux_2_28_x86_64.index.txt").read_text()
    assert base.parse_inspect(index, "r") == NEWER  # the index's digest, not the amd64 manifest's
    single = (DATA / "manylinux_2_28_x86_64.manifest.txt").read_text()
    assert base.parse_inspect(single, "r") == THEROCK
    with pytest.raises(BuildFailed, match="lists no linux/amd64 manifest"):
        base.parse_inspect(index.replace("linux/amd64", "linux/arm64"), "r")
    with pytest.raises(BuildFailed, match=r"printed no `Digest: sha256:\.\.\.` line"):
        base.parse_inspect("Name: x\n", "r")


def test_rewrite_moves_the_pin_and_records_the_tag() -> None:
    text = (ROOT / "docker" / "manylinux_2_28-rocm.Dockerfile").read_text()
    reference = f"{REPOSITORY}:2025.11.09-1"
    out = base.rewrite_base(text, NEWER, reference, datetime.date(2025, 11, 10))
    assert base.pinned_base(out) == base.Pin(REPOSITORY, NEWER)
    note = f"# base-image: {reference} resolved 2025-11-10 with docker buildx imagetools inspect"
    assert out.count("# base-image:") == 1
    # exactly two lines change: the note (in its place) and FROM
    changed = [(a, b) for a, b in zip(text.splitlines(), out.splitlines(), strict=True) if a != b]
    assert [b for _a, b in changed] == [note, f"FROM {REPOSITORY}@{NEWER}"]
    # a Dockerfile without the note gets one right above FROM
    bare = f"# a builder\nFROM {REPOSITORY}@{THEROCK} AS base\nRUN true\n"
    assert base.rewrite_base(bare, NEWER, reference, datetime.date(2025, 11, 10)) == (
        f"# a builder\n# base-image: {reference} resolved 2025-11-10 with docker buildx imagetools inspect\n"
        f"FROM {REPOSITORY}@{NEWER} AS base\nRUN true\n"
    )
    with pytest.raises(ValueError):
        base.rewrite_base(text, "sha256:abc", reference, datetime.date(2025, 11, 10))


def test_bump_base_rewrites_the_profile_s_dockerfile(tmp_path: Path, docker_copy: Path) -> None:
    bin_dir = _fake_docker(tmp_path, stdout=DATA / "manylinux_2_28_x86_64.index.txt")
    dockerfile = docker_copy / "manylinux_2_28-rocm.Dockerfile"
    before = dockerfile.read_text()
    profile = images.get_profile("manylinux_2_28-rocm")
    tag_before = images.content_tag(profile, docker_copy)

    dry = _cli(bin_dir, "manylinux_2_28-rocm", "--tag", "2025.11.09-1", "--dry-run", docker_dir=docker_copy)
    assert dry.returncode == 0, dry.stderr
    assert f"{REPOSITORY}:2025.11.09-1 is {NEWER}" in dry.stdout and "--dry-run: not rewritten" in dry.stdout
    assert dockerfile.read_text() == before
    assert (tmp_path / "calls").read_text() == f"buildx imagetools inspect {REPOSITORY}:2025.11.09-1\n"

    done = _cli(bin_dir, "manylinux_2_28-rocm", "--tag", "2025.11.09-1", docker_dir=docker_copy)
    assert done.returncode == 0, done.stderr
    assert f"{THEROCK} -> {NEWER}" in done.stdout
    assert base.pinned_base(dockerfile.read_text()).digest == NEWER
    assert images.content_tag(profile, docker_copy) != tag_before  # the next build uses the new base
    again = _cli(bin_dir, "manylinux_2_28-rocm", "--tag", "2025.11.09-1", docker_dir=docker_copy)
    assert again.returncode == 0 and "already pins it" in again.stdout


@pytest.mark.parametrize(
    ("stderr", "code", "exit_code", "message"),
    [
        (
            "ERROR: quay.io/pypa/manylinux_2_28_x86_64:1999.01.01-1: not found",
            1,
            9,
            "check the tag exists",
        ),
        ("docker: 'buildx' is not a docker command.", 1, 8, "install docker-buildx"),
    ],
)
def test_a_failed_lookup_names_the_fix(
    tmp_path: Path, docker_copy: Path, stderr: str, code: int, exit_code: int, message: str
) -> None:
    bin_dir = _fake_docker(tmp_path, stderr=stderr, code=code)
    before = (docker_copy / "manylinux_2_28-rocm.Dockerfile").read_text()
    proc = _cli(bin_dir, "manylinux_2_28-rocm", "--tag", "1999.01.01-1", docker_dir=docker_copy)
    assert proc.returncode == exit_code, proc.stderr
    assert message in proc.stderr and stderr in proc.stderr and "Traceback" not in proc.stderr
    assert (docker_copy / "manylinux_2_28-rocm.Dockerfile").read_text() == before


def test_no_docker_cli_and_an_unpinned_profile(tmp_path: Path, docker_copy: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DockerUnavailable, match="needs the docker CLI with the buildx plugin"):
        base.resolve_digest("x:y", run=lambda *a, **k: (_ for _ in ()).throw(FileNotFoundError("docker")))
    proc = _cli(empty, "manylinux_2_28-rocm", docker_dir=docker_copy, system_path="")  # no docker at all
    assert proc.returncode == 8 and "docker buildx imagetools inspect" in proc.stderr, proc.stderr
    # debian-rocm starts FROM ${BASE_IMAGE} (a seeded Debian): nothing to pin
    with pytest.raises(UsageError, match="not pinned by digest"):
        base.bump_base(
            images.get_profile("debian-rocm"), run=lambda *a, **k: None
        )  # refused before any lookup
    with pytest.raises(UsageError, match="is not an image tag"):
        base.bump_base(images.get_profile("manylinux_2_28-rocm"), "latest; rm -rf /")
