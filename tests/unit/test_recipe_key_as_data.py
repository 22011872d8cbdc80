"""A per-job recipe key that the gate enforces is data in the files docs/ARCHITECTURE.md lists (issue 37).

The test adds a key, ``example_mode``, to a copy of ``buildkit/`` in a temporary folder, editing only
the files that "Where a new recipe key goes" names: the schema, a section module and its line in
``SECTIONS``, the ``Recipe`` field, the ``Job`` field and the line of the expansion that sets it,
the ``GateConfig`` field and its row of ``OPTIONS``. A recipe giving the key is then planned and gated
by that copy (in a child Python, so this process's modules stay the real ones): the value reaches
the job, the job's JSON, the gate configuration ``build`` uses, and its command-line option
replaces it by the row's merge rule.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
KEY = "example_mode"
SECTION = '''"""The recipe's ``example_mode:`` (added by a test)."""

from buildkit.recipe.section import Context, Section


def _parse(ctx: Context) -> str | None:
    value = ctx.data.get("example_mode")
    return None if value is None else str(value)


SECTION = Section("example_mode", ("example_mode",), _parse, "example_mode")
'''
ROW = """    GateOption(
        "--example-mode",
        "example_mode",
        "example_mode",
        "replace",
        "An example setting added by a test (replaces the job's).",
        recipe="example_mode",
        loads="job.example_mode",
    ),
)
"""
#: what the child Python prints: the key as the job, its JSON and the gate configuration hold it
PROBE = """
import json, sys
from pathlib import Path
from buildkit.gate.config import GateConfig, gate_key
from buildkit.gate.options import GateFlags, apply_options
from buildkit.plan.expansion import expand
from buildkit.recipe import load_recipe
from buildkit.records import to_data
recipe = load_recipe(Path(sys.argv[1]))
job = expand(recipe, env={}).jobs[0]
config = GateConfig.from_job(job, recipe)
given = apply_options(config, GateFlags(example_mode="strict"))
print(json.dumps({"job": job.example_mode, "json": to_data(job).get("example_mode"),
                  "config": config.example_mode, "key": gate_key(config).get("example_mode"),
                  "given": given.example_mode}))
"""


def _insert(path: Path, anchor: str, text: str, *, after: bool = True) -> None:
    """``text`` next to the one ``anchor`` of ``path``."""
    body = path.read_text(encoding="utf-8")
    assert body.count(anchor) == 1, (path, anchor)
    path.write_text(body.replace(anchor, anchor + text if after else text + anchor), encoding="utf-8")


def _add_the_key(pkg: Path) -> None:
    schema_path = pkg / "schema" / "recipe.schema.json"
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    schema["properties"][KEY] = {"description": "An example key added by a test.", "type": "string"}
    schema_path.write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
    (pkg / "recipe" / "sections" / f"{KEY}.py").write_text(SECTION, encoding="utf-8")
    sections = pkg / "recipe" / "sections" / "__init__.py"
    _insert(sections, "    env,\n", f"    {KEY},\n")
    _insert(sections, "    size_budget.SECTION,\n", f"    {KEY}.SECTION,\n")
    _insert(
        pkg / "recipe" / "model.py",
        "    torch_stable: TorchStable | None = None\n",
        f"    {KEY}: str | None = None\n",
    )
    models = pkg / "plan" / "models.py"
    _insert(models, "    torch_stable: TorchStable | None = None\n", f"    {KEY}: str | None = None\n")
    # in the job's JSON only when set: the inputs keys of the jobs without it stay what they were
    _insert(
        models, '        "torch_stable": (\n', f'        "{KEY}": Key("{KEY}", omit="none"),\n', after=False
    )
    _insert(
        pkg / "plan" / "expansion.py",
        "            torch_stable=stable,\n",
        f"            {KEY}=recipe.{KEY},\n",
    )
    _insert(
        pkg / "gate" / "config.py", "    isa_baseline: str | None = None\n", f"    {KEY}: str | None = None\n"
    )
    options = pkg / "gate" / "options.py"
    body = options.read_text(encoding="utf-8")
    end = body.index("\n)\n", body.index("OPTIONS: tuple[GateOption, ...] = ("))
    options.write_text(body[: end + 1] + ROW + body[end + 3 :], encoding="utf-8")


def _listed() -> set[str]:
    """The ``buildkit/`` files "Where a new recipe key goes" names (``<key>`` standing for the key)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## Where a new recipe key goes", 1)[1].split("\n## ", 1)[0]
    return {p.replace("<key>", KEY) for p in re.findall(r"`(buildkit/[\w/<>.-]+\.(?:py|json))`", section)}


@pytest.fixture
def with_key(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "buildkit", tmp_path / "buildkit", ignore=shutil.ignore_patterns("__pycache__"))
    _add_the_key(tmp_path / "buildkit")
    return tmp_path


def _changed(copy: Path) -> list[str]:
    out = []
    for path in sorted((copy / "buildkit").rglob("*")):
        if path.is_file():
            rel = path.relative_to(copy).as_posix()
            original = ROOT / rel
            if not original.is_file() or original.read_bytes() != path.read_bytes():
                out.append(rel)
    return out


def test_the_key_touches_only_the_files_the_architecture_lists(with_key: Path) -> None:
    changed = _changed(with_key)
    assert set(changed) <= _listed(), sorted(set(changed) - _listed())
    # every file listed is needed: the key touches each of them
    assert set(changed) == _listed() - {"buildkit/recipe/__init__.py"}


def test_the_key_reaches_the_job_and_the_gate(with_key: Path) -> None:
    recipe = with_key / "recipe.yaml"
    text = (ROOT / "recipes" / "reference.yaml").read_text(encoding="utf-8")
    source = (ROOT / "recipes").resolve()
    text = re.sub(
        r"(?m)^(\s+path:\s*)(\S+)", lambda m: m.group(1) + str((source / m.group(2)).resolve()), text, count=1
    )
    recipe.write_text(text + f"{KEY}: lenient\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(recipe)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(with_key), "BUILDKIT_DOCKER_DIR": str(ROOT / "docker")},
        cwd=with_key,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "job": "lenient",
        "json": "lenient",
        "config": "lenient",
        "key": "lenient",
        "given": "strict",
    }
