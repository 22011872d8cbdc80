"""The test helper that builds shared libraries copies one it already built: what it copies is what gcc
would make again (the libraries carry no path), and it does not run gcc for it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import shared_library
from tests.helpers.shared_library import build_shared_library, have_gcc

pytestmark = pytest.mark.skipif(not have_gcc(), reason="gcc is needed to build test libraries")
SOURCE = "int shared_library_helper_probe(void){return 7;}\n"


def build(out: Path) -> Path:
    return build_shared_library(
        out, SOURCE, soname="libprobe.so.1", rpath="$ORIGIN", fatbin=b"\x01" * 64, libs=("m",)
    )


def test_a_library_built_again_is_copied_and_is_what_gcc_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = build(tmp_path / "a" / "libprobe.so").read_bytes()

    def no_compiler(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"gcc ran again: {args}")

    with monkeypatch.context() as patched:
        patched.setattr(subprocess, "run", no_compiler)
        copy = build(tmp_path / "b" / "other.so")
    assert copy.read_bytes() == first
    assert copy.stat().st_mode & 0o111

    # gcc run afresh in another folder makes the same bytes: the copy is no stale stand-in
    monkeypatch.setattr(shared_library, "_BUILT", {})
    fresh = build(tmp_path / "c" / "x" / "fresh.so")
    assert fresh.read_bytes() == first


def test_other_options_are_another_library(tmp_path: Path) -> None:
    one = build_shared_library(tmp_path / "one.so", SOURCE, soname="libone.so").read_bytes()
    two = build_shared_library(tmp_path / "two.so", SOURCE, soname="libtwo.so").read_bytes()
    assert b"libone.so" in one and b"libtwo.so" in two and b"libone.so" not in two
