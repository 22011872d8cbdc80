"""A Python-independent job's wheel retagged to the recipe's tag whatever the backend tagged it
(issue 39, part 2): setuptools tags a wheel with a binary ``cp311-cp311``, and its scikit-build-core
plugin refuses ``wheel.py_api``; the build retags it when the claim holds, as ``wheel tags`` does.
Real parts: gcc-built shared libraries in wheels written here, inspected by the gate's own reader."""

from __future__ import annotations

import dataclasses
import io
import zipfile
from pathlib import Path

import pytest

from buildkit.building import retag
from buildkit.inspect import inspect_wheel
from buildkit.plan.expansion import expand
from buildkit.recipe import parse_recipe
from tests.helpers.shared_library import build_shared_library, have_gcc

pytestmark = [pytest.mark.unit, pytest.mark.skipif(not have_gcc(), reason="needs gcc")]

CTYPES_LIB = "int add(int a, int b) { return a + b; }\n"
EXTENSION = "void *PyInit_demo(void) { return 0; }\n"


def _wheel(tmp_path: Path, source: str, member: str) -> Path:
    lib = build_shared_library(tmp_path / "lib" / "x.so", source)
    wheel = tmp_path / "dist" / "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    wheel.parent.mkdir(parents=True)
    files = {
        member: lib.read_bytes(),
        "demo/__init__.py": b"import ctypes\n",
        "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        "demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: setuptools (80.9.0)\n"
        b"Root-Is-Purelib: false\nTag: cp311-cp311-manylinux_2_28_x86_64\n",
    }
    record = "".join(f"{name},{retag._record_hash(data)},{len(data)}\n" for name, data in files.items())
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(zipfile.ZipInfo(name, (2026, 1, 2, 3, 4, 6)), data)
        archive.writestr(
            zipfile.ZipInfo("demo-1.0.dist-info/RECORD", (2026, 1, 2, 3, 4, 6)),
            record + "demo-1.0.dist-info/RECORD,,\n",
        )
    return wheel


def _job(tmp_path: Path):  # type: ignore[no-untyped-def]
    recipe = parse_recipe(
        "name: demo\nsource: {path: .}\nversion: {base: '1.0'}\npython: ['3.11', '3.13']\nrocm: ['7.2']\n"
        "wheel: {abi: py3-none}\narchs: {list: [gfx942]}\n"
        "manylinux: {policy: manylinux_2_28, sysroot: glibc2.28}\n"
        "image: debian-sid-rocm\n",
        path=tmp_path / "r.yaml",
    )
    return expand(recipe, env={}, enumerator=lambda: []).jobs[0]


def test_a_ctypes_wheel_tagged_cp311_by_setuptools_becomes_py3_none(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, CTYPES_LIB, "demo/libdemo.so")
    job = _job(tmp_path)
    assert job.wheel_tag == "py3-none"
    log = io.StringIO()
    out = retag.to_claim(wheel, job, log)
    assert out.name == "demo-1.0-py3-none-manylinux_2_28_x86_64.whl" and not wheel.exists()
    assert "retagged cp311-cp311 -> py3-none" in log.getvalue()
    with zipfile.ZipFile(out) as archive:
        assert "Tag: py3-none-manylinux_2_28_x86_64\n" in archive.read("demo-1.0.dist-info/WHEEL").decode()
        assert [i.date_time for i in archive.infolist()] == [(2026, 1, 2, 3, 4, 6)] * 5
        # every RECORD row's hash and size are the member's (the rewritten WHEEL's too), as pip checks
        for row in archive.read("demo-1.0.dist-info/RECORD").decode().splitlines():
            path, digest, size = row.rsplit(",", 2)
            if digest:
                data = archive.read(path)
                assert (digest, int(size)) == (retag._record_hash(data), len(data)), path
    assert inspect_wheel(out).wheel_tags == ("py3-none-manylinux_2_28_x86_64",)
    assert retag.to_claim(out, job, log) == out  # already tagged: untouched


def test_a_wheel_whose_claim_does_not_hold_is_left_for_the_gate(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, EXTENSION, "demo/demo.so")
    log = io.StringIO()
    assert retag.to_claim(wheel, _job(tmp_path), log) == wheel and wheel.exists()
    assert "not retagged py3-none: demo/demo.so exports PyInit_demo" in log.getvalue()
    cpython = dataclasses.replace(_job(tmp_path), wheel_tag=None)  # a per-Python job: never retagged
    assert retag.to_claim(wheel, cpython, log) == wheel
