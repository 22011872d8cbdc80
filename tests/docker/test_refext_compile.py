"""Compile the reference extension (csrc/) for real with hipcc inside a container.

Image: ``$BUILDKIT_TEST_BUILDER_IMAGE`` when set, else the debian-rocm builder of docker/ (the
session fixture of tests/docker/conftest.py builds it once and reuses it by its content tag).
The container gets no host mount and no network: the sources go in with ``put_archive``,
the wheel comes out with ``get_archive``.
"""

from __future__ import annotations

import io
import os
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "csrc"
ARCHS = ("gfx908", "gfx90a", "gfx942")

sys.path.insert(0, str(CSRC))
import refkernels  # noqa: E402

pytestmark = pytest.mark.docker

# The first interpreter with setuptools and build: the builder's cibuildwheel Python, else Debian's.
PICK_PYTHON = (
    "for py in /opt/python/cp313-cp313/bin/python python3; do "
    '"$py" -c "import setuptools, build" 2>/dev/null && { echo "$py"; exit 0; }; done; '
    "echo 'no Python with setuptools and build in the image' >&2; exit 1"
)


@pytest.fixture(scope="module")
def engine(docker_client: Any) -> Any:
    return docker_client


@pytest.fixture(scope="module")
def builder_image(engine: Any, debian_rocm_image: Any) -> str:
    """``$BUILDKIT_TEST_BUILDER_IMAGE`` when set, else the debian-rocm builder of docker/."""
    wanted = os.environ.get("BUILDKIT_TEST_BUILDER_IMAGE")
    if wanted:
        engine.images.get(wanted)  # fails loudly when the named image is missing
        return wanted
    return str(debian_rocm_image.tag)


def _source_tar() -> bytes:
    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = Path(info.name).parts
        skipped = {"build", "dist", "__pycache__", ".pytest_cache"}
        if skipped & set(parts) or info.name.endswith((".egg-info", ".so", ".o")):
            return None
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(CSRC, arcname="src", filter=keep)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def container(engine: Any, builder_image: str) -> Iterator[Any]:
    box = engine.containers.create(
        builder_image, command=["sleep", "infinity"], network_disabled=True, working_dir="/"
    )
    try:
        box.start()
        assert box.put_archive("/", _source_tar())
        yield box
    finally:
        box.remove(force=True)


def run(box: Any, script: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    code, output = box.exec_run(["sh", "-c", script], environment=env or {}, demux=False)
    return int(code), output.decode(errors="replace")


@pytest.fixture(scope="module")
def built_wheel(container: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    code, python = run(container, PICK_PYTHON)
    assert code == 0, python
    env = {"PYTORCH_ROCM_ARCH": ";".join(ARCHS), "HIP_PLATFORM": "amd", "SOURCE_DATE_EPOCH": "1700000000"}
    started = time.monotonic()
    code, log = run(container, f"cd /src && {python.strip()} -m build --wheel --no-isolation -o /out", env)
    print(f"refext cold wheel build for {';'.join(ARCHS)}: {time.monotonic() - started:.1f} s")
    assert code == 0, log[-4000:]
    stream, _ = container.get_archive("/out")
    out = tmp_path_factory.mktemp("wheel")
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        tar.extractall(out, filter="data")
    wheels = sorted(out.rglob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_carries_exactly_the_requested_archs(built_wheel: Path, tmp_path: Path) -> None:
    assert built_wheel.name.startswith("buildkit_refkernels-0.1.0-cp")
    with zipfile.ZipFile(built_wheel) as wheel:
        names = wheel.namelist()
        assert "refkernels/tuned/gemm.csv" in names
        (extension,) = [n for n in names if n.startswith("refkernels/_C.") and n.endswith(".so")]
        so = tmp_path / "ext.so"
        so.write_bytes(wheel.read(extension))
    assert refkernels.get_build_targets(so) == ARCHS


def test_installed_package_reads_its_own_binary_and_reports_no_gpu(container: Any, built_wheel: Path) -> None:
    code, python = run(container, PICK_PYTHON)
    script = (
        f"cd /tmp && {python.strip()} -m zipfile -e /out/{built_wheel.name} /tmp/site && "
        f"PYTHONPATH=/tmp/site {python.strip()} -c '"
        "import refkernels as r\n"
        'print(";".join(r.get_build_targets()))\n'
        "print(r.get_gfx_runtime().available)\n"
        "try:\n"
        "    r.rowsum([1.0, 2.0], 1, 2)\n"
        "except r.NoDeviceError as e:\n"
        '    print("NoDeviceError", e.code)\n'
        "'"
    )
    code, output = run(container, script)
    assert code == 0, output
    assert output.split() == [";".join(ARCHS), "False", "NoDeviceError", "100"]


def test_build_without_archs_fails_clearly(container: Any) -> None:
    code, python = run(container, PICK_PYTHON)
    code, log = run(
        container,
        "cd /src && env -u PYTORCH_ROCM_ARCH -u GPU_ARCHS "
        f"{python.strip()} -m build --wheel --no-isolation -o /tmp/none 2>&1",
        {},
    )
    assert code != 0
    assert "no GPU archs requested: set PYTORCH_ROCM_ARCH or GPU_ARCHS" in log
