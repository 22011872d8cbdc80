"""The ``buildkit`` group: ``--help`` lists every command without importing any of them."""

from __future__ import annotations

import json
import subprocess
import sys

from buildkit.cli import COMMANDS, SUMMARIES

PROBE = """
import json, sys
from buildkit.cli import main
try:
    main(["--help"])
except SystemExit:
    pass
third_party = ("docker", "auditwheel", "cibuildwheel", "elftools")
ours = ("buildkit.cli", "buildkit.errors")
heavy = sorted(m for m in sys.modules
               if m.split(".")[0] in third_party or (m.startswith("buildkit.") and m not in ours))
print(json.dumps(heavy), file=sys.stderr)
"""


def test_every_command_has_a_summary() -> None:
    assert set(SUMMARIES) == set(COMMANDS)
    assert all(s and len(s) <= 65 for s in SUMMARIES.values())


def test_help_lists_every_command_and_imports_none() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    listed = proc.stdout.split("Commands:", 1)[1]
    for name, summary in SUMMARIES.items():
        assert f"  {name}" in listed and summary in listed
    imported = json.loads(proc.stderr.strip().splitlines()[-1])
    assert imported == [], f"buildkit --help imported {imported}"
