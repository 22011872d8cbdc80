"""``./dev test`` runs lint and then every test tier; ``./dev unit|integration|docker`` one of them.

The script runs for real with stand-ins on PATH for what it calls: ``python3`` (pip and pytest) and the
linters record their arguments, ``id`` says "not root" so that no Debian package is installed and no
Docker engine started (those steps are ci/install-docker.sh's, tested on the real engine). The pytest
stand-in answers with ``$FAKE_PYTEST_STATUS`` for the tier named in it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import TIERS

ROOT = Path(__file__).resolve().parents[2]

RECORDER = """#!/bin/sh
echo "$(basename "$0")${*:+ $*}" >> "$CALLS"
case "$*" in
  *"-m pytest"*"-m $FAKE_FAILING_TIER"*) exit "$FAKE_PYTEST_STATUS" ;;
esac
exit 0
"""


def run_dev(tmp_path: Path, *args: str, failing: str = "none", status: int = 0) -> tuple[int, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("python3", "ruff", "mypy", "lint-imports"):
        (bin_dir / tool).write_text(RECORDER)
        (bin_dir / tool).chmod(0o755)
    (bin_dir / "id").write_text("#!/bin/sh\necho 1000\n")
    (bin_dir / "id").chmod(0o755)
    calls = tmp_path / "calls"
    calls.write_text("")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "CALLS": str(calls),
        "FAKE_FAILING_TIER": failing,
        "FAKE_PYTEST_STATUS": str(status),
    }
    env.pop("BUILDKIT_TEST_WORKERS", None)
    proc = subprocess.run(
        ["bash", str(ROOT / "dev"), *args], env=env, capture_output=True, text=True, timeout=60
    )
    return proc.returncode, calls.read_text().splitlines()


def test_dev_test_lints_then_runs_every_tier_with_the_arguments(tmp_path: Path) -> None:
    code, calls = run_dev(tmp_path, "test", "-k", "publish", "-x")
    assert code == 0
    assert calls == [
        "python3 -m pip install -q --disable-pip-version-check -e .[dev]",
        "ruff check buildkit tests bench",
        "ruff format --check buildkit tests bench",
        "mypy",
        "lint-imports",
        "python3 -m pytest -q -m unit -n auto -k publish -x",
        "python3 -m pytest -q -m integration -k publish -x",
        "python3 -m pytest -q -m docker -k publish -x",
    ]
    # the tiers tests/conftest.py marks are the ones ./dev test runs
    assert {call.split(" -m ")[2].split()[0] for call in calls if "-m pytest" in call} == TIERS


def test_a_failing_tier_stops_the_run_with_its_status(tmp_path: Path) -> None:
    code, calls = run_dev(tmp_path, "test", failing="unit", status=1)
    assert code == 1
    assert calls[-1] == "python3 -m pytest -q -m unit -n auto"


@pytest.mark.parametrize(("args", "code"), [((), 5), (("-k", "nothing"), 0)])
def test_a_tier_without_tests_fails_unless_arguments_narrowed_it(
    tmp_path: Path, args: tuple[str, ...], code: int
) -> None:
    status, calls = run_dev(tmp_path, "test", *args, failing="integration", status=5)
    assert status == code
    assert sum("-m pytest" in call for call in calls) == (3 if code == 0 else 2)


def test_own_marker_expression_is_one_pytest_run(tmp_path: Path) -> None:
    code, calls = run_dev(tmp_path, "test", "-m", "unit and not slow")
    assert code == 0
    assert [call for call in calls if "-m pytest" in call] == ["python3 -m pytest -q -m unit and not slow"]


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_one_tier(tmp_path: Path, tier: str) -> None:
    code, calls = run_dev(tmp_path, tier, "tests/x.py")
    assert code == 0
    workers = " -n auto" if tier == "unit" else ""
    assert calls == [
        "python3 -m pip install -q --disable-pip-version-check -e .[dev]",
        f"python3 -m pytest -q -m {tier}{workers} tests/x.py",
    ]


def test_lint_alone(tmp_path: Path) -> None:
    code, calls = run_dev(tmp_path, "lint")
    assert code == 0
    assert [call.split()[0] for call in calls] == ["python3", "ruff", "ruff", "mypy", "lint-imports"]
