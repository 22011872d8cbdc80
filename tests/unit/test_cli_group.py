"""The ``buildkit`` group: ``--help`` lists every command without importing any of them."""

from __future__ import annotations

import json
import subprocess
import sys

from buildkit.cli import COMMANDS

# one table names each command's module and its --help summary: a command cannot lack one
SUMMARIES = {name: summary for name, (_target, summary) in COMMANDS.items()}

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
    assert all(s and len(s) <= 65 for s in SUMMARIES.values())


def test_help_lists_every_command_and_imports_none() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    listed = proc.stdout.split("Commands:", 1)[1]
    for name, summary in SUMMARIES.items():
        assert f"  {name}" in listed and summary in listed
    imported = json.loads(proc.stderr.strip().splitlines()[-1])
    assert imported == [], f"buildkit --help imported {imported}"


def test_verify_rebuilds_without_the_compiler_cache_by_default() -> None:
    # a rebuild served from the ccache volume the first build filled would not exercise the compiler's
    # determinism: --cache opts in (tests/docker/test_verify.py runs both)
    from buildkit.cli.verify import verify
    from buildkit.service.verify import verify_rebuild

    [option] = [p for p in verify.params if p.name == "use_cache"]
    assert option.default is False and "--cache" in option.opts and "--no-cache" in option.secondary_opts
    assert verify_rebuild.__kwdefaults__ is not None and verify_rebuild.__kwdefaults__["use_cache"] is False


def test_cli_exclusion_set_choices_are_the_rocm_data_sets() -> None:
    # --exclude-set's choices are static (no data loaded to build the CLI): they must not drift from
    # buildkit/rocm/libraries.yaml, which the recipe schema is checked against too (test_recipe.py)
    from buildkit.gate.options import EXCLUDE_SETS
    from buildkit.rocm import library_sets

    assert sorted(EXCLUDE_SETS) == sorted(library_sets())
