"""Recipes: YAML files that say how to build, gate and publish wheels of a HIP extension.

:func:`load_recipe` reads a recipe, validates it against the shipped JSON Schema
(``buildkit/schema/recipe.schema.json``) and then against the rules a schema cannot state
(zipped axes of equal length, known placeholders, PyPI versus local labels, ceilings within the
policy ...). Every problem is a :class:`~buildkit.errors.RecipeError` at ``file:line:column``.

Loading never contacts Docker: ``manylinux.ceilings.from_image`` is kept as image references
(:attr:`Manylinux.from_images`) and read by :func:`buildkit.plan.expansion.expand`.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache, partial
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from buildkit import version as ver
from buildkit.errors import RecipeError
from buildkit.recipe.env import RESERVED_ENV as RESERVED_ENV
from buildkit.recipe.env import ReservedEnv as ReservedEnv
from buildkit.recipe.env import arch_export, check_cmake_arch_settings, check_env_name
from buildkit.recipe.gate import GateRules, parse_gate
from buildkit.recipe.hooks import Hooks, parse_hooks
from buildkit.recipe.image import ImageSpec, check_smoke_packages, parse_image
from buildkit.recipe.manylinux import Manylinux, parse_manylinux
from buildkit.recipe.schema import did_you_mean
from buildkit.recipe.schema import problems as schema_problems
from buildkit.recipe.source import Source, parse_source
from buildkit.recipe.wheel import WheelAbi, parse_wheel
from buildkit.recipe.yamlspan import Path as JsonPath
from buildkit.recipe.yamlspan import Spans, load_with_spans
from buildkit.targets import ALWAYS_EXPORTED, ARCH_VARIABLES
from buildkit.units import parse_size

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: Built-in matrix axes; ``matrix.axes`` adds environment-variable axes.
BUILTIN_AXES: tuple[str, ...] = ("python", "rocm", "torch")
#: A recipe is a short YAML file: anything larger is refused before it is read into memory.
MAX_RECIPE_BYTES = 2**20
_FILE_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
}
#: cibuildwheel identifiers of the CPython builds for our platform: cp312-manylinux_x86_64 (not cp314t).
_CIBW_CPYTHON = re.compile(r"^cp(?P<major>[0-9])(?P<minor>[0-9]+)-manylinux_x86_64$")


@dataclass(frozen=True)
class VersionSpec:
    base: str | None  # normalised PEP 440, or None with from_git_tag
    from_git_tag: bool
    tag_pattern: str
    local: str  # template, "" for none


@dataclass(frozen=True)
class TorchPin:
    version: str  # as written: "2.10" or "2.10.0"
    index_url: str | None
    python: SpecifierSet | None
    #: ``pip_config: true``: no torch index of its own, pip's configuration (index-url,
    #: extra-index-url, find-links) serves this torch (a CPU torch, a local wheelhouse)
    pip_config: bool = False

    @property
    def series(self) -> str:
        return ver.series(self.version)

    @property
    def requirement(self) -> str:
        """The requirement the wheel carries: ``torch==2.10.*`` (or ``==2.10.0`` when exact)."""
        if self.version.count(".") >= 2:
            return f"torch=={self.version}"
        return f"torch=={self.version}.*"


@dataclass(frozen=True)
class ExcludeRule:
    index: int
    values: tuple[tuple[str, str], ...]  # (axis, value), sorted by axis
    reason: str | None


@dataclass(frozen=True)
class Matrix:
    zip: tuple[str, ...] = ()
    axes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[ExcludeRule, ...] = ()


@dataclass(frozen=True)
class ArchSpec:
    list: tuple[str, ...] | None
    from_env: bool
    allow: tuple[str, ...] | None
    toolchain: str | None  # a toolchain id from buildkit/rocm/toolchains.yaml
    #: (variable, separator) the resolved list is exported to: PYTORCH_ROCM_ARCH and GPU_ARCHS
    #: always, then the recipe's ``archs.export`` in its order
    export: tuple[tuple[str, str], ...] = tuple((name, ARCH_VARIABLES[name]) for name in ALWAYS_EXPORTED)


_NO_ARCHS = ArchSpec(list=None, from_env=False, allow=None, toolchain=None)


@dataclass(frozen=True)
class SmokeTest:
    name: str
    image: str
    imports: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    gpu: bool = False  # needs an AMD GPU passed through (skipped with the reason without one)
    #: extra system packages over the runtime image of a profile (``image: rocm-buildkit/<profile>``)
    packages: tuple[str, ...] = ()


@dataclass(frozen=True)
class Publish:
    kind: str  # "pypi" | "index" | "directory"
    target: str  # "https://upload.pypi.org/legacy/", an index URL, or a directory relative to the recipe


@dataclass(frozen=True)
class Recipe:
    path: Path
    sha256: str
    name: str
    source: Source
    version: VersionSpec
    python: tuple[str, ...]
    rocm: tuple[str, ...]
    torch: tuple[TorchPin, ...]
    matrix: Matrix
    archs: ArchSpec
    manylinux: Manylinux
    exclude_sets: tuple[str, ...]
    exclude_patterns: tuple[str, ...]
    env: Mapping[str, str]
    image: ImageSpec
    smoke: tuple[SmokeTest, ...]
    publish: Publish | None
    tuned_csv: tuple[str, ...]
    size_budget: Mapping[str, int]  # "limit"/"warn" -> bytes (wheel file size)
    spans: Spans = field(repr=False, compare=False)
    gate: GateRules = field(default_factory=GateRules)
    hooks: Hooks = field(default_factory=Hooks)
    #: ``network: true``: the build container gets the network (pip uses the index there); False (the
    #: default): a hermetic build from a wheelhouse resolved on the host (:mod:`buildkit.build.requirements`)
    network: bool = False
    #: ``wheel:``: one wheel per CPython (the default), or one ``py3-none``/``abi3`` wheel per cell
    wheel: WheelAbi = field(default_factory=WheelAbi)
    #: ``offload_compress: true``: clang's ``--offload-compress`` in hipcc's and CMake's HIP flags
    #: (:func:`buildkit.plan.expansion.offload_compress_env`)
    offload_compress: bool = False

    @property
    def display_path(self) -> str:
        """The recipe path as given to :func:`load_recipe` (used in messages)."""
        return str(self.path)

    def error(self, message: str, at: JsonPath, *, hint: str | None = None, key: bool = False) -> RecipeError:
        """A :class:`RecipeError` positioned at the value (or key) at JSON path ``at``."""
        pos = self.spans.key(at) if key else self.spans.value(at)
        line, column = pos if pos else (None, None)
        return RecipeError(message, file=self.display_path, line=line, column=column, hint=hint)

    def source_dir(self) -> Path | None:
        """The local source directory (path sources), resolved against the recipe's directory."""
        if self.source.path is None:
            return None
        base = self.path.parent / self.source.path
        return base / self.source.subdirectory if self.source.subdirectory else base

    @property
    def axis_names(self) -> tuple[str, ...]:
        return BUILTIN_AXES + tuple(name for name, _ in self.matrix.axes)

    def axis_values(self, axis: str) -> tuple[str, ...]:
        if axis == "python":
            return self.python
        if axis == "rocm":
            return self.rocm
        if axis == "torch":
            return tuple(t.series for t in self.torch)
        return dict(self.matrix.axes)[axis]


@cache
def cibuildwheel_pythons() -> tuple[str, ...]:
    """CPython versions ("3.12") the installed cibuildwheel builds manylinux x86_64 wheels for.

    Read from cibuildwheel's own ``resources/build-platforms.toml`` (its ``[linux]``
    ``python_configurations``), so upgrading cibuildwheel is what allows a new Python.
    """
    text = (
        resources.files("cibuildwheel").joinpath("resources/build-platforms.toml").read_text(encoding="utf-8")
    )
    configs = tomllib.loads(text)["linux"]["python_configurations"]
    found = set()
    for config in configs:
        m = _CIBW_CPYTHON.match(str(config.get("identifier", "")))
        if m:
            found.add((int(m.group("major")), int(m.group("minor"))))
    return tuple(f"{major}.{minor}" for major, minor in sorted(found))


def _read_recipe_bytes(path: Path, display: str) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_RECIPE_BYTES`.

    Opened non-blocking, so a FIFO cannot hang the open; devices (``/dev/zero``), FIFOs and
    directories are refused from ``fstat`` of the opened file (no race with a check by name).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise RecipeError(f"cannot read the recipe: {exc.strerror or exc}", file=display) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = _FILE_KINDS.get(stat.S_IFMT(st.st_mode), "an unknown kind of file")
        raise RecipeError(
            f"the recipe is not a regular file ({kind})", file=display, hint="give the path of a YAML file"
        )
    with os.fdopen(fd, "rb") as handle:
        limit = MAX_RECIPE_BYTES
        try:
            raw = handle.read(limit + 1)
        except OSError as exc:
            raise RecipeError(f"cannot read the recipe: {exc.strerror or exc}", file=display) from None
    if len(raw) > limit:
        raise RecipeError(
            f"the recipe is larger than {limit // 2**20} MiB ({max(st.st_size, len(raw))} bytes)",
            file=display,
            hint="a recipe is a short YAML file; is this the right path?",
        )
    return raw


def load_recipe(path: str | Path) -> Recipe:
    """Read and validate a recipe; raises :class:`RecipeError` at ``file:line:column``."""
    p = Path(path)
    display = str(path)
    raw = _read_recipe_bytes(p, display)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecipeError(f"the recipe is not UTF-8 text (byte {exc.start})", file=display) from None
    return parse_recipe(text, path=p, sha256=hashlib.sha256(raw).hexdigest())


def parse_recipe(text: str, *, path: Path, sha256: str | None = None) -> Recipe:
    """Validate recipe ``text`` (read from ``path``, which positions errors and relative paths).

    Every problem is reported in one :class:`RecipeError` (sorted by position): the schema's, and
    those of the rules a schema cannot state for every part of the recipe the schema accepted."""
    display = str(path)
    data, spans = load_with_spans(text, display)
    errors, unusable = schema_problems(data, spans, display)
    if errors and not isinstance(data, dict):
        raise RecipeError.combine(errors)
    digest = sha256 or hashlib.sha256(text.encode("utf-8")).hexdigest()
    return _Builder(data, spans, path, digest, errors, unusable).build()


_T = TypeVar("_T")


class _Builder:
    """Turns validated data into a :class:`Recipe`, checking the rules the schema cannot express.

    Each part is checked on its own: a problem is collected and the parts that do not depend on it
    are still checked; a part whose top-level keys the schema found unusable is skipped."""

    def __init__(
        self,
        data: dict[str, Any],
        spans: Spans,
        path: Path,
        digest: str,
        problems: list[RecipeError] | None = None,
        unusable: set[str] | None = None,
    ) -> None:
        self.d = data
        self.spans = spans
        self.path = path
        self.digest = digest
        self.problems: list[RecipeError] = list(problems or ())
        self.unusable: set[str] = set(unusable or ())
        self.failed: set[str] = set()  # parts whose own check failed (their dependants are skipped)

    def err(self, message: str, at: JsonPath, *, hint: str | None = None, key: bool = False) -> RecipeError:
        pos = self.spans.key(at) if key else self.spans.value(at)
        line, column = pos if pos else (None, None)
        return RecipeError(message, file=str(self.path), line=line, column=column, hint=hint)

    def _try(self, part: str, needs: tuple[str, ...], check: Callable[[], _T]) -> _T | None:
        """``check()``, or None with its problem collected (``part`` failed) or skipped when one of
        the top-level keys or parts it ``needs`` is unusable or failed."""
        if any(n in self.unusable or n in self.failed for n in needs):
            self.failed.add(part)
            return None
        try:
            return check()
        except RecipeError as exc:
            self.problems.append(exc)
            self.failed.add(part)
            return None

    def _archs(self) -> ArchSpec:
        archs_raw = self.d["archs"]
        return ArchSpec(
            list=tuple(archs_raw["list"]) if "list" in archs_raw else None,
            from_env=archs_raw.get("from") == "env",
            allow=tuple(archs_raw["allow"]) if "allow" in archs_raw else None,
            toolchain=archs_raw.get("toolchain"),
            export=arch_export(archs_raw.get("export"), self.err),
        )

    def _env(self, matrix: Matrix, archs: ArchSpec) -> dict[str, str]:
        env = dict(self.d.get("env", {}))
        for name, value in env.items():
            self._try("env", (), partial(check_env_name, name, value, ("env", name), self.err, archs.export))
        for name, _ in matrix.axes:
            if name in dict(archs.export):
                at: JsonPath = ("matrix", "axes", name)
                self._try("env", (), partial(check_env_name, name, None, at, self.err, archs.export))
            if name in env:
                self.problems.append(
                    self.err(
                        f"{name} is both a matrix axis and a fixed env value",
                        ("env", name),
                        key=True,
                        hint=f"remove env.{name} or matrix.axes.{name}",
                    )
                )
        return env

    def _smoke(self) -> tuple[SmokeTest, ...]:
        smoke = tuple(
            SmokeTest(
                name=s["name"],
                image=s["image"],
                imports=tuple(s.get("imports", ())),
                commands=tuple(s.get("commands", ())),
                labels=tuple(s.get("labels", ())),
                gpu=bool(s.get("gpu", False)),
                packages=tuple(s.get("packages", ())),
            )
            for s in self.d.get("smoke", ())
        )
        for i, test in enumerate(smoke):
            if test.packages:
                self._try("smoke", (), partial(check_smoke_packages, test.image, ("smoke", i), self.err))
        names = [s.name for s in smoke]
        for i, n in enumerate(names):
            if n in names[:i]:
                self.problems.append(self.err(f"smoke test name {n!r} is used twice", ("smoke", i, "name")))
        return smoke

    def build(self) -> Recipe:
        d = self.d
        source = self._try("source", ("source", "version"), lambda: parse_source(d, self.err))
        self._try("python", ("python",), self._pythons)
        torch = self._try("torch", ("torch",), self._torch)
        matrix = self._try("matrix", ("matrix", "python", "rocm", "torch"), lambda: self._matrix(torch or ()))
        archs = self._try("archs", ("archs",), self._archs)
        manylinux = self._try("manylinux", ("manylinux",), lambda: parse_manylinux(d, self.err))
        env = self._try(
            "env-keys", ("env", "matrix"), lambda: self._env(matrix or Matrix(), archs or _NO_ARCHS)
        )
        publish = self._try("publish", ("publish",), lambda: (self._publish(),))
        version = self._try(
            "version",
            ("version", "torch", "matrix", "publish"),
            lambda: self._version(torch or (), matrix or Matrix(), publish[0] if publish else None),
        )
        wheel = self._try(
            "wheel",
            ("wheel", "python", "version"),
            lambda: parse_wheel(d.get("wheel"), d["python"], version.local if version else "", self.err),
        )
        smoke = self._try("smoke", ("smoke",), self._smoke)
        budget = self._try(
            "size_budget",
            ("size_budget",),
            lambda: {k: parse_size(v) for k, v in sorted(d.get("size_budget", {}).items())},
        )
        image = self._try("image", ("image",), lambda: parse_image(d["image"], self.path.parent, self.err))
        gate = self._try("gate", ("gate",), lambda: parse_gate(d.get("gate", {}), self.spans, self.err))
        hook_keys = ("before_all", "before_build", "config_settings", "build_frontend", "test_command")
        hooks = self._try("hooks", (*hook_keys, "test_requires", "build_requires"), lambda: self._hooks(d))
        if hooks is not None and env is not None:
            listed = {h: isinstance(d.get(h), list) for h in ("before_all", "before_build")}
            hand_set = {"before_all": hooks.before_all, "before_build": hooks.before_build}
            exported = (archs or _NO_ARCHS).export
            self.problems += check_cmake_arch_settings(
                hooks.config_settings, env, hand_set, exported, self.err, listed=listed
            )
        if self.problems or self.unusable:
            if not self.problems:  # pragma: no cover - the schema reports what makes a key unusable
                raise AssertionError(f"unusable recipe keys without a problem: {sorted(self.unusable)}")
            raise RecipeError.combine(self.problems)
        assert source is not None and torch is not None and matrix is not None and archs is not None
        assert manylinux is not None and env is not None and publish is not None and version is not None
        assert smoke is not None and budget is not None and image is not None and gate is not None
        assert hooks is not None and wheel is not None
        exclude = d.get("repair", {}).get("exclude", {})
        return Recipe(
            path=self.path,
            sha256=self.digest,
            name=d["name"],
            source=source,
            version=version,
            python=tuple(d["python"]),
            rocm=tuple(d["rocm"]),
            torch=torch,
            matrix=matrix,
            archs=archs,
            manylinux=manylinux,
            exclude_sets=tuple(exclude.get("sets", ())),
            exclude_patterns=tuple(exclude.get("patterns", ())),
            env=env,
            image=image,
            smoke=smoke,
            publish=publish[0],
            tuned_csv=tuple(d.get("checks", {}).get("tuned_csv", ())),
            size_budget=budget,
            spans=self.spans,
            gate=gate,
            hooks=hooks,
            network=bool(d.get("network", False)),
            wheel=wheel,
            offload_compress=bool(d.get("offload_compress", False)),
        )

    def _hooks(self, d: dict[str, Any]) -> Hooks:
        """The hooks, with ``build_requires`` checked: each a PEP 508 requirement, named once, and
        never torch (a job builds against the torch its ``torch`` axis pins)."""
        hooks = parse_hooks(d)
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.utils import canonicalize_name

        seen: dict[str, int] = {}
        for i, text in enumerate(hooks.build_requires):
            at = ("build_requires", i)
            try:
                name = canonicalize_name(Requirement(text).name)
            except InvalidRequirement as exc:
                message = f"build_requires[{i}]: {text!r} is not a PEP 508 requirement: {exc}"
                raise self.err(message, at) from None
            if name == "torch":
                raise self.err(
                    f"build_requires[{i}]: torch is not a build requirement to add by hand",
                    at,
                    hint="pin it with torch: [{version: ...}]: each job builds against its torch pin",
                )
            if name in seen:
                raise self.err(
                    f"build_requires[{i}]: {name} is already build_requires[{seen[name]}]",
                    at,
                    hint="give one requirement per package, with every specifier in it",
                )
            seen[name] = i
        return hooks

    def _pythons(self) -> None:
        known = cibuildwheel_pythons()
        for i, python in enumerate(self.d["python"]):
            if python not in known:
                import cibuildwheel

                self.problems.append(
                    self.err(
                        f"python[{i}]: cibuildwheel {cibuildwheel.__version__} cannot build CPython {python} "
                        f"(it builds {', '.join(known)})",
                        ("python", i),
                        hint=did_you_mean(python, known),
                    )
                )

    def _torch(self) -> tuple[TorchPin, ...]:
        pins = []
        seen: dict[str, int] = {}
        for i, t in enumerate(self.d.get("torch", ())):
            spec: SpecifierSet | None = None
            if "python" in t:
                try:
                    spec = SpecifierSet(t["python"])
                except InvalidSpecifier:
                    raise self.err(
                        f"torch[{i}].python: {t['python']!r} is not a PEP 440 specifier",
                        ("torch", i, "python"),
                        hint='write e.g. ">=3.10,<3.15"',
                    ) from None
            pip_config = bool(t.get("pip_config", False))
            if pip_config and "index_url" in t:
                raise self.err(
                    f"torch[{i}] sets both index_url and pip_config: true",
                    ("torch", i, "pip_config"),
                    hint="pip_config: true resolves torch with your pip configuration alone; "
                    "remove it to use index_url, or remove index_url",
                )
            pin = TorchPin(
                version=t["version"], index_url=t.get("index_url"), python=spec, pip_config=pip_config
            )
            if pin.series in seen:
                raise self.err(
                    f"torch {pin.series} is pinned twice (torch[{seen[pin.series]}] and torch[{i}])",
                    ("torch", i, "version"),
                    hint="job ids name the torch series, so each series may appear once",
                )
            seen[pin.series] = i
            pins.append(pin)
        return tuple(pins)

    def _matrix(self, torch: tuple[TorchPin, ...]) -> Matrix:
        m = self.d.get("matrix", {})
        axes = tuple((name, tuple(values)) for name, values in m.get("axes", {}).items())
        for name, _ in axes:
            if name.lower() in BUILTIN_AXES:
                raise self.err(
                    f"matrix.axes.{name} clashes with the built-in axis {name.lower()!r}",
                    ("matrix", "axes", name),
                    key=True,
                )
            check_env_name(name, None, ("matrix", "axes", name), self.err)
        known = BUILTIN_AXES + tuple(n for n, _ in axes)
        lengths = {"python": len(self.d["python"]), "rocm": len(self.d["rocm"]), "torch": len(torch)}
        lengths.update({n: len(v) for n, v in axes})
        zipped: tuple[str, ...] = tuple(m.get("zip", ()))
        for i, axis in enumerate(zipped):
            if axis not in known:
                raise self.err(
                    f"matrix.zip: unknown axis {axis!r}",
                    ("matrix", "zip", i),
                    hint=did_you_mean(axis, known) or f"axes: {', '.join(known)}",
                )
            if axis == "torch" and not torch:
                raise self.err("matrix.zip names torch, but the recipe pins no torch", ("matrix", "zip", i))
        if zipped and len({lengths[a] for a in zipped}) > 1:
            sizes = ", ".join(f"{a} has {lengths[a]}" for a in zipped)
            raise self.err(
                f"matrix.zip pairs axes element by element, so they need the same length: {sizes}",
                ("matrix", "zip"),
            )
        values = {
            "python": list(self.d["python"]),
            "rocm": list(self.d["rocm"]),
            "torch": [t.series for t in torch],
        }
        values.update({n: list(v) for n, v in axes})
        rules = []
        for i, rule in enumerate(m.get("exclude", ())):
            pairs = []
            for axis, value in rule.items():
                if axis == "reason":
                    continue
                if axis not in known:
                    raise self.err(
                        f"matrix.exclude[{i}]: unknown axis {axis!r}",
                        ("matrix", "exclude", i, axis),
                        key=True,
                        hint=did_you_mean(axis, (*known, "reason")) or f"axes: {', '.join(known)}",
                    )
                if value not in values[axis]:
                    shown = ", ".join(repr(v) for v in values[axis]) or "none"
                    raise self.err(
                        f"matrix.exclude[{i}]: {axis} {value!r} is not one of the recipe's "
                        f"{axis} values ({shown})",
                        ("matrix", "exclude", i, axis),
                        hint=did_you_mean(value, values[axis]),
                    )
                pairs.append((axis, value))
            if not pairs:
                raise self.err(
                    f"matrix.exclude[{i}] names no axis, so it would exclude everything",
                    ("matrix", "exclude", i),
                )
            rules.append(ExcludeRule(index=i, values=tuple(sorted(pairs)), reason=rule.get("reason")))
        return Matrix(zip=zipped, axes=axes, exclude=tuple(rules))

    def _publish(self) -> Publish | None:
        p = self.d.get("publish")
        if p is None:
            return None
        if "pypi" in p:
            return Publish("pypi", "https://upload.pypi.org/legacy/")
        if "index" in p:
            return Publish("index", p["index"])
        return Publish("directory", p["directory"])

    def _version(self, torch: tuple[TorchPin, ...], matrix: Matrix, publish: Publish | None) -> VersionSpec:
        v = self.d["version"]
        base: str | None = None
        if "base" in v:
            try:
                base = ver.check_base(v["base"])
            except ver.VersionProblem as exc:
                raise self.err(f"version.base: {exc}", ("version", "base")) from None
        elif "tag_pattern" in v:
            try:
                pattern = re.compile(v["tag_pattern"])
            except re.error as exc:
                raise self.err(
                    f"version.tag_pattern is not a regular expression: {exc}", ("version", "tag_pattern")
                ) from None
            if pattern.groups and "version" not in pattern.groupindex:
                raise self.err(
                    "version.tag_pattern has groups but none named 'version'",
                    ("version", "tag_pattern"),
                    hint="write e.g. ^v(?P<version>.+)$",
                )
        if "tag_pattern" in v and "base" in v:
            raise self.err(
                "version.tag_pattern applies only with from: git-tag", ("version", "tag_pattern"), key=True
            )
        local = v.get("local", "")
        try:
            fields = ver.template_fields(local)
        except ver.VersionProblem as exc:
            raise self.err(f"version.local: {exc}", ("version", "local")) from None
        allowed = ver.PLACEHOLDERS + tuple(n for n, _ in matrix.axes)
        for f in fields:
            if f not in allowed:
                raise self.err(
                    f"version.local: unknown placeholder {{{f}}}",
                    ("version", "local"),
                    hint=did_you_mean(f, allowed) or f"placeholders: {', '.join(allowed)}",
                )
            if f.startswith("torch") and not torch:
                raise self.err(
                    f"version.local uses {{{f}}} but the recipe pins no torch",
                    ("version", "local"),
                    hint="add a torch pin or drop the placeholder",
                )
        if local and publish is not None and publish.kind == "pypi":
            raise self.err(
                f"publish.pypi with a local version label ({local!r}): {ver.PYPI_LOCAL_REASON}",
                ("publish", "pypi"),
                key=True,
            )
        return VersionSpec(
            base=base,
            from_git_tag=v.get("from") == "git-tag",
            tag_pattern=v.get("tag_pattern", ver.DEFAULT_TAG_PATTERN),
            local=local,
        )
