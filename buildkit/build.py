"""``buildkit build``: one cibuildwheel run per job in a pinned builder image, then the gate.

For each job: the recipe's pre-build checks (tuned CSVs) run first, so a bad table stops the build
before any compiler starts; the source is staged into a private folder (cibuildwheel copies it to
the fixed path ``/project`` of a container that gets no host mount); cibuildwheel builds and
repairs; the wheel is inspected and gated; only a passing wheel and its manifest are moved into
``<out>/<job-id>/``, by a rename from a staging folder beside ``<out>``. A failed, gated or
interrupted job leaves nothing in ``<out>`` and no container behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from packaging.utils import parse_wheel_filename

from buildkit import cibw, manifest, provenance
from buildkit.errors import BuildFailed, BuildkitError, GateFailed, Interrupted, RecipeError, UsageError
from buildkit.plan import Job, Plan
from buildkit.recipe import Recipe

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


def stage_source(source: Path, dest: Path, ca_bundle: Path | None) -> bool:
    """Copy ``source`` to ``dest`` without build litter; add the CA bundle pip needs in the container."""
    shutil.copytree(source, dest, ignore=_SOURCE_IGNORE, symlinks=True)
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


def inputs_key(job: Job, image_id: str, source_digest: str, epoch: int, isolation: bool) -> str:
    """Everything a job's wheel is made from: equal keys, equal wheels (the up-to-date check)."""
    import hashlib
    import json

    from buildkit import __version__

    payload = {
        "buildkit": __version__,
        "job": job.to_json(),
        "image": image_id,
        "source": source_digest,
        "source_date_epoch": epoch,
        "isolation": isolation,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


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
    from buildkit.tuned import check_tuned_csvs

    return check_tuned_csvs(source, recipe.tuned_csv, recipe=recipe)


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


def toolchain_versions(client: Any, image: str) -> dict[str, str]:
    """Versions read inside the builder image (no network, removed afterwards)."""
    script = (
        "echo hipcc=$(hipcc --version 2>/dev/null | grep -m1 -o 'HIP version: .*' || echo none);"
        "echo clang=$( (hipcc --version 2>/dev/null || clang --version) "
        "| grep -m1 'clang version' || echo none);"
        "echo python=$(/opt/python/cp313-cp313/bin/python --version 2>&1 || echo none);"
        "echo auditwheel=$(auditwheel --version 2>&1 | head -1);"
        "echo patchelf=$(patchelf --version 2>&1 | head -1);"
        "echo gcc=$(gcc --version 2>/dev/null | head -1 || echo none);"
        "echo glibc=$(ldd --version 2>&1 | head -1)"
    )
    container = client.containers.create(
        image, ["sh", "-c", script], network_disabled=True, labels={BUILD_LABEL: "toolchain-probe"}
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
    Never leaves partial output; Ctrl-C becomes :class:`Interrupted` with message ``interrupted``."""
    from buildkit.gate import GateConfig, evaluate
    from buildkit.inspect import inspect_wheel
    from buildkit.regression import compare_with_last_release
    from buildkit.report import render_human, verdict_to_json

    started = time.monotonic()
    log_path = options.log_dir / f"{job.id}.log"
    result = JobResult(job=job.id, status="build-failed", log=log_path)
    options.out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".buildkit-{job.id}-", dir=options.out_dir.parent))
    build_id = work.name
    try:
        with _log_file(log_path) as log:
            staged = work / "src"
            with_ca = stage_source(source, staged, options.ca_bundle)
            pins = cibw.constraints(job)
            if pins is not None:
                (staged / ".buildkit").mkdir(exist_ok=True)
                (staged / ".buildkit" / cibw.CONSTRAINTS_NAME).write_text(pins, encoding="utf-8")
            epoch = source_date_epoch(source, options.source_date_epoch)
            key = inputs_key(job, image.id, tree_digest(staged), epoch, options.build_isolation)
            existing = None if options.force else up_to_date(options.out_dir / job.id, key)
            if existing is not None:
                log.write(f"up to date: {existing.name} was built from the same inputs ({key[:12]})\n")
                result.status = "up-to-date"
                result.wheel = existing
                result.message = f"{existing.name} (inputs unchanged)"
                return result
            settings = cibw.CibwSettings(
                image=image.tag,
                source_date_epoch=epoch,
                ccache_volume=ccache_volume(job, image.tag) if options.use_cache else None,
                with_ca_bundle=with_ca,
                build_isolation=options.build_isolation,
                parallel_jobs=options.parallel_jobs,
                labels={BUILD_LABEL: build_id},
            )
            cibw_options = cibw.cibuildwheel_options(job, settings)
            for line in cibw.describe(cibw_options):
                log.write(line + "\n")
            env = cibw.subprocess_environment(os.environ, cibw_options)
            env["SOURCE_DATE_EPOCH"] = str(epoch)
            raw_out = work / "wheelhouse"
            t0 = time.monotonic()
            _run_cibuildwheel(staged, raw_out, env, log, echo, verbose=verbose)
            result.timings["cibuildwheel"] = time.monotonic() - t0
            wheels = sorted(raw_out.glob("*.whl"))
            if len(wheels) != 1:
                raise BuildFailed(f"expected one wheel from cibuildwheel, found {[w.name for w in wheels]}")
            wheel = wheels[0]
            _check_version(wheel, job)

            t0 = time.monotonic()
            report = inspect_wheel(wheel)
            verdict = evaluate(report, GateConfig.from_recipe_job(recipe, job))
            result.timings["gate"] = time.monotonic() - t0
            human = render_human(verdict)
            log.write(render_human(verdict, verbose=True) + "\n")  # the log keeps every line
            if not verdict.passed:
                result.status = "gate-failed"
                raise GateFailed(f"{job.id}: the gate refused {wheel.name}\n{human}")
            regression = compare_with_last_release(job, wheel, workdir=work / "baseline")
            if regression is not None:
                log.write(f"regression check against {regression.compared_with or 'no earlier release'}\n")
                if not regression.passed:
                    result.status = "gate-failed"
                    lines = "\n".join(f"  ERROR [regression] {f.message}" for f in regression.findings)
                    raise GateFailed(f"{job.id}: {wheel.name} regresses against the last release\n{lines}")

            toolchain = toolchain_versions(client, image.tag)
            manifest.write(
                wheel,
                {
                    "wheel": {"filename": wheel.name, "sha256": verdict.sha256, "size": verdict.size},
                    "recipe": {"name": recipe.name, "file": recipe.path.name, "sha256": recipe.sha256},
                    "job": job.to_json(),
                    "image": {"profile": job.image_profile, "tag": image.tag, "id": image.id},
                    "toolchain": toolchain,
                    "archs": [str(t) for t in job.archs.kept],
                    "source": _source_info(recipe, source),
                    "source_date_epoch": epoch,
                    "inputs_key": key,
                    "regression": regression.to_json() if regression is not None else None,
                    "verdict": verdict_to_json(verdict),
                },
            )
            provenance.record(
                wheel, client=client, image=image, source=staged, isolation=options.build_isolation
            )
            _publish_to_out(wheel, options.out_dir / job.id)
            result.status = "passed"
            result.wheel = options.out_dir / job.id / wheel.name
            result.message = f"{wheel.name} ({verdict.overall_tag})"
    except KeyboardInterrupt:
        # Ctrl-C/SIGTERM: an Interrupted (exit 130, a message, no traceback); the finally below
        # still removes the job's staging folder and containers first
        result.status = "interrupted"
        message = (
            interrupted or f"interrupted during {job.id}: no partial output was left in {options.out_dir}"
        )
        raise Interrupted(message) from None
    except BuildkitError as exc:
        result.message = str(exc)
        with contextlib.suppress(OSError), log_path.open("a", encoding="utf-8") as log:
            log.write(f"\nERROR: {exc}\n")
    finally:
        result.seconds = time.monotonic() - started
        shutil.rmtree(work, ignore_errors=True)
        with contextlib.suppress(Exception):
            for container in labelled_containers(client, build_id):
                with contextlib.suppress(Exception):
                    container.remove(force=True)
    return result


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
    files = [wheel, manifest.manifest_path(wheel), *provenance.companions(wheel)]
    incoming = Path(tempfile.mkdtemp(prefix=f".{dest.name}.incoming-", dir=parent))
    previous = parent / f".{dest.name}.previous-{incoming.name.rsplit('-', 1)[-1]}"
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
                images[key] = ensure_image(
                    job.image_profile,
                    build_args=rocm_build_args(job.image_profile, job.rocm),
                    client=client,
                    progress=echo,
                )
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


def render_summary(results: Sequence[JobResult]) -> str:
    rows = [("job", "status", "time", "wheel")]
    for r in results:
        rows.append((r.job, r.status, f"{r.seconds:.1f}s", r.wheel.name if r.wheel else "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows)
