"""buildkit/service/: the sequences of stage calls the commands make, written once (issue 26, item 6).

A recipe's plan is loaded, expanded and given the runtime images' ceilings reader in one place,
:mod:`buildkit.service.plan`; ``build``, ``plan``, ``check --recipe --job``, ``verify`` and ``publish
--recipe`` all take it from there, so a job's ceilings are the same whichever command expands it.

A command whose command has a service (``cli/X.py`` beside ``service/X.py``) calls one function of it
and none of the steps it makes: the sequence is written in the service only."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
from pathlib import Path

import pytest
import tomllib

from buildkit.errors import DockerUnavailable
from buildkit.recipe import load_recipe
from buildkit.service import plan as service_plan

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "buildkit"

#: modules outside buildkit/plan/ that may expand a recipe themselves, and why
EXPANDS_ITSELF = {
    # the library default of publish() without a command behind it (no runtime images' ceilings);
    # `buildkit publish --recipe` injects service.plan.plan_of
    "buildkit/publish/trust.py",
}


def _imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_the_plan_sequence_is_written_once() -> None:
    """Only service/plan.py expands a recipe with the image reader: no command, service or stage
    imports ``expand`` or ``ceilings_from_images`` besides it."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("buildkit/plan/") or rel in {"buildkit/service/plan.py", *EXPANDS_ITSELF}:
            continue
        used = {
            name
            for name in _imports_of(path)
            if name in ("buildkit.plan.expansion.expand", "buildkit.image.ceilings.ceilings_from_images")
        }
        if used:
            found[rel] = sorted(used)
    assert found == {}


#: the commands with a service of their own: each service module is one command's
SERVICES = sorted(p.stem for p in (PACKAGE / "service").glob("*.py") if p.stem != "__init__")


def _below_service() -> tuple[str, ...]:
    """Every layer the import contract (pyproject.toml) puts below ``service``: what a service's steps
    are made of."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    below = layers[layers.index("service") + 1 :]
    return tuple(f"buildkit.{name.strip()}" for layer in below for name in layer.split("|"))


STAGES = _below_service()


def _used_of(path: Path) -> set[str]:
    """What ``path`` takes from other modules: the names it imports (:func:`_imports_of`) and the
    attributes it reads of a module it imports (``smoking.run_smoke`` after ``from buildkit import
    smoke as smoking``: ``buildkit.smoke.run_smoke``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if _is_module(f"{node.module}.{alias.name}"):
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:  # import a.b as x binds a.b; import a.b binds a
                modules[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
    used = _imports_of(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            used.add(f"{modules[node.value.id]}.{node.attr}")
    return used


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _functions(names: set[str]) -> set[str]:
    """The names among ``names`` (``module.attr``) that are functions (not a class, record, constant
    or module)."""
    found = set()
    for name in names:
        module, _, attr = name.rpartition(".")
        if module.startswith("buildkit"):
            value = getattr(importlib.import_module(module), attr, None)
            if inspect.isfunction(value):
                found.add(name)
    return found


def test_every_service_is_a_command() -> None:
    assert {"build", "check", "publish"} <= set(SERVICES)
    assert all((PACKAGE / "cli" / f"{name}.py").is_file() for name in SERVICES)


@pytest.mark.parametrize("command", SERVICES)
def test_a_command_calls_its_service_and_loads_no_recipe_itself(command: str) -> None:
    imports = _imports_of(PACKAGE / "cli" / f"{command}.py")
    assert any(name.startswith(f"buildkit.service.{command}.") for name in imports), sorted(imports)
    assert "buildkit.recipe.load_recipe" not in imports


@pytest.mark.parametrize("command", SERVICES)
def test_a_command_makes_one_service_call_and_none_of_its_steps(command: str) -> None:
    """cli/X.py takes from buildkit/service/ one function, of service/X.py, and imports none of the
    stage functions service/X.py imports: the steps it strings together are written there only.
    (Before issue 26's last step, cli/check.py also took ``service.plan.image_ceilings`` and called
    ``check_wheels``, ``find_wheels`` and ``gather`` itself; cli/publish.py had no service.)"""
    imports = _used_of(PACKAGE / "cli" / f"{command}.py")
    services = {name for name in imports if name.startswith("buildkit.service.")}
    assert {name.rsplit(".", 1)[0] for name in services} == {f"buildkit.service.{command}"}
    assert len(_functions(services)) == 1, sorted(_functions(services))
    steps = _functions(
        {name for name in _used_of(PACKAGE / "service" / f"{command}.py") if name.startswith(STAGES)}
    )
    assert steps, f"service/{command}.py calls no stage"
    assert sorted(_functions(imports) & steps) == []


def test_no_command_strings_services_together() -> None:
    """No command module takes functions from two service modules (one sequence per command)."""
    found = {}
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        modules = {
            name.rsplit(".", 1)[0]
            for name in _functions({n for n in _imports_of(path) if n.startswith("buildkit.service.")})
        }
        if len(modules) > 1:
            found[path.name] = sorted(modules)
    assert found == {}


def _from_image_recipe(tmp_path: Path) -> Path:
    (tmp_path / "setup.py").write_text("")
    path = tmp_path / "r.yaml"
    path.write_text(
        "name: demo\nsource: {path: .}\nversion: {base: '1.0'}\npython: ['3.12']\nrocm: ['6.4']\n"
        "archs: {list: [gfx90a]}\nmanylinux:\n  policy: manylinux_2_28\n  ceilings:\n"
        "    from_image: debian:bookworm-slim\nimage: manylinux_2_28-rocm\n"
    )
    return path


def test_load_plan_injects_the_image_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader load_plan gives the plan asks the Docker engine (here: one that does not exist); the
    plan layer without it refuses a from_image recipe as a caller's bug."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    path = _from_image_recipe(tmp_path)
    with pytest.raises(DockerUnavailable, match=r"no-engine\.sock"):
        service_plan.load_plan(path, env={})
    with pytest.raises(ValueError, match="needs a ceilings_reader"):
        service_plan.plan_of(load_recipe(path), env={}, ceilings_reader=None)


def test_load_plan_is_the_recipe_and_its_plan(tmp_path: Path) -> None:
    path = _from_image_recipe(tmp_path)
    loaded = service_plan.load_plan(path, env={}, ceilings_reader=lambda images: {"GLIBC": "2.36"})
    assert loaded.recipe.name == "demo"
    assert [j.id for j in loaded.plan.jobs] == ["cp312-rocm6.4"]
    assert loaded.job("cp312-rocm6.4").ceilings["GLIBC"] == "2.28"  # the policy's, below the image's
