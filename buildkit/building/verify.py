"""``buildkit verify``: rebuild the job a manifest records and compare the bytes.

:func:`read_recorded` finds the recorded recipe (refusing one with other bytes);
:func:`buildkit.service.verify.verify_rebuild` expands the same job and :func:`rebuild` rebuilds it
with ``force`` in the recorded image (when the engine still has that tag) and epoch into a temporary
folder. When the sha256 differ, the differing members (:func:`diff_members`), ``diffoscope`` when
installed, and every recorded input not the same this time (image id, source commit, job fields)
are listed: any of those alone can explain a difference.

Checked before anything is rebuilt (:class:`~buildkit.errors.UsageError`, exit 2, like every other
problem with verify's inputs): the manifest's shape (:func:`check_manifest`; ``publish`` refuses the
same manifests with its code 10), and ``--keep DIR`` (:func:`prepare_keep`), so a read-only one fails
at once, not after the rebuild."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from buildkit import manifest as manifests
from buildkit.building import Echo
from buildkit.building.job import BuildOptions, JobResult, build_one
from buildkit.building.requirements import Lock
from buildkit.building.staging import fetch_source, run_prebuild_checks
from buildkit.docker_engine import connect
from buildkit.errors import BuildFailed, GateFailed, UsageError
from buildkit.image.builder import ensure_builder
from buildkit.plan.models import Job
from buildkit.recipe import Recipe
from buildkit.records import Key, json_shape, to_data

_DIFFOSCOPE_TIMEOUT = 600
_DIFFOSCOPE_MAX_LINES = 200


# --------------------------------------------------------------------------- member comparison
@json_shape(omit="empty")
@dataclass(frozen=True)
class _MemberDiff:
    name: str
    status: str  # "changed" | "only-in-original" | "only-in-rebuild" | "zip-metadata"
    original_sha256: str | None = None
    rebuilt_sha256: str | None = None
    original_size: int | None = None
    rebuilt_size: int | None = None
    detail: str = ""

    def describe(self) -> str:
        if self.status == "changed":
            return (
                f"{self.name}: sha256 {self.original_sha256} ({self.original_size} bytes) -> "
                f"{self.rebuilt_sha256} ({self.rebuilt_size} bytes)"
            )
        if self.status == "only-in-original":
            return (
                f"{self.name}: only in the original ({self.original_size} bytes, "
                f"sha256 {self.original_sha256})"
            )
        if self.status == "only-in-rebuild":
            return (
                f"{self.name}: only in the rebuild ({self.rebuilt_size} bytes, sha256 {self.rebuilt_sha256})"
            )
        return f"{self.name}: same bytes, other zip metadata ({self.detail})"


def _member_digests(path: Path) -> dict[str, tuple[str, int, zipfile.ZipInfo]]:
    out: dict[str, tuple[str, int, zipfile.ZipInfo]] = {}
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            digest = hashlib.sha256()
            with zf.open(info) as fh:
                while block := fh.read(1 << 20):
                    digest.update(block)
            out[info.filename] = (digest.hexdigest(), info.file_size, info)
    return out


def _metadata_difference(a: zipfile.ZipInfo, b: zipfile.ZipInfo) -> str:
    parts = []
    for attr in ("date_time", "external_attr", "compress_type", "create_system", "extra", "comment"):
        va, vb = getattr(a, attr), getattr(b, attr)
        if va != vb:
            parts.append(f"{attr} {va!r} -> {vb!r}")
    return ", ".join(parts)


def diff_members(original: Path, rebuilt: Path) -> list[_MemberDiff]:
    """The members of two wheels that differ (content, presence, then zip metadata and order)."""
    try:
        a, b = _member_digests(original), _member_digests(rebuilt)
    except (OSError, zipfile.BadZipFile) as exc:
        return [_MemberDiff("<archive>", "changed", detail=f"cannot read as zip: {exc}")]
    diffs: list[_MemberDiff] = []
    for name in sorted(set(a) | set(b)):
        if name not in b:
            diffs.append(_MemberDiff(name, "only-in-original", a[name][0], None, a[name][1]))
        elif name not in a:
            diffs.append(_MemberDiff(name, "only-in-rebuild", None, b[name][0], None, b[name][1]))
        elif a[name][0] != b[name][0]:
            diffs.append(_MemberDiff(name, "changed", a[name][0], b[name][0], a[name][1], b[name][1]))
        else:
            meta = _metadata_difference(a[name][2], b[name][2])
            if meta:
                diffs.append(_MemberDiff(name, "zip-metadata", a[name][0], b[name][0], detail=meta))
    if not diffs and list(a) != list(b):
        diffs.append(_MemberDiff("<archive>", "zip-metadata", detail="members are stored in another order"))
    return diffs


def _run_diffoscope(original: Path, rebuilt: Path, *, timeout: int = _DIFFOSCOPE_TIMEOUT) -> str | None:
    """diffoscope's text report (first lines), or None when diffoscope is not installed."""
    exe = shutil.which("diffoscope")
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, "--text", "-", "--no-progress", str(original), str(rebuilt)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return f"diffoscope did not finish within {timeout}s"
    lines = (proc.stdout or proc.stderr).splitlines()
    if len(lines) > _DIFFOSCOPE_MAX_LINES:
        lines = [*lines[:_DIFFOSCOPE_MAX_LINES], f"... ({len(lines) - _DIFFOSCOPE_MAX_LINES} more lines)"]
    return "\n".join(lines)


# --------------------------------------------------------------------------- rebuild
@json_shape(
    Key("wheel", convert=str),
    Key("recipe", convert=str),
    *("job", "identical", "original_sha256", "rebuilt_sha256", "notes", "members", "diffoscope"),
)
@dataclass
class VerifyResult:
    wheel: Path
    recipe: Path
    job: str
    original_sha256: str
    rebuilt_sha256: str | None = None
    rebuilt: Path | None = None
    notes: list[str] = field(default_factory=list)
    members: list[_MemberDiff] = field(default_factory=list)
    diffoscope: str | None = None

    @property
    def identical(self) -> bool:
        return self.rebuilt_sha256 == self.original_sha256


def read_manifest(wheel: Path) -> dict[str, Any]:
    path = manifests.manifest_path(wheel)
    if not wheel.is_file():
        raise UsageError(f"{wheel}: no such wheel")
    try:
        return manifests.read(wheel)
    except FileNotFoundError:
        raise UsageError(
            f"{wheel.name}: no manifest beside it ({path.name}); only built wheels can be verified"
        ) from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: unreadable manifest ({exc})") from None


def check_manifest(data: Any, path: Path) -> dict[str, Any]:
    """``data`` when it has the shape verify reads (the one publish accepts), else :class:`UsageError`."""
    problem = None
    if not isinstance(data, dict) or data.get("schema") != manifests.SCHEMA:
        problem = f"not a {manifests.SCHEMA} document (a JSON object whose schema is {manifests.SCHEMA!r})"
    else:
        for section, key in (("wheel", "sha256"), ("recipe", "sha256"), ("job", "id")):
            value = data.get(section)
            if not isinstance(value, dict):
                kind = "missing" if value is None else type(value).__name__
                problem = f"{section!r} is {kind}, not an object"
                break
            if not isinstance(value.get(key), str) or not value[key]:
                problem = f"{section}.{key} is missing or not a string"
                break
        else:
            for section in ("image", "provenance", "source"):
                if section in data and not isinstance(data[section], dict):
                    problem = f"{section!r} is {type(data[section]).__name__}, not an object"
                    break
    if problem is not None:
        raise UsageError(
            f"{path}: malformed manifest: {problem}; only wheels built by `buildkit build` can be verified"
        )
    checked: dict[str, Any] = data
    return checked


def prepare_keep(keep: Path) -> None:
    """Create ``keep`` and make sure a file can be written in it: fail now, not after the rebuild."""
    if keep.exists() and not keep.is_dir():
        raise UsageError(f"--keep {keep}: exists and is not a directory")
    try:
        keep.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=keep, prefix=".buildkit-keep-probe-"):
            pass
    except OSError as exc:
        raise UsageError(f"--keep {keep}: cannot write there ({exc.strerror or exc})") from None


def _find_recipe(data: dict[str, Any], recipe: Path | None, cwd: Path) -> Path:
    """The recipe the manifest names, refusing one whose bytes are not the recorded ones."""
    recorded = data.get("recipe", {})
    if recipe is None:
        name = recorded.get("file")
        if not name:
            raise UsageError("the manifest names no recipe file: pass --recipe")
        recipe = cwd / "recipes" / name
        if not recipe.is_file():
            raise UsageError(f"recipe {name} not found as {recipe}: pass --recipe PATH")
    elif not recipe.is_file():
        raise UsageError(f"{recipe}: no such recipe")
    actual = manifests.sha256_file(recipe)
    if actual != recorded.get("sha256"):
        raise UsageError(
            f"{recipe} has sha256 {actual}, the manifest records {recorded.get('file')} with sha256 "
            f"{recorded.get('sha256')}: verify needs the recipe the wheel was built from "
            "(check out that revision, or pass --recipe)"
        )
    return recipe


def _job_differences(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    keys = sorted((set(recorded) | set(current)) - {"archs"})
    return [k for k in keys if recorded.get(k) != current.get(k)]


@contextlib.contextmanager
def _environ(name: str, value: str | None) -> Iterator[None]:
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _image_for(
    client: Any, data: dict[str, Any], recipe: Recipe, job: Job, echo: Echo, notes: list[str]
) -> Any:
    recorded = data.get("image", {})
    profile = job.image_profile
    current = ensure_builder(
        recipe.image,
        job.rocm,
        recipe_dir=recipe.path.parent,
        recipe_name=recipe.name,
        client=client,
        progress=echo,
        # the GPU kernel libraries an image keeps are run-time data: they never change a wheel's bytes
        archs=[str(a) for a in job.archs.kept],
    )
    image: Any = current
    tag = recorded.get("tag")
    if tag and tag != current.tag:
        try:
            found = client.images.get(tag)
        except Exception:
            notes.append(
                f"the recorded builder image {tag} is not on this engine; rebuilt in {current.tag} "
                "(the image's Dockerfile or build args changed)"
            )
        else:
            image = _Image(profile=profile, tag=tag, id=found.id)
    if recorded.get("id") and image.id != recorded["id"]:
        notes.append(
            f"image id differs: recorded {recorded['id']}, now {image.id} for {image.tag} "
            "(the image was rebuilt; that alone can explain a difference)"
        )
    return image


@dataclass(frozen=True)
class _Image:
    profile: str
    tag: str
    id: str


@dataclass
class Recorded:
    """What the manifest beside a wheel records, checked (:func:`read_recorded`)."""

    wheel: Path  # absolute
    data: dict[str, Any]  # the manifest
    recipe_path: Path  # the recipe it names, with the recorded bytes
    job: dict[str, Any]  # the recorded job (``job.id``, ``pytorch_rocm_arch`` ...)
    result: VerifyResult  # the verdict so far: the wheel's sha256, notes

    @property
    def job_id(self) -> str:
        return str(self.job["id"])


def read_recorded(wheel: Path, *, recipe: Path | None, cwd: Path, keep: Path | None) -> Recorded:
    """``--keep`` made, the manifest beside ``wheel`` checked and its recipe found; a wheel whose bytes are
    not the recorded ones is noted."""
    if keep is not None:
        prepare_keep(keep)
    wheel = wheel.absolute()
    data = check_manifest(read_manifest(wheel), manifests.manifest_path(wheel))
    recipe_path = _find_recipe(data, recipe, cwd)
    recorded_job: dict[str, Any] = data["job"]
    result = VerifyResult(wheel, recipe_path, str(recorded_job["id"]), manifests.sha256_file(wheel))
    if data["wheel"]["sha256"] != result.original_sha256:
        result.notes.append(
            f"{wheel.name} has sha256 {result.original_sha256} but its manifest records "
            f"{data['wheel']['sha256']}: the file was changed after the build"
        )
    return Recorded(wheel, data, recipe_path, recorded_job, result)


def rebuild(
    recorded: Recorded,
    the_recipe: Recipe,
    job: Job,
    *,
    use_cache: bool = False,
    keep: Path | None = None,
    wheelhouse: Path | None = None,
    echo: Echo = lambda _line: None,
    client: Any = None,
    verbose: bool = False,
) -> VerifyResult:
    """Rebuild ``job`` in the recorded image and epoch, and compare (module docstring)."""
    data, wheel, result = recorded.data, recorded.wheel, recorded.result
    changed = _job_differences(recorded.job, to_data(job))
    if changed:
        result.notes.append("the job expands differently now: " + ", ".join(changed) + " differ")

    client = client if client is not None else connect()
    image = _image_for(client, data, the_recipe, job, echo, result.notes)
    isolation = bool(data.get("provenance", {}).get("build_isolation", True))
    epoch = data.get("source_date_epoch")
    lock = _recorded_lock(data, the_recipe, recorded.job_id, result.notes)

    with tempfile.TemporaryDirectory(prefix="buildkit-verify-") as tmp:
        work = Path(tmp)
        options = BuildOptions(
            out_dir=work / "out",
            log_dir=work / "logs",
            use_cache=use_cache,
            build_isolation=isolation,
            force=True,
            parallel_jobs=os.cpu_count() or 2,
            quarantine=False,  # the rebuild's folder is temporary: a refused wheel is not kept
            wheelhouse=wheelhouse,
            lock=lock,
        )
        echo(f"[{job.id}] rebuilding in {image.tag} (SOURCE_DATE_EPOCH={epoch})")
        with _environ("SOURCE_DATE_EPOCH", None if epoch is None else str(epoch)):
            source = fetch_source(the_recipe, work / "src")
            run_prebuild_checks(the_recipe, source)
            built = build_one(
                the_recipe,
                job,
                options,
                client=client,
                image=image,
                source=source,
                echo=echo,
                verbose=verbose,
                interrupted=f"interrupted while rebuilding {job.id}",
            )
        rebuilt = _rebuilt(built, job, work, wheel.name)
        _compare(result, data, wheel, rebuilt)
        if keep is not None:
            for path in rebuilt.parent.iterdir():
                shutil.copy2(path, keep / path.name)
            result.rebuilt = keep / rebuilt.name
    return result


def _rebuilt(built: JobResult, job: Job, work: Path, name: str) -> Path:
    """The rebuilt wheel (of a split's outputs, the one named ``name``); GateFailed or BuildFailed,
    with the end of its log, when the rebuild did not pass."""
    if built.status == "gate-failed":
        raise GateFailed(f"the rebuild of {job.id} failed the gate:\n{built.message}")
    if built.status != "passed" or built.wheel is None:
        log = work / "logs" / f"{job.id}.log"
        tail = log.read_text(errors="replace").splitlines()[-20:] if log.is_file() else []
        raise BuildFailed(f"the rebuild of {job.id} failed: {built.message}\n" + "\n".join(tail))
    if (built.wheel.parent / name).is_file():  # one of a split's outputs (wheel.split)
        return built.wheel.parent / name
    return built.wheel


def _compare(result: VerifyResult, data: dict[str, Any], wheel: Path, rebuilt: Path) -> None:
    """The rebuild against the recorded wheel: sha256, recorded inputs, name, and when it differs, members."""
    result.rebuilt_sha256 = manifests.sha256_file(rebuilt)
    _compare_inputs(data, manifests.read(rebuilt), result.notes)
    if rebuilt.name != wheel.name:
        result.notes.append(f"the rebuild is named {rebuilt.name}")
    if not result.identical:
        result.members = diff_members(wheel, rebuilt)
        result.diffoscope = _run_diffoscope(wheel, rebuilt)


def _recorded_lock(data: dict[str, Any], recipe: Recipe, job_id: str, notes: list[str]) -> Lock | None:
    """The build requirements the manifest locks, which the rebuild downloads by hash instead of
    resolving again; None (with a note) when the manifest has none to give."""
    recorded = data.get("build_requirements")
    if recipe.network:
        return None  # a networked build resolves in the container, as the original did
    if not isinstance(recorded, dict):
        notes.append(
            "the manifest locks no build requirements (built before hermetic builds, or with network: "
            "true): the rebuild resolves them again, and a newer release of one can explain a difference"
        )
        return None
    try:
        return Lock.from_json(job_id, recorded)
    except BuildFailed as exc:
        raise UsageError(f"{manifests.manifest_path(Path(data['wheel']['filename'])).name}: {exc}") from None


def _compare_inputs(original: dict[str, Any], rebuilt: dict[str, Any], notes: list[str]) -> None:
    """Name the recorded inputs that are not the same in the rebuild's manifest."""
    checks = [
        ("source commit", ("source", "commit")),
        ("source_date_epoch", ("source_date_epoch",)),
        ("toolchain", ("toolchain",)),
        ("builder python packages", ("provenance", "build_environment", "python_packages")),
        ("builder system packages", ("provenance", "build_environment", "system_packages")),
        ("build backend", ("provenance", "build_backend")),
        ("build requirements (lock sha256)", ("build_requirements", "sha256")),
        ("network", ("network",)),
    ]
    for label, keys in checks:
        a: Any = original
        b: Any = rebuilt
        for key in keys:
            a = a.get(key) if isinstance(a, dict) else None
            b = b.get(key) if isinstance(b, dict) else None
        if a is not None and a != b:
            notes.append(f"{label} differs: recorded {_short(a)}, rebuild {_short(b)}")
    if original.get("inputs_key") and original.get("inputs_key") != rebuilt.get("inputs_key"):
        notes.append(
            "inputs key differs (buildkit version, job, image, source tree, epoch or isolation changed): "
            f"recorded {original.get('inputs_key')}, rebuild {rebuilt.get('inputs_key')}"
        )


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render(result: VerifyResult) -> str:
    lines = [f"{result.wheel.name} ({result.job}, recipe {result.recipe})"]
    lines.append(f"  original sha256 {result.original_sha256}")
    lines.append(f"  rebuilt  sha256 {result.rebuilt_sha256}")
    lines.append("  identical: the rebuild is byte for byte the same" if result.identical else "  DIFFERS")
    for note in result.notes:
        lines.append(f"  note: {note}")
    if result.members:
        lines.append(f"  {len(result.members)} member(s) differ:")
        lines.extend(f"    {m.describe()}" for m in result.members)
    if result.diffoscope:
        lines.append("  diffoscope:")
        lines.extend(f"    {line}" for line in result.diffoscope.splitlines())
    elif not result.identical:
        lines.append("  (install diffoscope for a member-by-member report: apt-get install diffoscope)")
    if result.rebuilt is not None:
        lines.append(f"  rebuild kept as {result.rebuilt}")
    return "\n".join(lines)
