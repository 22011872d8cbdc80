"""An existing project as ``buildkit init`` and ``buildkit plan`` see it: read, never run
(:func:`read_project`).

:data:`_CIBW_TRANSLATION` says which recipe key does each cibuildwheel option's job;
:func:`_render_recipe` writes the commented recipe of ``buildkit init``, and
:func:`cibuildwheel_notes` the plan notes for settings the recipe overrides (rocm-buildkit sets every
cibuildwheel option itself, so a project's own table never takes effect).
"""

from __future__ import annotations

import ast
import configparser
import json
import os
import re
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from buildkit import profiles
from buildkit import rocm as rocm_data
from buildkit.errors import UsageError
from buildkit.fsutil import atomic_write
from buildkit.policy import policies
from buildkit.recipe import cibuildwheel_pythons, parse_recipe
from buildkit.rocm import install as rocm_install
from buildkit.source.version import VersionDecision, decide_version

if TYPE_CHECKING:
    from buildkit.recipe import Recipe

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: cibuildwheel option -> the recipe key that does its job (None: nothing to translate; the reason)
_CIBW_TRANSLATION: Mapping[str, tuple[str | None, str]] = {
    "build": ("python", "the CPython versions of the python: list"),
    "before-all": ("before_all", "run once in the build container (system packages: image.packages)"),
    "before-build": ("before_build", "run before each wheel's build"),
    "config-settings": ("config_settings", "PEP 517 config settings"),
    "build-frontend": ("build_frontend", "build, build[uv], pip or uv"),
    "environment": ("env", "literal values: $VAR is never expanded"),
    "test-command": ("test_command", "run on the repaired wheel in the builder"),
    "test-requires": ("test_requires", "installed before test_command"),
    "skip": (None, "use matrix.exclude (with a reason) or leave the Python out of python:"),
    "archs": (None, "rocm-buildkit builds x86_64 wheels"),
    "manylinux-x86_64-image": (None, "image: a profile, image.dockerfile or image.ref"),
    "repair-wheel-command": (
        None,
        "rocm-buildkit runs auditwheel repair itself: list what the ROCm runtime provides in repair.exclude",
    ),
    "environment-pass": (None, "the host's environment never reaches the build"),
    "test-skip": (None, "the recipe's test_command runs for every job"),
    "test-extras": (None, "name the extras in test_requires"),
    "test-groups": (None, "name the requirements in test_requires"),
    "before-test": (None, "put it at the front of test_command"),
    "build-verbosity": (None, "buildkit build -v streams the build log"),
    "dependency-versions": (None, "the build requirements are resolved and locked on the host"),
    "container-engine": (None, "rocm-buildkit drives Docker"),
    "manylinux-x86_64-image-tag": (None, "image:"),
    "free-threaded-support": (None, "not built"),
    "enable": (None, "the recipe's python: list says which CPythons are built"),
    "overrides": (None, "write the jobs' differences as matrix axes or exclude rules"),
}
_INSTALLERS = re.compile(r"\b(yum|dnf|apt-get|apt)\s+(-\S+\s+)*install\b")
#: a hook command that downloads: the build container of a hermetic build (``network: false``) has no network
_DOWNLOADS = re.compile(
    r"\b(curl|wget|git\s+clone|(pip|pip3|uv\s+pip)\s+install|conda\s+install)\b|" + _INSTALLERS.pattern
)
_CP = re.compile(r"\bcp3(\d+)")


@dataclass(frozen=True)
class Project:
    """What :func:`read_project` found in a source tree."""

    tree: Path
    name: str | None
    name_from: str  # where the name was read: "pyproject.toml [project] name", "setup.py", ...
    backend: str | None  # "setuptools.build_meta", "scikit_build_core.build", ...
    build_requires: tuple[str, ...]
    requires_python: str | None
    version: VersionDecision
    #: [tool.cibuildwheel] with [tool.cibuildwheel.linux] over it (options with cibuildwheel's names)
    cibuildwheel: Mapping[str, Any] = field(default_factory=dict)

    @property
    def needs_torch(self) -> bool:
        return any(_req_name(r) == "torch" for r in self.build_requires)

    @property
    def uses_cmake(self) -> bool:
        scikit_build = self.backend is not None and "scikit_build" in self.backend
        return scikit_build or (self.tree / "CMakeLists.txt").is_file()


def _req_name(text: str) -> str | None:
    try:
        return canonicalize_name(Requirement(text).name)
    except InvalidRequirement:
        return None


def _toml(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    return data


def _setup_py_name(text: str) -> str | None:
    try:
        module = ast.parse(text)
    except SyntaxError:
        return None
    for node in ast.walk(module):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == "setup"
        ):
            for kw in node.keywords:
                if (
                    kw.arg == "name"
                    and isinstance(kw.value, ast.Constant)
                    and isinstance(kw.value.value, str)
                ):
                    return kw.value.value
    return None


def _name(tree: Path, pyproject: Mapping[str, Any]) -> tuple[str | None, str]:
    name = pyproject.get("project", {}).get("name") or pyproject.get("tool", {}).get("poetry", {}).get("name")
    if isinstance(name, str):
        return name, "pyproject.toml [project] name"
    setup_py = tree / "setup.py"
    if setup_py.is_file():
        found = _setup_py_name(setup_py.read_text(encoding="utf-8", errors="replace"))
        if found:
            return found, "setup.py setup(name=...)"
    cfg = tree / "setup.cfg"
    if cfg.is_file():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(cfg, encoding="utf-8")
            if parser.has_option("metadata", "name"):
                return parser.get("metadata", "name"), "setup.cfg [metadata] name"
        except configparser.Error:
            pass
    pkg_info = tree / "PKG-INFO"
    if pkg_info.is_file():
        m = re.search(r"(?m)^Name:[ \t]*(\S+)", pkg_info.read_text(encoding="utf-8", errors="replace"))
        if m:
            return m.group(1), "PKG-INFO Name"
    return None, "nowhere (no [project] name, setup(name=...), setup.cfg or PKG-INFO)"


def read_project(tree: Path) -> Project:
    """Read the project in ``tree``; a folder with neither pyproject.toml nor setup.py is a UsageError."""
    if not (tree / "pyproject.toml").is_file() and not (tree / "setup.py").is_file():
        raise UsageError(f"{tree}: no pyproject.toml or setup.py here: give the folder of the project")
    pyproject = _toml(tree / "pyproject.toml")
    system = pyproject.get("build-system", {})
    requires = tuple(str(r) for r in system.get("requires", []) if isinstance(r, str))
    backend = system.get("build-backend")
    if backend is None and (tree / "setup.py").is_file():
        backend = "setuptools.build_meta:__legacy__"
    tool = pyproject.get("tool", {}).get("cibuildwheel", {})
    cibw = {k: v for k, v in tool.items() if k not in ("linux", "macos", "windows", "ios", "pyodide")}
    cibw.update(tool.get("linux", {}) if isinstance(tool.get("linux"), dict) else {})
    name, name_from = _name(tree, pyproject)
    requires_python = pyproject.get("project", {}).get("requires-python")
    return Project(
        tree=tree,
        name=name,
        name_from=name_from,
        backend=str(backend) if backend else None,
        build_requires=requires,
        requires_python=str(requires_python) if requires_python else None,
        version=decide_version(tree),
        cibuildwheel=cibw,
    )


# --------------------------------------------------------------------------- plan notes
def cibuildwheel_table(tree: Path) -> dict[str, Any]:
    """The ``[tool.cibuildwheel]`` table of the project in ``tree`` (``{}`` when it has none)."""
    tool = _toml(tree / "pyproject.toml").get("tool", {}).get("cibuildwheel", {})
    return dict(tool) if isinstance(tool, dict) else {}


def cibuildwheel_notes(tool: Mapping[str, Any], recipe_keys: Mapping[str, bool]) -> list[str]:
    """A note for each option of a project's ``[tool.cibuildwheel]`` table ``tool``: rocm-buildkit sets
    every option itself (an environment variable beats pyproject.toml), so the project's value never
    applies. ``recipe_keys``: whether the recipe sets each recipe key (to say what replaces it)."""
    if not tool:
        return []
    notes = []
    options = [(k, "") for k in tool if k != "linux"]
    if isinstance(tool.get("linux"), dict):
        options += [(k, ".linux") for k in tool["linux"]]
    for option, table in options:
        key, meaning = _CIBW_TRANSLATION.get(option, (None, "not one rocm-buildkit translates"))
        where = f"[tool.cibuildwheel{table}] {option}"
        if key is None:
            notes.append(f"the project's {where} is not used: {meaning}")
        elif recipe_keys.get(key):
            notes.append(f"the project's {where} is not used: the recipe's {key} replaces it")
        else:
            notes.append(
                f"the project's {where} is not used: the recipe has no {key} ({meaning}); add it there"
            )
    return notes


# --------------------------------------------------------------------------- buildkit init
@dataclass(frozen=True)
class _InitChoices:
    """What ``buildkit init`` decides for the recipe beyond the project (defaults or answers)."""

    rocm: tuple[str, ...]
    archs: tuple[str, ...]
    image: str
    policy: str
    pythons: tuple[str, ...]
    #: the image's compatibility sysroot the policy needs (``manylinux.sysroot``); None: the image's glibc
    sysroot: str | None = None
    #: the runtime image profile of the smoke entry (``rocm-buildkit/NAME``); None: no runtime profile fits
    runtime: str | None = None
    #: why ``rocm`` is not what was asked for (a comment in the recipe)
    rocm_note: str | None = None
    #: comment lines under ``image:``: why this builder, and the other one (``buildkit init`` probes)
    image_note: tuple[str, ...] = ()


def _default_pythons(
    project: Project, available: Sequence[str], provided: Sequence[str] | None
) -> tuple[str, ...]:
    """The CPythons to build: the project's cibuildwheel ``build`` selectors, else those of
    ``available`` (cibuildwheel's) its ``requires-python`` allows and the image provides (``provided``,
    None: unknown), the newest four."""
    build = project.cibuildwheel.get("build")
    if build:
        text = " ".join(build) if isinstance(build, list) else str(build)
        chosen = [f"3.{m}" for m in _CP.findall(text)]
        picked = tuple(p for p in available if p in chosen)
        if picked:
            return picked
    spec: SpecifierSet | None = None
    if project.requires_python:
        try:
            spec = SpecifierSet(project.requires_python)
        except InvalidSpecifier:
            spec = None
    fits = [p for p in available if (spec is None or spec.contains(f"{p}.0", prereleases=True))]
    if provided is not None:
        fits = [p for p in fits if p in provided] or fits
    return tuple(fits[-4:])


def _yaml_str(value: str) -> str:
    """A YAML double-quoted scalar (JSON's escaping is YAML's)."""
    return json.dumps(value, ensure_ascii=False)


def _yaml_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(_yaml_str(v) for v in values) + "]"


def _commands(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)] if value else []


def _environment(value: Any) -> tuple[dict[str, str], list[str]]:
    """cibuildwheel's ``environment`` (a table, or ``A=1 B="x y"``) as literal env values; the
    assignments that expand something (``$VAR``, backquotes) cannot be literal and are returned apart."""
    pairs: list[tuple[str, str]] = []
    if isinstance(value, dict):
        pairs = [(str(k), str(v)) for k, v in value.items()]
    elif isinstance(value, str):
        try:
            words = shlex.split(value, posix=True)
        except ValueError:
            return {}, [value]
        pairs = [tuple(w.split("=", 1)) for w in words if "=" in w]  # type: ignore[misc]
    env: dict[str, str] = {}
    skipped: list[str] = []
    for k, v in pairs:
        if "$" in v or "`" in v:
            skipped.append(f"{k}={v}")
        else:
            env[k] = v
    return env, skipped


def _render_recipe(project: Project, choices: _InitChoices, source_path: str) -> tuple[str, list[str]]:
    """The commented recipe ``buildkit init`` writes for ``project`` (its source at ``source_path``,
    relative to the recipe), and the ``[tool.cibuildwheel]`` options it could not translate."""
    lines = _recipe_head(project, choices, source_path)
    translated, untranslated = _cibuildwheel_lines(project.cibuildwheel)
    lines += translated
    if untranslated:
        lines.append("# not translated from [tool.cibuildwheel]:")
        lines += [f"#   {u}" for u in untranslated]
    lines += _smoke_and_publish(project, choices)
    return "\n".join(lines) + "\n", untranslated


def _recipe_head(project: Project, choices: _InitChoices, source_path: str) -> list[str]:
    """The recipe's keys from its name to its ``image``, each commented with where it comes from."""
    lines: list[str] = []
    add = lines.append
    name = project.name or project.tree.resolve().name
    add(f"# rocm-buildkit recipe for {name}, written by `buildkit init` from the project's own files.")
    add(
        "# Check it with `buildkit plan THIS-FILE`; `buildkit schema` prints every key, "
        "`buildkit rules` the gate."
    )
    add(f"name: {_yaml_str(name)}  # {project.name_from}")
    add(f"source: {{path: {_yaml_str(source_path)}}}  # the project's folder, relative to this file")
    decision = project.version
    add("version:")
    if decision.kind == "fixed" and decision.version:
        add(f"  base: {_yaml_str(decision.version)}  # fixed at {decision.where}: no local label fits")
    elif decision.kind == "tool":
        add('  base: "0.0.0"  # set the release; the build is told it (' + decision.how + ")")
        add('  local: "rocm{rocm}"  # one wheel file per ROCm release')
    else:
        add('  base: "0.0.0"  # set the release; make the build read BUILDKIT_VERSION (' + decision.how + ")")
        if len(choices.rocm) > 1:
            add('  local: "rocm{rocm}"')
    add(f"python: {_yaml_list(choices.pythons)}")
    add(f"rocm: {_yaml_list(choices.rocm)}  # `buildkit rocm ls`: releases, their archs and torch indexes")
    if choices.rocm_note:
        add(f"# {choices.rocm_note}")
    if project.needs_torch:
        add("# torch is a build requirement: pin it per job (index_url for a ROCm torch), e.g.")
        add('# torch: [{version: "2.9", index_url: "https://download.pytorch.org/whl/rocm6.4"}]')
    add("archs:")
    add(f"  list: [{', '.join(choices.archs)}]  # `buildkit archs --rocm R --explain` shows what each keeps")
    if project.uses_cmake:
        add("  # CMake reads the list from a variable: export: [cmake.define.GPU_TARGETS] (or -DGPU_TARGETS)")
    add("manylinux:")
    add(f"  policy: {choices.policy}")
    if choices.sysroot is not None:
        add(f"  sysroot: {choices.sysroot}  # the image's glibc is newer than every manylinux policy's")
    add("repair:")
    sets = ["rocm", "torch"] if project.needs_torch else ["rocm"]
    add(f"  exclude: {{sets: [{', '.join(sets)}]}}  # provided at run time, never grafted into the wheel")
    add(f"image: {choices.image}  # `buildkit image build {choices.image}` makes it")
    lines += [f"# {line}" for line in choices.image_note]
    return lines


def _cibuildwheel_lines(cibw: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The recipe keys translated from the project's ``[tool.cibuildwheel]``, and the options left
    untranslated (each with why)."""
    lines: list[str] = []
    untranslated: list[str] = []
    add = lines.append
    if cibw:
        add("# from the project's [tool.cibuildwheel]:")
    for option, value in cibw.items():
        key, meaning = _CIBW_TRANSLATION.get(option, (None, "not an option rocm-buildkit translates"))
        if key in ("before_all", "before_build", "test_command"):
            commands = _commands(value)
            if commands:
                add(f"{key}: {_yaml_list(commands)}  # {option}")
                if key == "before_all" and any(_INSTALLERS.search(c) for c in commands):
                    add("# system packages: once into the image with image: {profile: P, packages: [...]}")
                if any(_DOWNLOADS.search(c) for c in commands):
                    add(f"# {key} downloads: the build container has no network unless network: true")
        elif key == "test_requires":
            add(
                "test_requires: "
                + _yaml_list(_commands(value) if isinstance(value, list) else str(value).split())
            )
        elif key == "config_settings":
            if isinstance(value, dict):
                add("config_settings:")
                for k, v in value.items():
                    shown = _yaml_list([str(x) for x in v]) if isinstance(v, list) else _yaml_str(str(v))
                    add(f"  {_yaml_str(str(k))}: {shown}")
            else:
                untranslated.append(f"{option} ({value!r}: write it as a mapping)")
        elif key == "build_frontend":
            frontend = str(value.get("name") if isinstance(value, dict) else value).split(";")[0].strip()
            if frontend in ("build", "build[uv]", "pip", "uv"):
                add(f"build_frontend: {frontend}")
            else:
                untranslated.append(f"{option} ({value!r})")
        elif key == "env":
            env, skipped = _environment(value)
            if env:
                add("env:  # environment (literal values)")
                for k, v in env.items():
                    add(f"  {k}: {_yaml_str(v)}")
            untranslated += [f"environment {s} (expands a variable; env values are literal)" for s in skipped]
        elif key == "python":
            continue  # python: above
        else:
            untranslated.append(f"{option} ({meaning})")
    return lines, untranslated


def _import_name(project: Project) -> str:
    """The module a wheel of ``project`` installs: its package folder (``NAME/`` or ``src/NAME/``) named like
    the distribution, else the only top-level package of the tree, else the distribution's name."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", project.name or project.tree.resolve().name).lower()
    packages = [
        p.name
        for base in (project.tree, project.tree / "src")
        for p in sorted(base.glob("*/__init__.py"))
        if p.parent.name.isidentifier() and p.parent.name not in ("tests", "test", "docs")
        for p in [p.parent]
    ]
    if name in packages or not packages:
        return name
    return packages[0] if len(packages) == 1 else name


def _smoke_and_publish(project: Project, choices: _InitChoices) -> list[str]:
    """A smoke entry (the wheel imported in the runtime image) and a publish section (a static index)."""
    out = []
    if choices.runtime is not None:
        out += [
            "smoke:  # `buildkit smoke DIST --recipe THIS-FILE`: each wheel installed in a runtime container",
            "  - name: import",
            f"    image: rocm-buildkit/{choices.runtime}  # made by `buildkit image build {choices.runtime}`",
            f"    imports: [{_import_name(project)}]",
        ]
    out += [
        "publish:  # `buildkit publish DIST --recipe THIS-FILE`: a static PEP 503 index beside this file",
        "  directory: site/index  # or index: https://your.index/ (a server), pypi: true (no local label)",
    ]
    return out


# --------------------------------------------------------------------------- defaults and writing
DEFAULT_IMAGE = "manylinux_2_28-rocm"
_DEFAULT_ARCHS = ("gfx90a", "gfx942")


def default_choices(project: Project, profile: profiles.Profile) -> _InitChoices:
    """The recipe's choices for the builder image ``profile`` when nobody answers: its newest ROCm
    release, the archs of :data:`_DEFAULT_ARCHS` that release supports, the policy of the image's
    glibc, the CPythons of :func:`_default_pythons`."""
    releases: Sequence[str] = profile.rocm_releases or [i.rocm for i in rocm_install.el8_installs()]
    rocm = releases[-1]
    try:
        supported = set(rocm_data.get_release(rocm).archs)
    except rocm_data.UnknownRelease:
        supported = set(_DEFAULT_ARCHS)
    archs = tuple(a for a in _DEFAULT_ARCHS if a in supported) or _DEFAULT_ARCHS
    glibc = getattr(profile, "glibc", None)
    m = re.match(r"^manylinux_(\d+)_(\d+)", profile.name)
    policy = f"manylinux_{glibc.replace('.', '_')}" if glibc else (m.group(0) if m else "manylinux_2_28")
    known = {p.name for p in policies()}
    sysroot = None
    if policy not in known:  # a glibc newer than every policy: the image's oldest sysroot that has one
        fitting = sorted((s for s in profile.sysroots.values() if s.policy in known), key=lambda s: s.glibc)
        if fitting:
            sysroot, policy = fitting[0].name, fitting[0].policy
    runtime = _runtime_profile(profile.name, rocm)
    provided = getattr(profile, "pythons", None)
    ran = runtime.pythons if runtime is not None else None
    if (
        ran
    ):  # the smoke test installs each wheel in the runtime image: its CPythons, where the builder has them
        provided = tuple(p for p in provided or ran if p in ran) or provided
    pythons = _default_pythons(project, cibuildwheel_pythons(), provided)
    return _InitChoices(
        rocm=(rocm,),
        archs=archs,
        image=profile.name,
        policy=policy,
        pythons=pythons,
        sysroot=sysroot,
        runtime=runtime.name if runtime is not None else None,
    )


def _runtime_profile(image: str, rocm: str) -> profiles.Profile | None:
    """The runtime profile a smoke test of ``image``'s wheels runs in: ``IMAGE-runtime``, else the first
    runtime profile without torch that names ROCm ``rocm`` among its releases, else one that names none (a
    distribution's own); None when none fits."""

    runtimes = {n: p for n, p in profiles.PROFILES.items() if p.role == "runtime" and "torch" not in n}
    if f"{image}-runtime" in runtimes:
        return runtimes[f"{image}-runtime"]
    named = [p for _, p in sorted(runtimes.items()) if rocm in (p.rocm_releases or ())]
    unnamed = [p for _, p in sorted(runtimes.items()) if p.rocm_releases is None]
    return (named + unnamed + [None])[0]


def network_hooks(project: Project) -> list[str]:
    """The hook commands of the project's cibuildwheel table that download (curl, pip install, apt-get...):
    they fail in the build container of a hermetic build, which has no network."""
    found = []
    for option in ("before-all", "before-build", "test-command"):
        found += [c for c in _commands(project.cibuildwheel.get(option)) if _DOWNLOADS.search(c)]
    return found


def write_recipe(
    project: Project,
    choices: _InitChoices,
    output: Path,
    *,
    force: bool = False,
    check: Callable[[Recipe], object] | None = None,
) -> list[str]:
    """Write :func:`_render_recipe`'s text to ``output`` (refused when it exists, unless ``force``),
    after checking it loads as a recipe and passes ``check`` (``plan``'s, given by the command: init
    never writes a recipe plan refuses); returns the untranslated cibuildwheel options."""

    if output.exists() and not force:
        raise UsageError(f"{output} exists: give another --output, or --force to replace it")
    source = os.path.relpath(project.tree.resolve(), output.resolve().parent)
    text, untranslated = _render_recipe(project, choices, Path(source).as_posix())
    recipe = parse_recipe(text, path=output)  # what init writes is a valid recipe, or a bug of ours
    if check is not None:
        check(recipe)
    atomic_write(output, text)
    return untranslated
