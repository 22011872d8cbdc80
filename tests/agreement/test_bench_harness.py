"""The benchmark harness itself (bench/check_vs_auditwheel.py) on wheels built here, so that it cannot
rot between the runs on the real PyPI wheels (hundreds of MB, not fetched in CI).

Timing figures are not asserted (2 shared cores are too noisy for that: speed is the benchmark's
business); what is asserted is that every contestant ran, that the figures are coherent with each
other, and that the harness compares the verdicts (and reports disagreement)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "check_vs_auditwheel.py"


def _run(cache: Path, wheels: list[Path]) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    env = {**os.environ, "BUILDKIT_BENCH_CACHE": str(cache)}
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--repeat", "1", "--wheels", *map(str, wheels)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return proc, json.loads((cache / "last-results.json").read_text())


def test_harness_measures_and_agrees(tmp_path: Path, wheels: dict[str, Path]) -> None:
    picked = [wheels["glibcxx_new"], wheels["grafted"], wheels["external_lib"]]
    proc, results = _run(tmp_path / "cache", picked)
    rows = {r["wheel"]: r for r in results["rows"]}
    assert set(rows) == {w.name for w in picked}
    for row in rows.values():
        assert row["set"] == "comparison"
        assert row["auditwheel_error"] is None and row["check_error"] is None
        assert row["agree"] == {"sym_tag": True, "external": True, "overall": True}, row
        assert row["check_written"] == 0
        assert row["auditwheel_written"] > 0  # auditwheel extracts the wheel: the probe sees it
        # the bound inflates what check reads, spread over the CPUs, without start-up: never slower
        assert 0 < row["bound_s"] <= row["bound_inflate_s"] <= row["check_s"]
        assert row["floor_bytes"] > 0 and row["check_bytes_read"] > 0
    assert rows[wheels["external_lib"].name]["check_exit"] == 7  # a non-whitelisted library: gate fails
    targets = results["targets"]
    assert targets["comparison set: symbol verdicts and external libraries agree on every wheel"] is True
    assert targets["every wheel: check writes nothing"] is True
    assert "-- comparison set" in proc.stdout and "aw/bound" in proc.stdout
    assert proc.returncode == (0 if all(targets.values()) else 1)


def test_harness_reports_disagreement(tmp_path: Path, wheels: dict[str, Path]) -> None:
    # a fake auditwheel answering a different sym_tag: the harness must say NO and exit 1
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    fake = fake_bin / "auditwheel"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--help" ]; then exit 0; fi\n'
        'echo \'{"version": 1, "sym_tag": "manylinux_2_5_x86_64", "overall_tag": '
        '"manylinux_2_5_x86_64", "external_libs": {}}\'\n'
    )
    fake.chmod(0o755)
    env_path = f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}"
    cache = tmp_path / "cache"
    env = {**os.environ, "BUILDKIT_BENCH_CACHE": str(cache), "PATH": env_path}
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--repeat", "1", "--wheels", str(wheels["glibcxx_new"])],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    row = json.loads((cache / "last-results.json").read_text())["rows"][0]
    assert row["agree"]["sym_tag"] is False
    assert "NO," in proc.stdout
    assert "MISS  comparison set: symbol verdicts and external libraries agree on every wheel" in proc.stdout
