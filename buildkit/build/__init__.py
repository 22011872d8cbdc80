"""``buildkit build``: one cibuildwheel run per job in a pinned builder image, then the gate.

For each job: the recipe's pre-build checks (tuned CSVs) run first, so a bad table stops the build
before any compiler starts; the source is staged into a private folder (cibuildwheel copies it to
the fixed path ``/project`` of a container that gets no host mount); cibuildwheel builds and
repairs; the wheel is inspected and gated; only a passing wheel and its manifest are moved into
``<out>/<job-id>/``, by a rename from a staging folder inside ``<out>`` (``.staging-<job>-<pid>-*``:
a dot-folder, which ``publish`` never reads; one left by a killed build is swept by the next run).

Outputs: a failed or gate-refused job removes the previous ``<out>/<job-id>/`` (its wheel no longer
matches the recipe or source, and ``publish`` must not find it); an interrupted job (Ctrl-C,
SIGTERM) or a lost Docker engine leaves the previous output as it was. No job leaves a container
behind; when the engine stops answering, the error names the label to clean up by.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from packaging.utils import parse_wheel_filename

from buildkit import manifest
from buildkit.build import cibw, provenance
from buildkit.docker_engine import ENGINE_ERRORS, engine_failed
from buildkit.errors import (
    BuildFailed,
    BuildkitError,
    DockerUnavailable,
    GateFailed,
    Interrupted,
    RecipeError,
    UsageError,
)
from buildkit.plan.models import Job, Plan
from buildkit.recipe import Recipe

if TYPE_CHECKING:
    from buildkit.gate.config import GateConfig
    from buildkit.gate.rules.regression import RegressionCheck

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

Echo = Callable[[str], None]

#: SOURCE_DATE_EPOCH when the source has no git history: 1980-01-01, the zip format's epoch
DEFAULT_EPOCH = 315532800
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
_SOURCE_IGNORE = shutil.ignore_patterns(
    ".git", "build", "dist", "wheelhouse", "*.egg-info", "__pycache__", "*.pyc", ".pytest_cache", "*.so"
)


@dataclass(frozen=True)
class BuildOptions:
    out_dir: Path
    log_dir: Path
    use_cache: bool = True
    ca_bundle: Path | None = HOST_CA_BUNDLE
    build_isolation: bool = True
    parallel_jobs: int = 2
    force: bool = False  # rebuild even when dist/<job-id>/ holds a wheel built from the same inputs
    source_date_epoch: int | None = None  # None: $SOURCE_DATE_EPOCH, else the source's last commit time


@dataclass
class JobResult:
    job: str
    status: str  # "passed" | "up-to-date" | "gate-failed" | "build-failed" | "interrupted"
    wheel: Path | None = None
    seconds: float = 0.0
    message: str = ""
    log: Path | None = None
    timings: dict[str, float] = field(default_factory=dict)
    gate: str | None = None  # "PASS" | "FAIL"; None: the gate did not run
    errors: int = 0  # error findings of the gate and of the regression check
    warnings: int = 0
    removed: Path | None = None  # the previous output folder of the job, removed as stale

    @property
    def manifest(self) -> Path | None:
        return manifest.manifest_path(self.wheel) if self.wheel is not None else None


# --------------------------------------------------------------------------- source staging
def source_date_epoch(source: Path, override: int | None = None) -> int:
    """``override``, ``$SOURCE_DATE_EPOCH``, else the time of the last commit touching the source
    folder, else :data:`DEFAULT_EPOCH` (never "now")."""
    if override is not None:
        return override
    if "SOURCE_DATE_EPOCH" in os.environ:
        value = os.environ["SOURCE_DATE_EPOCH"]
        if not value.isdigit():
            raise UsageError(f"SOURCE_DATE_EPOCH={value!r} is not a number of seconds since 1970")
        return int(value)
    try:
        out = subprocess.run(
            ["git", "-C", str(source), "log", "-1", "--format=%ct", "--", "."],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
        return int(out) if out else DEFAULT_EPOCH
    except (OSError, subprocess.SubprocessError, ValueError):
        return DEFAULT_EPOCH


def fetch_source(recipe: Recipe, into: Path) -> Path:
    """The recipe's source as a local folder: a path source as is, a git source cloned at its ref."""
    local = recipe.source_dir()
    if local is not None:
        if not local.is_dir():
            raise recipe.error(f"source.path: {local} is not a directory", ("source", "path"))
        return local
    assert recipe.source.git is not None
    dest = into / "git"
    ref = recipe.source.ref or "HEAD"
    steps = [
        ["git", "init", "--quiet", str(dest)],
        ["git", "-C", str(dest), "fetch", "--quiet", "--depth", "1", "--", recipe.source.git, ref],
        ["git", "-C", str(dest), "checkout", "--quiet", "FETCH_HEAD"],
    ]
    for cmd in steps:  # fetch by ref works for branches, tags and commit ids alike
        try:
            subprocess.run(cmd, check=True, capture_output=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            raise BuildFailed(
                f"cannot fetch {recipe.source.git} at {ref}: {detail.decode(errors='replace').strip()}"
            ) from None
    root = dest.resolve()
    src = (dest / recipe.source.subdirectory).resolve() if recipe.source.subdirectory else root
    if not src.is_relative_to(root) or not src.is_dir():
        raise recipe.error(
            f"source.subdirectory {recipe.source.subdirectory!r} is not a folder inside the repository",
            ("source", "subdirectory"),
        )
    return src


def stage_source(source: Path, dest: Path, ca_bundle: Path | None, skip: Sequence[Path] = ()) -> bool:
    """Copy ``source`` to ``dest`` without build litter nor the folders ``skip`` (``--out`` and
    ``--log-dir`` when they lie inside the source); add the CA bundle pip needs in the container."""
    skipped = {path.resolve() for path in (*skip, dest)}

    def ignore(folder: str, names: list[str]) -> set[str]:
        ignored = set(_SOURCE_IGNORE(folder, names))
        base = Path(folder).resolve()
        ignored.update(name for name in names if base / name in skipped)
        return ignored

    shutil.copytree(source, dest, ignore=ignore, symlinks=True)
    if ca_bundle is not None and ca_bundle.is_file():
        (dest / ".buildkit").mkdir(exist_ok=True)
        shutil.copyfile(ca_bundle, dest / ".buildkit" / "ca-bundle.crt")
        return True
    return False


def tree_digest(root: Path) -> str:
    """sha256 over the relative paths, modes and bytes of every file under ``root`` (sorted)."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() or p.is_symlink()):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".buildkit/"):
            continue  # the CA bundle does not change what is built
        digest.update(rel.encode() + b"\0")
        if path.is_symlink():
            digest.update(b"link:" + os.readlink(path).encode())
        else:
            digest.update(b"x" if os.access(path, os.X_OK) else b"-")
            digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


# --------------------------------------------------------------------------- up-to-date check
def tool_versions() -> dict[str, str | None]:
    """Versions of the host tools that shape a wheel or its verdict: cibuildwheel drives the build,
    auditwheel's policy data is the gate's (the auditwheel that repairs runs in the builder image,
    whose id is part of the key)."""
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for name in ("cibuildwheel", "auditwheel"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def gate_config(recipe: Recipe, job: Job) -> GateConfig:
    """What ``build`` gates the job's wheel with (``check --recipe R --job ID`` uses the same)."""
    from buildkit.gate.config import GateConfig

    return GateConfig.from_recipe_job(recipe, job)


def gate_key(config: GateConfig) -> dict[str, Any]:
    """The gate configuration as plain JSON data (keys sorted) for :func:`inputs_key`, without the
    recipe's path as typed: its sha256 stays, so the same rules give the same key from any folder."""
    data: dict[str, Any] = json.loads(json.dumps(config.to_json(), sort_keys=True, default=str))
    data.pop("recipe", None)
    return data


def inputs_key(
    job: Job,
    image_id: str,
    source_digest: str,
    epoch: int,
    isolation: bool,
    *,
    recipe_sha256: str,
    gate: Mapping[str, Any],
    tools: Mapping[str, str | None],
) -> str:
    """Everything a job's wheel and its verdict are made from: equal keys, equal wheels judged by
    equal rules (the up-to-date check). ``gate`` is :func:`gate_key`, ``tools`` :func:`tool_versions`."""
    import hashlib

    from buildkit import __version__

    payload = {
        "buildkit": __version__,
        "job": job.to_json(),
        "image": image_id,
        "source": source_digest,
        "source_date_epoch": epoch,
        "isolation": isolation,
        "recipe_sha256": recipe_sha256,
        "gate": dict(gate),
        "tools": dict(tools),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def up_to_date(dest: Path, key: str) -> Path | None:
    """The wheel in ``dest`` when its manifest records ``key`` and its bytes still match."""
    for wheel in sorted(dest.glob("*.whl")):
        try:
            data = manifest.read(wheel)
        except (OSError, ValueError):
            continue
        if (
            data.get("inputs_key") == key
            and data.get("verdict", {}).get("passed") is True
            and data.get("wheel", {}).get("sha256") == manifest.sha256_file(wheel)
        ):
            return wheel
    return None


def run_prebuild_checks(recipe: Recipe, source: Path) -> list[Path]:
    from buildkit.build.tuned import check_tuned_csvs

    return check_tuned_csvs(source, recipe.tuned_csv, recipe=recipe)


# --------------------------------------------------------------------------- the gate
@dataclass(frozen=True)
class Gated:
    """The gate's verdict on one wheel, as much of it as ``build`` needs."""

    passed: bool
    errors: int
    warnings: int
    sha256: str
    size: int
    tag: str | None
    summary: str  # the human report (errors and warnings summarised)
    details: str  # every line, for the log
    verdict: dict[str, Any]  # for the manifest


def gate_wheel(wheel: Path, config: GateConfig) -> Gated:
    from buildkit.gate.evaluate import evaluate
    from buildkit.gate.report import render_human, verdict_to_json
    from buildkit.inspect import inspect_wheel

    verdict = evaluate(inspect_wheel(wheel), config)
    return Gated(
        passed=verdict.passed,
        errors=len(verdict.errors),
        warnings=len(verdict.warnings),
        sha256=verdict.sha256,
        size=verdict.size,
        tag=verdict.overall_tag,
        summary=render_human(verdict),
        details=render_human(verdict, verbose=True),
        verdict=verdict_to_json(verdict),
    )


# --------------------------------------------------------------------------- docker helpers
def ccache_volume(job: Job, image_tag: str) -> str:
    """One compiler-cache volume per (image, job): jobs with other flags or toolchains never share."""
    import hashlib

    key = hashlib.sha256(f"{image_tag}\0{job.id}".encode()).hexdigest()[:12]
    return f"rocm-buildkit-ccache-{key}"


#: label put on every container a build creates (value: the build's own id), so that cleanup
#: after a failure or Ctrl-C removes exactly ours, never another build's on the same engine
BUILD_LABEL = "io.rocm-buildkit.build"


def labelled_containers(client: Any, build_id: str) -> list[Any]:
    return list(client.containers.list(all=True, filters={"label": f"{BUILD_LABEL}={build_id}"}))


def remove_containers(client: Any, build_id: str) -> bool:
    """Remove the containers labelled with ``build_id``; False when that was impossible (the engine
    does not answer), so that the caller can tell the user what to clean up."""
    try:
        containers = labelled_containers(client, build_id)
    except Exception:
        return False
    removed = True
    for container in containers:
        try:
            container.remove(force=True)
        except Exception as exc:
            removed = removed and getattr(exc, "status_code", None) == 404  # already gone
    return removed


@functools.cache
def _cibuildwheel_interpreters() -> dict[str, str]:
    """cibuildwheel's own table of build identifiers and interpreter folders (``cp312-manylinux_x86_64``
    -> ``/opt/python/cp312-cp312``), read from its ``resources/build-platforms.toml``."""
    from importlib import resources

    try:
        text = resources.files("cibuildwheel").joinpath("resources/build-platforms.toml").read_text("utf-8")
        configs = tomllib.loads(text)["linux"]["python_configurations"]
    except (OSError, KeyError, ValueError, ModuleNotFoundError):
        return {}
    return {
        str(c["identifier"]): str(c["path_str"]) for c in configs if "identifier" in c and "path_str" in c
    }


def job_interpreter(job: Job) -> str:
    """The Python cibuildwheel builds ``job`` with in its builder image: ``/opt/python/<cp>-<cp>``
    (``/opt/python/cp312-cp312/bin/python`` for a cp312 job). The Debian builder has only
    ``cp313-cp313`` (and ``cp39-cp39``, a link to it, as cibuildwheel's utility interpreter)."""
    home = _cibuildwheel_interpreters().get(f"{job.cp_tag}-manylinux_x86_64")
    if home is None:
        match = re.fullmatch(r"(cp\d+)t?", job.cp_tag)
        home = f"/opt/python/{match.group(1) if match else job.cp_tag}-{job.cp_tag}"
    return f"{home}/bin/python"


def toolchain_versions(
    client: Any,
    image: str,
    *,
    python: str = provenance.BUILDER_PYTHON,
    build_id: str = "toolchain-probe",
) -> dict[str, str]:
    """Versions read inside the builder image (no network, removed afterwards); ``python`` is the
    job's interpreter (:func:`job_interpreter`), ``build_id`` the value of the container's label."""
    import shlex

    interpreter = shlex.quote(python)
    script = (
        "echo hipcc=$(hipcc --version 2>/dev/null | grep -m1 -o 'HIP version: .*' || echo none);"
        "echo clang=$( (hipcc --version 2>/dev/null || clang --version) "
        "| grep -m1 'clang version' || echo none);"
        f"echo python=$(if [ -x {interpreter} ]; then {interpreter} --version 2>&1; else echo none; fi);"
        "echo auditwheel=$(auditwheel --version 2>&1 | head -1);"
        "echo patchelf=$(patchelf --version 2>&1 | head -1);"
        "echo gcc=$(gcc --version 2>/dev/null | head -1 || echo none);"
        "echo glibc=$(ldd --version 2>&1 | head -1)"
    )
    container = client.containers.create(
        image, ["sh", "-c", script], network_disabled=True, labels={BUILD_LABEL: build_id}
    )
    try:
        container.start()
        container.wait(timeout=120)
        raw = container.logs(stdout=True, stderr=False)
    finally:
        with contextlib.suppress(Exception):
            container.remove(force=True)
    out: dict[str, str] = {}
    for line in raw.decode(errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key:
            out[key.strip()] = value.strip()
    return out


def _engine_error(client: Any) -> BaseException | None:
    """The error of a ping when the engine no longer answers, else None."""
    try:
        client.ping()
    except ENGINE_ERRORS as exc:
        return exc
    except Exception:
        return None
    return None


def _engine_lost(exc: BaseException, run: _Run, cleaned: bool) -> DockerUnavailable:
    """The engine stopped answering (or refused) during ``run.step``; ``cleaned``: the job's
    containers were removed (else the hint says how, by label)."""
    hint = ""
    if not cleaned:
        hint = (
            "containers of this build may be left behind; once the engine answers, remove them with "
            f"`docker rm -f $(docker ps -aq --filter label={BUILD_LABEL}={run.build_id})`"
        )
        if run.step == _STEP_PROVENANCE:
            hint += f" and `--filter label={provenance.PROBE_LABEL}`"
    return engine_failed(exc, during=f"{run.step} of {run.job.id}", hint=hint)


# --------------------------------------------------------------------------- --out housekeeping
#: a job's staging folder inside ``--out``: ``.staging-<job>-<pid>-<random>`` (a dot-folder:
#: ``publish`` skips it); the swap folders of :func:`_publish_to_out` and :func:`discard_output` are
#: ``.<job>.incoming-<pid>-*``, ``.<job>.previous-<pid>-*`` and ``.<job>.stale-<pid>-*``
STAGING_PREFIX = ".staging-"
_STAGING = re.compile(r"\.staging-(?P<job>.+)-(?P<pid>\d+)-[^-]+")
_SWAP = re.compile(r"\.(?P<job>.+)\.(?P<kind>incoming|previous|stale)-(?P<pid>\d+)-[^-]+")


def staging_folder(out_dir: Path, job: Job) -> Path:
    """A private folder for one job inside ``out_dir`` (same file system as the final rename)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{job.id}-{os.getpid()}-", dir=out_dir))
    except OSError as exc:
        raise UsageError(f"--out {out_dir}: cannot create a staging folder for {job.id}: {exc}") from None


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as another user
        return True
    return True


def sweep_debris(out_dir: Path, echo: Echo) -> list[Path]:
    """Remove the staging and swap folders that killed builds left in ``out_dir`` (their pid no longer
    runs on this host); a ``.previous`` folder whose job folder is missing (a build killed in the
    instant of its swap) is put back instead. Returns the folders removed."""
    try:
        entries = sorted(out_dir.iterdir())
    except OSError:
        return []
    removed: list[Path] = []
    for entry in entries:
        match = _STAGING.fullmatch(entry.name) or _SWAP.fullmatch(entry.name)
        if match is None or entry.is_symlink() or not entry.is_dir() or _running(int(match["pid"])):
            continue
        dest = out_dir / match["job"]
        if match.groupdict().get("kind") == "previous" and not dest.exists():
            with contextlib.suppress(OSError):
                os.replace(entry, dest)
                echo(f"restored {dest} from {entry.name} (a build was killed while replacing it)")
                continue
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            removed.append(entry)
    if removed:
        names = ", ".join(p.name for p in removed)
        echo(f"removed {len(removed)} folder(s) left in {out_dir} by killed builds: {names}")
    return removed


def discard_output(dest: Path) -> list[str]:
    """Remove a job's output folder (renamed aside first: a reader sees all of it or nothing);
    returns the names of the wheels it held. OSError when it cannot be removed."""
    if dest.is_symlink() or not dest.is_dir():
        return []
    wheels = sorted(p.name for p in dest.glob("*.whl"))
    aside = dest.with_name(f".{dest.name}.stale-{os.getpid()}-{secrets.token_hex(4)}")
    os.replace(dest, aside)
    shutil.rmtree(aside)
    return wheels


def _drop_stale_output(dest: Path, job: Job, echo: Echo, *, keep_key: str | None) -> Path | None:
    """After a failed or gate-refused job: remove its previous output, which ``publish`` would
    otherwise publish although it no longer matches the recipe or source. Kept only when it was
    built from exactly the current inputs (``keep_key``: a ``--force`` rebuild that failed)."""
    if keep_key is not None and up_to_date(dest, keep_key) is not None:
        return None
    try:
        wheels = discard_output(dest)
    except OSError as exc:
        echo(
            f"[{job.id}] warning: cannot remove the previous output {dest} ({exc}): it no longer matches "
            "the recipe/source; remove it before `buildkit publish`"
        )
        return None
    if not wheels:
        return None
    echo(
        f"[{job.id}] removed the previous wheel of {job.id}: it no longer matches the recipe/source "
        f"({', '.join(wheels)})"
    )
    return dest


# --------------------------------------------------------------------------- one job
@contextlib.contextmanager
def _log_file(path: Path) -> Iterator[TextIO]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", errors="surrogateescape") as fh:
        yield fh


def _run_cibuildwheel(
    staged: Path, out: Path, env: Mapping[str, str], log: TextIO, echo: Echo, *, verbose: bool
) -> None:
    cmd = [sys.executable, "-m", "cibuildwheel", "--platform", "linux", "--output-dir", str(out), "."]
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    proc = subprocess.Popen(
        cmd,
        cwd=staged,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # our Ctrl-C handling decides when it stops
    )
    assert proc.stdout is not None
    tail: list[str] = []
    try:
        for raw in proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            log.write(line + "\n")
            tail = [*tail[-30:], line]
            if verbose:
                echo("    " + line)
        rc = proc.wait()
    except KeyboardInterrupt:
        # let cibuildwheel remove its container itself, then make sure
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        raise
    if rc != 0:
        raise BuildFailed(
            f"cibuildwheel failed (exit {rc}); last lines:\n      " + "\n      ".join(tail[-15:])
        )


_STEP_CIBUILDWHEEL = "cibuildwheel"
_STEP_PROVENANCE = "recording the build environment (provenance)"


@dataclass
class _Run:
    """One job being built: what :func:`build_one` was given, where it is (``step``, named in
    errors), its inputs ``key`` once known, and its ``result``."""

    recipe: Recipe
    job: Job
    options: BuildOptions
    client: Any
    image: Any
    source: Path
    work: Path
    echo: Echo
    verbose: bool
    result: JobResult
    step: str = "staging the source"
    key: str | None = None

    @property
    def build_id(self) -> str:
        """The value of the build label on every container of this job (the staging folder's name)."""
        return self.work.name.lstrip(".")

    @property
    def dest(self) -> Path:
        return self.options.out_dir / self.job.id


def build_one(
    recipe: Recipe,
    job: Job,
    options: BuildOptions,
    *,
    client: Any,
    image: Any,
    source: Path,
    echo: Echo,
    verbose: bool = False,
    interrupted: str | None = None,
) -> JobResult:
    """Build, repair, gate and publish-to-``out`` one job (the one path of `build_plan` and `verify`).

    Never leaves partial output. A failed or gate-refused job removes the job's previous output
    (unless it was built from exactly these inputs); Ctrl-C becomes :class:`Interrupted` (message
    ``interrupted``) and keeps it; an engine that stops answering becomes :class:`DockerUnavailable`
    naming the endpoint and the step, and keeps it too."""
    started = time.monotonic()
    log_path = options.log_dir / f"{job.id}.log"
    result = JobResult(job=job.id, status="build-failed", log=log_path)
    run = _Run(
        recipe,
        job,
        options,
        client,
        image,
        source,
        staging_folder(options.out_dir, job),
        echo,
        verbose,
        result,
    )
    cleaned: bool | None = None
    try:
        with _log_file(log_path) as log:
            _run_job(run, log)
    except KeyboardInterrupt:
        # Ctrl-C/SIGTERM: an Interrupted (exit 130, a message, no traceback); the finally below
        # still removes the job's staging folder and containers first
        result.status = "interrupted"
        message = (
            interrupted or f"interrupted during {job.id}: no partial output was left in {options.out_dir}"
        )
        raise Interrupted(message) from None
    except ENGINE_ERRORS as exc:
        cleaned = remove_containers(client, run.build_id)
        raise _engine_lost(exc, run, cleaned) from None
    except DockerUnavailable:
        raise
    except BuildkitError as exc:
        lost = _engine_error(client) if run.step == _STEP_CIBUILDWHEEL else None
        if lost is not None:  # cibuildwheel failed because the engine went away
            cleaned = remove_containers(client, run.build_id)
            raise _engine_lost(lost, run, cleaned) from None
        result.message = str(exc)
        with contextlib.suppress(OSError), log_path.open("a", encoding="utf-8") as log:
            log.write(f"\nERROR: {exc}\n")
        keep = run.key if result.status == "build-failed" else None
        result.removed = _drop_stale_output(run.dest, job, echo, keep_key=keep)
    finally:
        result.seconds = time.monotonic() - started
        shutil.rmtree(run.work, ignore_errors=True)
        if cleaned is None:
            remove_containers(client, run.build_id)
    return result


def _run_job(run: _Run, log: TextIO) -> None:
    """The steps of :func:`build_one`; ``run`` records how far it got."""
    staged = run.work / "src"
    with_ca = stage_source(
        run.source, staged, run.options.ca_bundle, skip=(run.options.out_dir, run.options.log_dir)
    )
    pins = cibw.constraints(run.job)
    if pins is not None:
        (staged / ".buildkit").mkdir(exist_ok=True)
        (staged / ".buildkit" / cibw.CONSTRAINTS_NAME).write_text(pins, encoding="utf-8")
    epoch = source_date_epoch(run.source, run.options.source_date_epoch)
    config = gate_config(run.recipe, run.job)
    run.key = inputs_key(
        run.job,
        run.image.id,
        tree_digest(staged),
        epoch,
        run.options.build_isolation,
        recipe_sha256=run.recipe.sha256,
        gate=gate_key(config),
        tools=tool_versions(),
    )
    run.step = "the up-to-date check"
    if not run.options.force and _reuse(run.dest, run.key, config, log, run.result):
        return
    wheel = _cibuildwheel(run, staged, epoch, with_ca, log)
    gated, regression = _gate(run, wheel, config, log)
    _record(run, wheel, staged, epoch, gated, regression)


def _cibuildwheel(run: _Run, staged: Path, epoch: int, with_ca: bool, log: TextIO) -> Path:
    """Build and repair the staged source; the one wheel, named with the plan's version."""
    settings = cibw.CibwSettings(
        image=run.image.tag,
        source_date_epoch=epoch,
        ccache_volume=ccache_volume(run.job, run.image.tag) if run.options.use_cache else None,
        with_ca_bundle=with_ca,
        build_isolation=run.options.build_isolation,
        parallel_jobs=run.options.parallel_jobs,
        labels={BUILD_LABEL: run.build_id},
    )
    cibw_options = cibw.cibuildwheel_options(run.job, settings)
    for line in cibw.describe(cibw_options):
        log.write(line + "\n")
    env = cibw.subprocess_environment(os.environ, cibw_options)
    env["SOURCE_DATE_EPOCH"] = str(epoch)
    raw_out = run.work / "wheelhouse"
    run.step = _STEP_CIBUILDWHEEL
    t0 = time.monotonic()
    _run_cibuildwheel(staged, raw_out, env, log, run.echo, verbose=run.verbose)
    run.result.timings["cibuildwheel"] = time.monotonic() - t0
    wheels = sorted(raw_out.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildFailed(f"expected one wheel from cibuildwheel, found {[w.name for w in wheels]}")
    _check_version(wheels[0], run.job)
    return wheels[0]


def _gate(run: _Run, wheel: Path, config: GateConfig, log: TextIO) -> tuple[Gated, RegressionCheck | None]:
    """The gate, then the recipe's no-regression rule; GateFailed when either refuses the wheel."""
    from buildkit.gate.rules.regression import compare_with_last_release

    result, job = run.result, run.job
    run.step = "the gate"
    t0 = time.monotonic()
    gated = gate_wheel(wheel, config)
    result.timings["gate"] = time.monotonic() - t0
    _note_verdict(result, gated)
    log.write(gated.details + "\n")  # the log keeps every line
    if not gated.passed:
        result.status = "gate-failed"
        raise GateFailed(f"{job.id}: the gate refused {wheel.name}\n{gated.summary}")
    run.step = "the regression check"
    regression = compare_with_last_release(job, wheel, workdir=run.work / "baseline")
    if regression is not None:
        log.write(f"regression check against {regression.compared_with or 'no earlier release'}\n")
        if not regression.passed:
            result.status = "gate-failed"
            result.gate = "FAIL"
            result.errors += len(regression.findings)
            lines = "\n".join(f"  ERROR [regression] {f.message}" for f in regression.findings)
            raise GateFailed(f"{job.id}: {wheel.name} regresses against the last release\n{lines}")
    return gated, regression


def _record(
    run: _Run, wheel: Path, staged: Path, epoch: int, gated: Gated, regression: RegressionCheck | None
) -> None:
    """Manifest and provenance beside the staged wheel, then all of it into ``--out/<job-id>/``."""
    recipe, job, image = run.recipe, run.job, run.image
    interpreter = job_interpreter(job)
    run.step = "reading the toolchain versions in the builder image"
    toolchain = toolchain_versions(run.client, image.tag, python=interpreter, build_id=run.build_id)
    manifest.write(
        wheel,
        {
            "wheel": {"filename": wheel.name, "sha256": gated.sha256, "size": gated.size},
            "recipe": {"name": recipe.name, "file": recipe.path.name, "sha256": recipe.sha256},
            "job": job.to_json(),
            "image": {"profile": job.image_profile, "tag": image.tag, "id": image.id},
            "toolchain": toolchain,
            "archs": [str(t) for t in job.archs.kept],
            "source": _source_info(recipe, run.source),
            "source_date_epoch": epoch,
            "inputs_key": run.key,
            "regression": regression.to_json() if regression is not None else None,
            "verdict": gated.verdict,
        },
    )
    run.step = _STEP_PROVENANCE
    provenance.record(
        wheel,
        client=run.client,
        image=image,
        source=staged,
        isolation=run.options.build_isolation,
        interpreter=interpreter,
    )
    run.step = f"moving the wheel into {run.dest}"
    _publish_to_out(wheel, run.dest)
    run.result.status = "passed"
    run.result.wheel = run.dest / wheel.name
    run.result.message = f"{wheel.name} ({gated.tag})"


def _note_verdict(result: JobResult, gated: Gated) -> None:
    result.gate = "PASS" if gated.passed else "FAIL"
    result.errors = gated.errors
    result.warnings = gated.warnings


def _reuse(dest: Path, key: str, config: GateConfig, log: TextIO, result: JobResult) -> bool:
    """True (``result`` filled in) when ``dest`` holds a wheel built from ``key`` that still passes
    the gate, run again on it (cheap next to a build: it catches rule changes the key cannot see)."""
    existing = up_to_date(dest, key)
    if existing is None:
        return False
    gated = gate_wheel(existing, config)
    if not gated.passed:
        log.write(f"{existing.name} was built from the same inputs but fails the gate now: rebuilding\n")
        return False
    log.write(
        f"up to date: {existing.name} was built from the same inputs ({key[:12]}) and passes the gate\n"
    )
    _note_verdict(result, gated)
    result.status = "up-to-date"
    result.wheel = existing
    result.message = f"{existing.name} (inputs unchanged)"
    return True


def _check_version(wheel: Path, job: Job) -> None:
    _name, version, _build, _tags = parse_wheel_filename(wheel.name)
    if str(version) != job.version:
        raise BuildFailed(
            f"{wheel.name}: the package built version {version}, the plan says {job.version}; "
            "make its build read BUILDKIT_VERSION (or SETUPTOOLS_SCM_PRETEND_VERSION)"
        )


def _source_info(recipe: Recipe, source: Path) -> dict[str, str]:
    info = {k: v for k, v in vars(recipe.source).items() if v is not None}
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        commit = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
        if commit:
            info["commit"] = commit
    return info


def _publish_to_out(wheel: Path, dest: Path) -> None:
    """Put the wheel and its companions (manifest, attestation) into ``dest`` all at once.

    The files are first copied into a hidden folder inside ``dest``'s parent (the same file system
    as ``dest``, whatever the staging folder's), then that folder is renamed to ``dest``. A previous
    ``dest`` is set aside for the instant of the swap and put back if the swap fails.
    """
    parent = dest.parent
    parent.mkdir(parents=True, exist_ok=True)
    # two builds of the same job into the same --out (two terminals, two CI steps) swap one at a time:
    # without the lock one of them could find ``dest`` gone between its two renames and fail. The lock
    # is taken on the folder itself (flock works on a directory's descriptor): no lock file is left.
    folder = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        _swap_into(wheel, dest)
    finally:
        os.close(folder)  # releases the lock


def _swap_into(wheel: Path, dest: Path) -> None:
    parent = dest.parent
    files = [wheel, manifest.manifest_path(wheel), *provenance.companions(wheel)]
    incoming = Path(tempfile.mkdtemp(prefix=f".{dest.name}.incoming-{os.getpid()}-", dir=parent))
    previous = parent / f".{dest.name}.previous-{os.getpid()}-{incoming.name.rsplit('-', 1)[-1]}"
    try:
        for path in files:
            shutil.copyfile(path, incoming / path.name)
        os.chmod(incoming, 0o755)
        had_previous = dest.exists()
        if had_previous:
            os.replace(dest, previous)
        try:
            os.replace(incoming, dest)
        except OSError:
            if had_previous:
                os.replace(previous, dest)
            raise
        if had_previous:
            shutil.rmtree(previous, ignore_errors=True)
    except OSError as exc:
        raise BuildFailed(f"cannot move {wheel.name} into {dest}: {exc}") from None
    finally:
        shutil.rmtree(incoming, ignore_errors=True)


# --------------------------------------------------------------------------- all jobs
def check_writable(folder: Path, what: str) -> None:
    """``folder`` is, or can become, a writable folder (its nearest existing ancestor is a writable
    folder): checked before any image or compiler starts, creating nothing."""
    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise UsageError(f"{what} {folder}: {probe} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {folder}: {probe} is not writable")


def build_plan(
    recipe: Recipe,
    plan: Plan,
    job_ids: Sequence[str],
    options: BuildOptions,
    *,
    echo: Echo,
    verbose: bool = False,
    client: Any = None,
) -> list[JobResult]:
    from buildkit.image import ensure_image, rocm_build_args

    jobs = [plan.job(j) for j in dict.fromkeys(job_ids)] if job_ids else list(plan.jobs)
    if not jobs:
        raise RecipeError("the plan has no job to build", file=recipe.display_path)
    check_writable(options.out_dir, "--out")
    check_writable(options.log_dir, "--log-dir")
    sweep_debris(options.out_dir, echo)
    if client is None:
        from buildkit.docker_engine import connect

        client = connect()
    results: list[JobResult] = []
    with tempfile.TemporaryDirectory(prefix="buildkit-src-") as tmp:
        source = fetch_source(recipe, Path(tmp))
        checked = run_prebuild_checks(recipe, source)
        for path in checked:
            echo(f"pre-build check: {path.relative_to(source)} ok (gfx column, unique keys)")
        images: dict[tuple[str, str], Any] = {}
        for job in jobs:  # refuse a job its image cannot serve before building anything
            rocm_build_args(job.image_profile, job.rocm)
        for job in jobs:
            key = (job.image_profile, job.rocm)
            if key not in images:  # one image per (profile, ROCm release): a 7.2 job never builds on 6.4
                try:
                    images[key] = ensure_image(
                        job.image_profile,
                        build_args=rocm_build_args(job.image_profile, job.rocm),
                        client=client,
                        progress=echo,
                    )
                except ENGINE_ERRORS as exc:
                    raise engine_failed(exc, during=f"preparing the builder image of {job.id}") from None
            image = images[key]
            echo(f"[{job.id}] building in {image.tag} for {job.archs.pytorch_rocm_arch()}")
            result = build_one(
                recipe, job, options, client=client, image=image, source=source, echo=echo, verbose=verbose
            )
            results.append(result)
            first = result.message.splitlines()[0] if result.message else ""
            echo(f"[{job.id}] {result.status} in {result.seconds:.1f}s {first}")
            if result.status not in ("passed", "up-to-date"):
                echo(result.message)
                echo(f"    log: {result.log}")
    return results


# --------------------------------------------------------------------------- summary
def _shown(path: Path, cwd: Path) -> str:
    """``path`` relative to ``cwd`` when it lies below it, else as is."""
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def _verdict_cell(r: JobResult) -> str:
    if r.gate is None:
        return "not run"
    counts = f"{r.errors} error{'s' * (r.errors != 1)}"
    if r.warnings:
        counts += f", {r.warnings} warning{'s' * (r.warnings != 1)}"
    return f"{r.gate} ({counts})"


def render_summary(
    results: Sequence[JobResult],
    *,
    recipe: str | None = None,
    out_dir: Path | None = None,
    cwd: Path | None = None,
) -> str:
    """Per job: status, time and gate verdict, then where its wheel, manifest and log are; next steps
    (smoke each new wheel, publish dry-run) when a job passed and ``recipe`` is given."""
    import shlex

    here = cwd or Path.cwd()
    rows = [("job", "status", "time", "gate")]
    rows += [(r.job, r.status, f"{r.seconds:.1f}s", _verdict_cell(r)) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    table = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines = [table[0]]
    smoke: list[str] = []
    for r, row in zip(results, table[1:], strict=True):
        lines.append(row)
        if r.wheel is not None and r.manifest is not None:
            lines.append(f"  wheel     {_shown(r.wheel, here)}")
            lines.append(f"  manifest  {_shown(r.manifest, here)}")
            if recipe is not None:
                smoke.append(
                    f"  buildkit smoke {shlex.quote(_shown(r.wheel, here))} --recipe {shlex.quote(recipe)}"
                )
        if r.removed is not None:
            lines.append(f"  removed   {_shown(r.removed, here)} (the previous wheel, now stale)")
        if r.log is not None:
            lines.append(f"  log       {_shown(r.log, here)}")
    if smoke and out_dir is not None and recipe is not None:
        out = shlex.quote(_shown(out_dir, here))
        lines += ["next steps:", *smoke, f"  buildkit publish {out} --recipe {shlex.quote(recipe)} --dry-run"]
    return "\n".join(lines)
