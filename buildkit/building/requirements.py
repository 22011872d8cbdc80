"""Hermetic builds: a job's build requirements resolved and downloaded on the host, locked by sha256,
and staged with the source as the only package index the build container has (what is requested,
how, and the lock: docs/REFERENCE.md, "Hermetic builds").

Markers are evaluated for the job's Python and platform, not the host's; ``pip download`` runs with
the host's pip configuration, so index credentials never reach the container. A requirement with no
wheel for the job is refused before any container starts (:func:`resolve`). sdists are not
downloaded: ``pip download`` for another Python needs ``--only-binary=:all:``, and an sdist's own
build requirements would be unknown too.

Not known before the build: what a backend asks for while building (``get_requires_for_build_wheel``,
e.g. scikit-build-core's cmake and ninja), what a hook installs, a wheel's dynamic dependencies
(:func:`explain_offline_failure` adds the fix to the build's error). pip evaluates transitive
dependencies' markers for the host's Python (pypa/pip#11010)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from buildkit.building import buildsystem
from buildkit.errors import BuildFailed, BuildkitError
from buildkit.fsutil import atomic_write
from buildkit.manifest import sha256_file
from buildkit.plan.models import Job
from buildkit.recipe import Recipe
from buildkit.recipe.yamlspan import Path as JsonPath
from buildkit.records import json_shape, to_data

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: PEP 518: what a source without a ``[build-system]`` table is built with
DEFAULT_BUILD_REQUIRES = buildsystem.DEFAULT_BUILD_REQUIRES
#: the first setuptools whose ``get_requires_for_build_wheel`` no longer asks for ``wheel``
_SETUPTOOLS_WITHOUT_WHEEL = Version("70.1")
#: the platform tag of TheRock's ROCm SDK wheels (``rocm-sdk-core-7.2.4-py3-none-linux_x86_64.whl``)
ROCM_PIP_PLATFORM = "linux_x86_64"
ROCM_PIP_ORIGIN = "the recipe's rocm_pip (the SDK the build compiles and links against)"
#: a ROCm torch wheel is gigabytes
_PIP_TIMEOUT = 3600
PROBE_TIMEOUT = 120
_LEGACY_MANYLINUX = {"manylinux2014": 17, "manylinux2010": 12, "manylinux1": 5}
_MANYLINUX = re.compile(r"manylinux_2_(?P<minor>\d+)_(?P<arch>\w+)")
_NO_MATCH = re.compile(r"No matching distribution found for (?P<req>\S+)")
_OFFLINE = re.compile(
    r"Temporary failure (?:in name resolution|resolving)|Could not resolve host|Network is unreachable"
    r"|Name or service not known|Failed to establish a new connection|No address associated with hostname"
)
_FIX = (
    "set `network: true` in the recipe (the build container then installs from the index, and builds "
    "sdists there, as cibuildwheel does), or make a wheel of it findable on the host: `pip wheel "
    "--no-deps 'REQ' -w DIR` with PIP_FIND_LINKS=DIR (or `buildkit build --wheelhouse DIR`, DIR "
    "holding every build requirement)"
)


@dataclass(frozen=True)
class Requested:
    """One requirement of the wheelhouse and where it comes from."""

    requirement: str  # PEP 508, its marker evaluated for the job and removed
    origin: str  # for messages: "pyproject.toml [build-system] requires", ...
    at: JsonPath | None = None  # its position in the recipe, when the recipe names it

    @property
    def name(self) -> str:
        return canonicalize_name(Requirement(self.requirement).name)


@json_shape()
@dataclass(frozen=True)
class Locked:
    """One file of the wheelhouse."""

    name: str  # canonical
    version: str
    file: str
    sha256: str

    def line(self) -> str:
        return f"{self.name}=={self.version} --hash=sha256:{self.sha256}"


@json_shape("python", "platforms", "requested", "files", "sha256")
@dataclass(frozen=True)
class Lock:
    """The wheelhouse of a job: what was requested and the files that satisfy it, by sha256."""

    job: str
    python: str
    platforms: tuple[str, ...]
    requested: tuple[str, ...]
    files: tuple[Locked, ...]

    @property
    def sha256(self) -> str:
        """What the inputs key sees: the files, not the comments."""
        return hashlib.sha256("".join(f.line() + "\n" for f in self.files).encode()).hexdigest()

    def render(self) -> str:
        """The lock file: a pip requirements file with hashes (``pip download --require-hashes``)."""
        head = [
            f"# rocm-buildkit: the build requirements of {self.job} (CPython {self.python}, "
            f"{self.platforms[0] if self.platforms else 'any'} and older), resolved on the host",
            *(f"# requested: {r}" for r in self.requested),
            "# the files, by sha256: pip download --require-hashes --no-deps -r THIS_FILE "
            "(with the --python-version/--platform of the job)",
        ]
        return "\n".join([*head, *(f.line() for f in self.files)]) + "\n"

    @classmethod
    def from_json(cls, job: str, data: Any) -> Lock:
        """The lock a manifest records; :class:`BuildFailed` for one of another shape."""
        try:
            files = tuple(
                Locked(str(f["name"]), str(f["version"]), str(f["file"]), str(f["sha256"]))
                for f in data["files"]
            )
            lock = cls(
                job,
                str(data["python"]),
                tuple(str(p) for p in data["platforms"]),
                tuple(str(r) for r in data["requested"]),
                files,
            )
        except (KeyError, TypeError) as exc:
            raise BuildFailed(f"the manifest's build_requirements are malformed ({exc!r})") from None
        bad = [f.file for f in files if not re.fullmatch(r"[0-9a-f]{64}", f.sha256)]
        if bad:
            raise BuildFailed(f"the manifest's build_requirements name no sha256 for {', '.join(bad)}")
        for f in files:  # the lines of a requirements file: nothing but a name, a version, a wheel
            if not (_is_canonical(f.name) and _is_version(f.version) and _is_wheel_of(f)):
                raise BuildFailed(f"the manifest's build_requirements have a malformed entry: {to_data(f)!r}")
        return lock


def _is_canonical(name: str) -> bool:
    return re.fullmatch(r"[a-z0-9]+(?:[-.][a-z0-9]+)*", name) is not None and canonicalize_name(name) == name


def _is_version(text: str) -> bool:
    try:
        return str(Version(text)) == text
    except InvalidVersion:
        return False


def _is_wheel_of(locked: Locked) -> bool:
    try:
        name, version, _build, _tags = parse_wheel_filename(locked.file)
    except InvalidWheelFilename:
        return False
    return "/" not in locked.file and str(name) == locked.name and str(version) == locked.version


def target_platforms(platform_tag: str) -> tuple[str, ...]:
    """The platform tags of wheels the job's builder installs: its ``manylinux_2_N`` tag down to
    ``manylinux_2_17``, then ``manylinux2014`` (older policies: down to ``manylinux_2_5``)."""
    arch = "x86_64"
    m = _MANYLINUX.fullmatch(platform_tag)
    if m is not None:
        minor, arch = int(m["minor"]), m["arch"]
    else:
        legacy, _, arch = platform_tag.partition("_")
        if legacy not in _LEGACY_MANYLINUX or not arch:
            raise BuildFailed(f"cannot resolve build requirements for the platform {platform_tag!r}")
        minor = _LEGACY_MANYLINUX[legacy]
    lowest = 17 if minor >= 17 else 5
    tags = [f"manylinux_2_{n}_{arch}" for n in range(minor, lowest - 1, -1)]
    tags += [f"{name}_{arch}" for name, n in _LEGACY_MANYLINUX.items() if lowest <= n <= minor]
    return tuple(tags)


def target_args(job: Job) -> list[str]:
    """pip's options for the job's interpreter and platform (wheels only: pip cannot build for them)."""
    args = ["--only-binary=:all:", "--python-version", job.python, "--implementation", "cp"]
    args += ["--abi", job.cp_tag]
    for tag in target_platforms(job.platform_tag):
        args += ["--platform", tag]
    if job.rocm_pip is not None:  # TheRock's SDK wheels are tagged linux_x86_64 (not audited)
        args += ["--platform", ROCM_PIP_PLATFORM]
    return args


def _index_args(wheelhouse: Path | None, extra_index: str | None) -> list[str]:
    if wheelhouse is not None:  # an air-gapped host: that folder is the whole index
        return ["--no-index", "--find-links", str(wheelhouse)]
    return ["--extra-index-url", extra_index] if extra_index else []


def _pip(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", *args, "--disable-pip-version-check"]


def resolve_command(
    job: Job,
    requirements: Sequence[str],
    dest: Path,
    *,
    wheelhouse: Path | None = None,
    extra_index: str | None = None,
    constraints: Path | None = None,
) -> list[str]:
    """``pip download`` of ``requirements`` and their dependencies, for the job, into ``dest``."""
    return [
        *_pip("download", "--progress-bar", "off"),
        *target_args(job),
        *_index_args(wheelhouse, extra_index),
        *(["--constraint", str(constraints)] if constraints is not None else []),
        "--dest",
        str(dest),
        *requirements,
    ]


def cibuildwheel_constraints(python: str) -> Path:
    """The pinned constraints cibuildwheel installs ``virtualenv`` with before its test step (its
    bundled ``constraints-python313.txt``, copied into the container as ``/constraints.txt``)."""
    base = resources.files("cibuildwheel").joinpath("resources")
    specific = base.joinpath(f"constraints-python{python.replace('.', '')}.txt")
    return Path(str(specific if specific.is_file() else base.joinpath("constraints.txt")))


def needs_virtualenv(job: Job) -> bool:
    """cibuildwheel's test step runs ``pip install virtualenv -c /constraints.txt`` in the job's
    Python (uv frontends make the test environment with ``uv venv`` instead)."""
    return bool(job.hooks.test_command) and job.hooks.build_frontend not in ("build[uv]", "uv")


def locked_command(
    job: Job, lock_file: Path, dest: Path, *, wheelhouse: Path | None = None, extra_index: str | None = None
) -> list[str]:
    """``pip download`` of exactly the files of a lock (by hash, no resolution) into ``dest``."""
    return [
        *_pip("download", "--progress-bar", "off", "--require-hashes", "--no-deps"),
        *target_args(job),
        *_index_args(wheelhouse, extra_index),
        "--dest",
        str(dest),
        "-r",
        str(lock_file),
    ]


def marker_environment(job: Job) -> dict[str, str]:
    """PEP 508 marker values of the job's interpreter in the builder (CPython on Linux x86_64)."""
    env: dict[str, str] = {key: str(value) for key, value in default_environment().items()}
    env.update(
        python_version=job.python,
        python_full_version=f"{job.python}.0",
        implementation_name="cpython",
        platform_python_implementation="CPython",
        os_name="posix",
        sys_platform="linux",
        platform_system="Linux",
        platform_machine="x86_64",
    )
    return env


def _requirement(
    text: Any, origin: str, env: dict[str, str], recipe: Recipe, at: JsonPath | None
) -> Requested | None:
    """``text`` as a :class:`Requested`, None when its marker excludes the job."""
    try:
        req = Requirement(str(text))
    except InvalidRequirement as exc:
        message = f"{text!r} ({origin}) is not a PEP 508 requirement: {exc}"
        if at is not None:
            raise recipe.error(message, at) from None
        raise BuildFailed(message) from None
    if req.marker is not None:
        if not req.marker.evaluate(env):
            return None
        req.marker = None
    return Requested(str(req), origin, at)


def _at_least(requested: Requested, version: Version) -> bool:
    """The requirement allows no release before ``version`` (a lower bound at or above it)."""
    for spec in Requirement(requested.requirement).specifier:
        try:
            bound = Version(spec.version.removesuffix(".*"))
        except InvalidVersion:
            continue
        if spec.operator in (">=", ">", "==", "~=", "===") and bound >= version:
            return True
    return False


def _pyproject(source: Path) -> dict[str, Any]:
    path = source / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BuildFailed(f"the source's pyproject.toml cannot be read: {exc}") from None
    return data


def requested(recipe: Recipe, job: Job, source: Path, *, isolation: bool = True) -> list[Requested]:
    """Everything pip installs in the job's container, with where it comes from (module docstring)."""
    env = marker_environment(job)
    data = _pyproject(source)
    system = data.get("build-system")
    if isinstance(system, dict):
        requires, backend = system.get("requires", []), system.get("build-backend")
        origin = "pyproject.toml [build-system] requires"
    else:
        requires, backend = list(DEFAULT_BUILD_REQUIRES), None
        origin = "PEP 518's default build requirements (the source has no [build-system] table)"
    if not isinstance(requires, list):
        raise BuildFailed("the source's pyproject.toml: [build-system] requires is not a list")
    items = [_requirement(r, origin, env, recipe, None) for r in requires]
    if backend is None or str(backend).startswith("setuptools.build_meta"):
        setuptools = [r for r in items if r is not None and r.name == "setuptools"]
        has_wheel = any(r.name == "wheel" for r in items if r is not None)
        if (
            setuptools
            and not has_wheel
            and not any(_at_least(r, _SETUPTOOLS_WITHOUT_WHEEL) for r in setuptools)
        ):
            items.append(Requested("wheel", "the setuptools backend (before 70.1 it asks for wheel)"))
    if job.hooks.test_command:
        where = "the recipe's test_requires"
        items += [
            _requirement(r, where, env, recipe, ("test_requires", i))
            for i, r in enumerate(job.hooks.test_requires)
        ]
        project = data.get("project")
        if isinstance(project, dict) and "dependencies" not in project.get("dynamic", ()):
            deps = project.get("dependencies", [])
            where = "pyproject.toml [project] dependencies (the test virtualenv installs the wheel with them)"
            items += [_requirement(r, where, env, recipe, None) for r in deps if isinstance(deps, list)]
    wanted = [r for r in items if r is not None]
    pin = job.torch_requirement
    torch_at = next(
        (("torch", i, "version") for i, t in enumerate(recipe.torch) if t.requirement == pin),
        None,
    )
    for extra in buildsystem.extra_requires(job, [str(r) for r in requires], env):
        at = torch_at if extra.index is None else ("build_requires", extra.index)
        added = _requirement(extra.requirement, extra.origin, env, recipe, at)
        if added is not None:
            wanted.append(added)
    if job.rocm_pip_build_requirement is not None:
        wanted.append(Requested(job.rocm_pip_build_requirement, ROCM_PIP_ORIGIN, ("rocm_pip",)))
    if job.torch_requirement and not any(r.requirement == job.torch_requirement for r in wanted):
        # the project lists torch itself: the pin narrows it there (PIP_CONSTRAINT); resolved with it
        wanted.append(Requested(job.torch_requirement, "the recipe's torch pin", torch_at))
    return wanted


def request_key(recipe: Recipe, job: Job, source: Path, *, isolation: bool = True) -> str:
    """What the inputs key sees of a hermetic build's requirements: what is requested, for which
    Python and platforms. Not the resolution, which needs the index: the up-to-date check does not,
    and a new release of a requirement does not rebuild by itself (``--force`` does; the manifest's
    lock says what each wheel was built with)."""
    payload = {
        "requested": [r.requirement for r in requested(recipe, job, source, isolation=isolation)],
        "python": job.python,
        "platforms": list(target_platforms(job.platform_tag)),
        "virtualenv": needs_virtualenv(job),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def lock_folder(job: Job, wanted: Sequence[Requested], folder: Path) -> Lock:
    """The lock of the wheels pip put in ``folder`` (each one hashed)."""
    files = []
    for path in sorted(folder.iterdir()):
        try:
            name, version, _build, _tags = parse_wheel_filename(path.name)
        except InvalidWheelFilename:
            raise BuildFailed(
                f"pip downloaded {path.name} into the wheelhouse, which is not a wheel"
            ) from None
        files.append(Locked(str(name), str(version), path.name, sha256_file(path)))
    return Lock(
        job.id,
        job.python,
        target_platforms(job.platform_tag),
        tuple(r.requirement for r in wanted),
        tuple(files),
    )


def _run_pip(cmd: list[str], log: TextIO, timeout: int = _PIP_TIMEOUT) -> tuple[int, str]:
    """Run pip with the host's environment (the user's pip configuration); its output goes to the log."""
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    try:
        proc = subprocess.run(
            cmd, env=dict(os.environ), capture_output=True, text=True, errors="replace", timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise BuildFailed(
            f"pip download did not finish within {timeout}s: {' '.join(cmd[3:6])} ..."
        ) from None
    except OSError as exc:
        raise BuildFailed(f"cannot run pip on the host ({sys.executable} -m pip): {exc}") from None
    output = proc.stdout + proc.stderr
    log.write(output if output.endswith("\n") or not output else output + "\n")
    log.flush()
    return proc.returncode, output


def resolve(
    recipe: Recipe,
    job: Job,
    source: Path,
    dest: Path,
    log: TextIO,
    *,
    isolation: bool = True,
    wheelhouse: Path | None = None,
) -> Lock:
    """Resolve and download the job's build requirements into ``dest``; their :class:`Lock`."""
    wanted = requested(recipe, job, source, isolation=isolation)
    dest.mkdir(parents=True, exist_ok=True)
    if wanted:
        torch = any(r.name == "torch" for r in wanted)
        extra = job.torch_index_url if torch else None
        cmd = resolve_command(
            job, [r.requirement for r in wanted], dest, wheelhouse=wheelhouse, extra_index=extra
        )
        code, output = _run_pip(cmd, log)
        if code != 0:
            raise refusal(recipe, job, wanted, output, wheelhouse=wheelhouse, extra_index=extra)
    if needs_virtualenv(job) and _virtualenv(job, dest, log, wheelhouse):
        wanted.append(Requested("virtualenv", _VIRTUALENV_ORIGIN))
    return lock_folder(job, wanted, dest)


_VIRTUALENV_ORIGIN = "cibuildwheel's test step (pip install virtualenv, with its constraints)"


def _virtualenv(job: Job, dest: Path, log: TextIO, wheelhouse: Path | None) -> bool:
    """Add ``virtualenv`` at cibuildwheel's pins to the wheelhouse (resolved apart, with those
    constraints, into a folder of its own first). Best effort: an image whose job Python has it at
    that pin already needs nothing (debian-rocm), so an index without it is only noted; where the
    image lacks it too, the test step then fails and :func:`explain_offline_failure` names it."""
    aside = dest.parent / "virtualenv-wheelhouse"
    constraints = cibuildwheel_constraints(job.python)
    code, _output = _run_pip(
        resolve_command(job, ["virtualenv"], aside, wheelhouse=wheelhouse, constraints=constraints), log
    )
    if code != 0:
        log.write(
            "note: virtualenv for cibuildwheel's test step is not in the wheelhouse (pip could not resolve "
            "it at cibuildwheel's pins); the test step needs it in the builder image (debian-rocm has it)\n"
        )
        shutil.rmtree(aside, ignore_errors=True)
        return False
    for path in sorted(aside.iterdir()):
        os.replace(path, dest / path.name)
    aside.rmdir()
    return True


def fetch_locked(lock: Lock, job: Job, dest: Path, log: TextIO, *, wheelhouse: Path | None = None) -> Lock:
    """Download exactly the files of ``lock`` into ``dest`` (``buildkit verify``): pip checks every hash,
    then the folder must hold those files and nothing else."""
    dest.mkdir(parents=True, exist_ok=True)
    if lock.files:
        lock_file = dest.parent / "requirements.lock"
        atomic_write(lock_file, lock.render())
        extra = job.torch_index_url if any(f.name == "torch" for f in lock.files) else None
        code, output = _run_pip(
            locked_command(job, lock_file, dest, wheelhouse=wheelhouse, extra_index=extra), log
        )
        lock_file.unlink()
        if code != 0:
            tail = [line for line in output.splitlines() if line.strip()][-10:]
            said = "\n".join(f"    {line}" for line in tail)
            raise BuildFailed(
                f"{job.id}: pip could not download the build requirements the manifest locks "
                f"({len(lock.files)} file(s), by sha256):\n{said}\n  hint: the index (or --wheelhouse DIR) "
                "must still serve exactly those files; pip's error names the one it could not get"
            )
    got = lock_folder(job, (), dest)
    if {(f.file, f.sha256) for f in got.files} != {(f.file, f.sha256) for f in lock.files}:
        raise BuildFailed(f"{job.id}: the files downloaded for the lock are not the locked ones")
    return lock


def _errors(output: str) -> list[str]:
    lines = [line for line in output.splitlines() if line.startswith("ERROR:")]
    return lines[-8:] or output.splitlines()[-8:]


def _index_versions(name: str, *, extra_index: str | None = None) -> list[str]:
    """The versions of ``name`` on the index pip is configured with, sdists included
    (``pip index versions``); empty when there are none or pip cannot tell."""
    cmd = _pip("index", "versions", name, *_index_args(None, extra_index))
    try:
        proc = subprocess.run(
            cmd, env=dict(os.environ), capture_output=True, text=True, errors="replace", timeout=PROBE_TIMEOUT
        )
    except (OSError, subprocess.SubprocessError):
        return []
    m = re.search(r"^Available versions: (.+)$", proc.stdout, re.M)
    return [v.strip() for v in m.group(1).split(",")] if m else []


def refusal(
    recipe: Recipe,
    job: Job,
    wanted: Sequence[Requested],
    output: str,
    *,
    wheelhouse: Path | None = None,
    extra_index: str | None = None,
) -> BuildkitError:
    """The error for a failed resolution: the requirement pip found no wheel of, where it comes from
    and the fix (a :class:`~buildkit.errors.RecipeError` at the recipe's entry when the recipe names it)."""
    said = "\n".join(f"    {line}" for line in _errors(output))
    platform = target_platforms(job.platform_tag)[0]
    m = _NO_MATCH.search(output)
    if m is None:
        return BuildFailed(
            f"{job.id}: pip could not resolve the build requirements on the host "
            f"({', '.join(r.requirement for r in wanted)}) for CPython {job.python} on {platform}:\n{said}\n"
            "  hint: a hermetic build resolves them on the host with your pip configuration "
            "(PIP_INDEX_URL, pip.conf); fix what pip says, or set `network: true` in the recipe"
        )
    missing = m["req"]
    try:
        name = canonicalize_name(Requirement(missing).name)
        spec = Requirement(missing).specifier
    except InvalidRequirement:
        name, spec = canonicalize_name(missing), None
    direct = next((r for r in wanted if r.name == name), None)
    origin = (
        direct.origin if direct is not None else "a dependency of " + ", ".join(r.requirement for r in wanted)
    )
    where = (
        f"in --wheelhouse {wheelhouse}" if wheelhouse is not None else "on the index pip is configured with"
    )
    message = (
        f"{job.id}: no wheel of {missing} for CPython {job.python} on {platform} (or an older manylinux) "
        + where
    )
    if wheelhouse is None:
        found = [v for v in _index_versions(name, extra_index=extra_index) if _satisfies(v, spec)]
        if found:
            message += (
                f": {name} {', '.join(found[:3])} is there only as an sdist, or as wheels for other "
                "Pythons or platforms"
            )
    message += f"; it is in {origin}, and a hermetic build installs only wheels resolved on the host"
    hint = _FIX.replace("REQ", missing)
    if direct is not None and direct.at is not None:
        return recipe.error(message, direct.at, hint=hint)
    return BuildFailed(f"{message}\n{said}\n  hint: {hint}")


def _satisfies(version: str, spec: Any) -> bool:
    try:
        return spec is None or spec.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def explain_offline_failure(output: str) -> str | None:
    """The fix for a hermetic build that failed in the container because of the missing network:
    pip found a requirement in no wheelhouse, or a command could not reach a host; None otherwise."""
    missing = list(dict.fromkeys(m["req"] for m in _NO_MATCH.finditer(output)))
    if missing:
        return (
            f"pip in the build container found no {', '.join(missing)} in the wheelhouse resolved on the "
            "host, and a hermetic build has no network: a requirement only the build itself asks for (the "
            "build backend, a before_build `pip install`, a dynamic dependency of the wheel) is not one "
            "the host can see. Name it in the project's [build-system] requires (or, for test_command, in "
            "the recipe's test_requires), or set `network: true` in the recipe"
        )
    if _OFFLINE.search(output):
        return (
            "a command in the build container tried to reach the network, which a hermetic build does not "
            "have: install system packages with the recipe's image.packages (built into the builder image "
            "once) instead of apt-get/dnf in before_all or before_build, Python packages as build "
            "requirements or test_requires, or set `network: true` in the recipe"
        )
    return None
