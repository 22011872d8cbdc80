"""Golden file for the summary ``buildkit build`` prints on stdout (tests/data/golden/build-summary.txt):
one job of each status (passed with a warning, a waived finding and its compiler cache's hits, up to
date, gate-failed with its wheel kept apart and the stale folder removed, build-failed with a log
outside the working directory, interrupted), then the next steps.
``BUILDKIT_REGEN_GOLDEN=1`` rewrites it. The e2e build tests (tests/docker) check the same summary
on real builds; this file pins its layout and wording."""

from __future__ import annotations

import os
from pathlib import Path

from buildkit.building.ccache import CacheStats
from buildkit.building.job import JobResult
from buildkit.building.summary import render_summary

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden" / "build-summary.txt"
REGEN = os.environ.get("BUILDKIT_REGEN_GOLDEN") == "1"


def test_build_summary(tmp_path: Path) -> None:
    out, logs = tmp_path / "dist", tmp_path / "build" / "logs"
    name = "amd_aiter-0.1.12.post2+rocm7.2.manylinux.2.28-cp312-cp312-manylinux_2_28_x86_64.whl"
    results = [
        JobResult(
            "cp312-rocm7.2-torch2.10",
            "passed",
            out / "cp312-rocm7.2-torch2.10" / name,
            812.4,
            log=logs / "cp312-rocm7.2-torch2.10.log",
            gate="PASS",
            warnings=1,
            waived=1,
            waivers=("gate.waive[0] (rocm-soname, library libfoo.so.1): 1 finding waived: vendor keeps 5.x",),
            compiler_cache=CacheStats(hits=412, misses=3),
        ),
        JobResult(
            "cp311-rocm7.2-torch2.10",
            "up-to-date",
            out / "cp311-rocm7.2-torch2.10" / name.replace("cp312", "cp311"),
            0.3,
            gate="PASS",
        ),
        JobResult(
            "cp313-rocm7.2-torch2.10",
            "gate-failed",
            None,
            790.0,
            log=logs / "cp313-rocm7.2-torch2.10.log",
            gate="FAIL",
            errors=2,
            warnings=3,
            removed=out / "cp313-rocm7.2-torch2.10",
            refused=out / ".refused" / "cp313-rocm7.2-torch2.10" / name.replace("cp312", "cp313"),
            examine=(
                f"buildkit check dist/.refused/cp313-rocm7.2-torch2.10/{name.replace('cp312', 'cp313')} "
                "--recipe recipes/aiter.yaml --job cp313-rocm7.2-torch2.10"
            ),
        ),
        JobResult(
            "cp310-rocm7.2-torch2.10", "build-failed", None, 61.0, log=Path("/var/log/buildkit/cp310.log")
        ),
        JobResult(
            "cp314-rocm7.2-torch2.10", "interrupted", None, 12.5, log=logs / "cp314-rocm7.2-torch2.10.log"
        ),
    ]
    text = render_summary(results, recipe="recipes/aiter.yaml", out_dir=out, cwd=tmp_path) + "\n"
    if REGEN:
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8"), f"regenerate with BUILDKIT_REGEN_GOLDEN=1 ({GOLDEN})"
