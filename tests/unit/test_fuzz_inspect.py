"""Property test: mutated real wheels (a gcc-built library with a .hip_fatbin holding plain and
compressed bundles) give a WheelReport or WheelReadError, nothing else, within a bounded time.
Budget: 400 examples per test (BUILDKIT_FUZZ_EXAMPLES for a longer campaign), 2 s deadline each (about
15 s in all on this machine)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from buildkit.errors import WheelReadError
from buildkit.inspect import WheelReport, inspect_wheel
from tests.helpers.offload_bundle import amdgpu_header, compressed_bundle, plain_bundle
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_zip import write_wheel

WHEEL = "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
FUZZ = settings(
    max_examples=int(os.environ.get("BUILDKIT_FUZZ_EXAMPLES", "400")),
    deadline=2000,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def seed_library(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    if not have_gcc():
        pytest.skip("gcc is needed to build the seed library")
    co = amdgpu_header(0x3F | 0x200, abi_version=2) + b"\0" * 64
    plain = plain_bundle([("host-x86_64-unknown-linux-gnu-", b""), ("hipv4-amdgcn-amd-amdhsa--gfx90a", co)])
    fatbin = plain + b"\0" * (-len(plain) % 4096) + compressed_bundle(plain, method="zlib")
    out = tmp_path_factory.mktemp("seed") / "h.so"
    return build_shared_library(out, "int f(void){return 1;}\n", fatbin=fatbin).read_bytes()


def _check(path: Path) -> None:
    try:
        report = inspect_wheel(path, workers=2)
    except WheelReadError as err:
        assert str(err)
    else:
        assert isinstance(report, WheelReport)


mutation = st.lists(st.tuples(st.integers(min_value=0), st.binary(min_size=1, max_size=16)), max_size=8)


@FUZZ
@given(edits=mutation)
def test_mutated_elf_member(tmp_path: Path, seed_library: bytes, edits: list[tuple[int, bytes]]) -> None:
    data = bytearray(seed_library)
    for at, patch in edits:
        at %= len(data)
        data[at : at + len(patch)] = patch
    _check(write_wheel(tmp_path / WHEEL, {"demo/h.so": bytes(data)}, compression=zipfile.ZIP_STORED))


@FUZZ
@given(edits=mutation, cut=st.integers(min_value=0, max_value=100))
def test_mutated_zip_bytes(
    tmp_path: Path, seed_library: bytes, edits: list[tuple[int, bytes]], cut: int
) -> None:
    write_wheel(tmp_path / WHEEL, {"demo/h.so": seed_library})
    data = bytearray((tmp_path / WHEEL).read_bytes())
    for at, patch in edits:
        at %= len(data)
        data[at : at + len(patch)] = patch
    if cut:
        data = data[: max(1, len(data) * (100 - cut) // 100)]
    (tmp_path / WHEEL).write_bytes(bytes(data))
    _check(tmp_path / WHEEL)
