"""``buildkit check`` starts fast because it loads only what gating a wheel needs: with any of its
flags (sizes, archs, exclusion sets, a policy, a ROCm pin) it must not import the recipe layer,
jsonschema, the Docker SDK, cibuildwheel or cryptography (each costs tens to hundreds of
milliseconds, more than the gate's own work on most wheels; bench/corpus.py measures the effect
against auditwheel). Run in a fresh interpreter, as a user's command is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers.wheel_zip import write_wheel

#: PyYAML is not here: buildkit's ROCm data is YAML, read for --archs, --rocm and --exclude-set
HEAVY = ("buildkit.recipe", "jsonschema", "docker", "cibuildwheel", "cryptography", "buildkit.image")
SCRIPT = """
import sys, json
from buildkit.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = {heavy}
loaded = [m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy)]
print(json.dumps(sorted(loaded)), file=sys.stderr)
"""


def test_check_with_every_flag_loads_nothing_heavy(tmp_path: Path) -> None:
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    write_wheel(wheel, {"demo/__init__.py": b""})
    flags = [
        "--json",
        "--size-warn",
        "1GiB",
        "--size-limit",
        "2GiB",
        "--archs",
        "gfx90a",
        "--exclude-set",
        "rocm",
    ]
    flags += ["--rocm", "6.4", "--policy", "manylinux_2_28", "--max-glibc", "2.28"]
    heavy = repr(set(HEAVY))
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.replace("{heavy}", heavy), "check", *flags, str(wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    loaded = json.loads(proc.stderr.strip().splitlines()[-1])
    assert '"schema": "rocm-buildkit/check-report"' in proc.stdout, proc.stderr
    assert loaded == [], f"buildkit check imported {loaded}"


#: a plain ``check`` defines no dataclass and does not import :mod:`dataclasses`: defining a frozen
#: dataclass costs ~1.5 ms on Python 3.11 (six generated methods, each compiled), so the reader's and
#: the gate's value records are NamedTuples (~0.2 ms); the module itself loads ``copy``, whose
#: failed ``org.python.core`` import walks every path entry
COUNT_SCRIPT = """
import json, sys
from buildkit.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
found = sorted(
    f"{name}.{attr}"
    for name, module in list(sys.modules.items())
    if name.startswith("buildkit")
    for attr, value in vars(module).items()
    if isinstance(value, type) and hasattr(value, "__dataclass_fields__") and value.__module__ == name
)
print(json.dumps({"dataclasses": found, "imported": "dataclasses" in sys.modules}), file=sys.stderr)
"""


def test_check_defines_no_dataclass(tmp_path: Path) -> None:
    """A dataclass on the check path costs every ``buildkit check`` ~1.5 ms of start-up (a record
    there should be a NamedTuple): a plain check defines none and never imports the module."""
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    write_wheel(wheel, {"demo/__init__.py": b""})
    proc = subprocess.run(
        [sys.executable, "-c", COUNT_SCRIPT, "check", str(wheel)], capture_output=True, text=True, check=False
    )
    seen = json.loads(proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stdout + proc.stderr  # the pure wheel passes
    assert seen == {"dataclasses": [], "imported": False}, seen
