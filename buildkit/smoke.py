"""Smoke tests: install a wheel in a throwaway container of a runtime image, import it, run commands.

The runtime image is the one the wheel is meant for (a downstream vLLM ROCm image in production, a
Debian runtime image in the tests); it must have a ``python3`` (or ``--python``) with ``venv`` or pip.
Nothing of the host is mounted: the wheel, the wheelhouse and (with an index) the host's CA bundle are
copied in with ``put_archive`` as the folder ``/bk-smoke`` (put at ``/``, which every image has: an
image without ``/tmp`` works too, ``TMPDIR`` then points at ``/bk-smoke/tmp``). A file that is not a
readable wheel is refused (:class:`~buildkit.errors.WheelReadError`, exit 6) before any container
is created. Steps, each with its exit code and captured output:

1. ``setup``: ``python3 -m venv --system-site-packages /bk-smoke/venv`` (the image's own packages,
   e.g. its torch, stay visible); without venv, ``pip install --target`` + ``PYTHONPATH``.
2. ``deps`` (neither ``--wheelhouse`` nor ``--index-url``): the wheel's ``Requires-Dist`` that the
   image does not already satisfy (``pip list`` in the container) are resolved and downloaded on the
   host, as a hermetic build does its build requirements (:mod:`buildkit.building.requirements`): with
   the user's pip configuration, wheels only, for the container's CPython and the wheel's platform,
   at the versions the build's lock pins where it names them (the manifest's ``build_requirements``:
   what the build's test step installed), then copied in. The container still has no network.
3. ``install``: ``pip install`` of the wheel; dependencies from the wheelhouse (``--no-index
   --find-links``: ``--wheelhouse`` or the one step 2 filled) or an index (``--index-url``,
   ``PIP_CERT`` = the copied CA bundle).
4. one ``import`` step per module (``python -c "import MOD"``) and one ``command`` step per shell
   command (``sh -c``, the venv first on ``PATH``).

A wheel serving several CPythons (a recipe's ``wheel: py3-none|abi3``: the manifest's ``job.serves``)
is smoke-tested under each: every selected test runs once per CPython, with its interpreter
(``python3.13``) and ``{python}`` in the image filled with that version.

The container is removed in every case (failure, exception, Ctrl-C). GPU: when ``/dev/kfd`` and
``/dev/dri`` exist on the machine running buildkit, they are passed through with the groups owning
them; otherwise tests labelled ``gpu`` are skipped and the reason is reported (never silently). The
device check runs on the machine running buildkit: with a remote engine (``DOCKER_HOST``) on a GPU host,
run buildkit on that host.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from packaging.utils import parse_wheel_filename

from buildkit import image as images
from buildkit import manifest
from buildkit.docker_engine import Throwaway, throwaway
from buildkit.errors import DockerUnavailable, SmokeFailed, UsageError, WheelReadError
from buildkit.image.builder import with_packages
from buildkit.recipe import load_recipe
from buildkit.records import json_shape, to_data

WORKDIR = "/bk-smoke"  # put_archive at "/": the one folder every image has
VENV = f"{WORKDIR}/venv"
GPU_LABEL = "gpu"
OUTPUT_LIMIT = 64 * 1024
DEFAULT_TIMEOUT = 900
CA_CANDIDATES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")

_NOT_FOUND = re.compile(r"version [`'](?P<version>[A-Z_]+_[0-9.]+)' not found")
_EXCEPTION = re.compile(r"^(?P<line>(?:[A-Za-z_.]+)?(?:Error|Exception|Exit)\b.*)$", re.MULTILINE)


@dataclass(frozen=True)
class SmokeSpec:
    name: str
    image: str
    imports: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    gpu: bool = False  # the recipe's `gpu: true`; the label `gpu` means the same
    #: extra system packages over the runtime image of a profile (``rocm-buildkit/<profile>``)
    packages: tuple[str, ...] = ()
    #: the interpreter this test runs under (``python3.13``: one of the CPythons a Python-independent
    #: wheel serves); None: ``run_smoke``'s ``python``
    python: str | None = None

    @property
    def needs_gpu(self) -> bool:
        return self.gpu or GPU_LABEL in self.labels


@dataclass(frozen=True)
class GpuAccess:
    devices: tuple[str, ...]  # "/dev/kfd:/dev/kfd:rwm", ...
    groups: tuple[str, ...]  # numeric gids owning the device nodes

    def describe(self) -> str:
        paths = ", ".join(d.split(":")[0] for d in self.devices)
        return f"GPU passthrough: {paths} (groups {', '.join(self.groups) or 'none'})"


@dataclass(frozen=True)
class Step:
    kind: str  # "setup" | "install" | "import" | "command"
    what: str
    exit_code: int
    output: str

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def error(self) -> str:
        return summarize_error(self.output) or f"exit code {self.exit_code}"

    def to_json(self) -> dict[str, Any]:
        # hand-written, no JsonShape (buildkit/records.py): error() is computed
        return {
            "kind": self.kind,
            "what": self.what,
            "exit_code": self.exit_code,
            "passed": self.passed,
            "error": None if self.passed else self.error(),
            "output": self.output,
        }


@json_shape()
@dataclass(frozen=True)
class SmokeResult:
    name: str
    image: str
    status: str  # "passed" | "failed" | "skipped"
    reason: str = ""  # why skipped / what failed
    gpu: str = ""  # what was said about GPU access
    steps: tuple[Step, ...] = field(default=())


def summarize_error(output: str) -> str:
    """The line that says what went wrong: a missing symbol version first, else the last exception."""
    found = _NOT_FOUND.search(output)
    if found:
        line = next(x for x in output.splitlines() if found.group(0) in x).strip()
        return f"{found.group('version')} not found: {line}"
    exceptions = _EXCEPTION.findall(output)
    if exceptions:
        return str(exceptions[-1]).strip()
    lines = [x.strip() for x in output.splitlines() if x.strip()]
    return lines[-1] if lines else ""


def gpu_access(dev: Path = Path("/dev")) -> GpuAccess | None:
    """The AMD GPU device nodes of this machine (``/dev/kfd`` + ``/dev/dri``), None when absent."""
    kfd, dri = dev / "kfd", dev / "dri"
    if not kfd.exists() or not dri.is_dir():
        return None
    nodes = [kfd, *sorted(dri.iterdir())]
    groups = sorted({os.stat(n).st_gid for n in nodes} - {0})
    return GpuAccess(
        devices=(f"{kfd}:/dev/kfd:rwm", f"{dri}:/dev/dri:rwm"),
        groups=tuple(str(g) for g in groups),
    )


def default_imports(wheel: Path) -> tuple[str, ...]:
    """Top-level importable names of a wheel: packages, modules and extension modules at the root."""
    names: set[str] = set()
    for member in _members(wheel):
        head, _, rest = member.partition("/")
        if head.endswith((".dist-info", ".data")):
            continue
        if rest == "__init__.py":
            names.add(head)
        elif not rest and (head.endswith(".py") or ".so" in head):
            names.add(head.split(".")[0])
    return tuple(sorted(n for n in names if n.isidentifier()))


def _members(wheel: Path) -> list[str]:
    """The member names of ``wheel``; :class:`WheelReadError` when it is not a readable zip."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            return zf.namelist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        raise WheelReadError(f"{wheel}: not a readable wheel (zip): {exc}") from None


def specs_from_recipe(
    recipe_smoke: Iterable[Any],
    labels: Iterable[str],
    *,
    image_override: str | None = None,
    values: Mapping[str, str] | None = None,
) -> list[SmokeSpec]:
    """Recipe ``smoke:`` entries selected by label (any of them; all entries without labels given:
    none for a recipe without ``smoke:``)."""
    wanted = set(labels)
    specs = []
    for entry in recipe_smoke:
        if wanted and not wanted & set(entry.labels):
            continue
        image = image_override or fill_image(entry.image, values or {}, entry.name)
        specs.append(
            SmokeSpec(
                entry.name,
                image,
                tuple(entry.imports),
                tuple(entry.commands),
                tuple(entry.labels),
                gpu=bool(getattr(entry, "gpu", False)),
                packages=() if image_override else tuple(getattr(entry, "packages", ())),
            )
        )
    if not specs and wanted:  # a recipe without smoke entries has none to select: the caller says so
        raise UsageError(f"no smoke test of the recipe has label(s) {', '.join(sorted(wanted))}")
    return specs


def choose_specs(
    wheel: Path,
    *,
    recipe: str | None,
    labels: Iterable[str] = (),
    image: str | None = None,
    imports: Iterable[str] = (),
    commands: Iterable[str] = (),
    python: str | None = None,
) -> list[SmokeSpec]:
    """The smoke tests to run: the recipe's entries (selected by label; their image placeholders
    filled from the wheel's manifest), or one ad-hoc test of ``image`` with the given imports and
    commands (default: import the wheel's top-level packages). A Python-independent wheel
    (:func:`served_pythons`) gets each recipe entry once per CPython it serves, with that CPython's
    interpreter, unless ``python`` names the interpreter."""
    labels, imports, commands = tuple(labels), tuple(imports), tuple(commands)
    if labels and recipe is None:
        raise UsageError("--label selects recipe entries: give --recipe")
    if recipe is not None:
        if imports or commands:
            raise UsageError("--import/--command and --recipe exclude each other")
        data = manifest.read(wheel) if manifest.manifest_path(wheel).is_file() else None
        smoke = load_recipe(recipe).smoke
        pythons = served_pythons(data) if python is None else ()
        if not pythons:
            return specs_from_recipe(smoke, labels, image_override=image, values=job_values(data))
        out = []
        for version in pythons:
            values = {**job_values(data), "python": version}
            for spec in specs_from_recipe(smoke, labels, image_override=image, values=values):
                out.append(replace(spec, name=f"{spec.name} (CPython {version})", python=f"python{version}"))
        return out
    if image is None:
        raise UsageError("give --image IMAGE (or --recipe R)")
    chosen = imports if imports or commands else default_imports(wheel)
    return [SmokeSpec("cli", image, tuple(chosen), commands)]


def served_pythons(manifest_data: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The CPythons a Python-independent wheel serves (its manifest's ``job.serves``, when the job has
    a ``wheel_tag``); () for a wheel of one Python or without a manifest."""
    job = (manifest_data or {}).get("job") or {}
    if not job.get("wheel_tag"):
        return ()
    return tuple(str(v) for v in job.get("serves") or ())


def fill_image(template: str, values: Mapping[str, str], name: str) -> str:
    """``rocm/vllm:rocm{rocm}`` with the wheel's job values; an unknown placeholder is a usage error."""
    try:
        return template.format_map(dict(values))
    except (KeyError, IndexError, ValueError) as exc:
        known = ", ".join(f"{k}={v}" for k, v in sorted(values.items())) or "none (no manifest job)"
        raise UsageError(
            f"smoke test {name!r}: cannot fill the image {template!r} ({exc}); known values: {known}; "
            "pass --image"
        ) from None


def job_values(manifest_data: Mapping[str, Any] | None) -> dict[str, str]:
    job = (manifest_data or {}).get("job") or {}
    return {k: str(job[k]) for k in ("rocm", "torch", "python") if job.get(k) is not None}


def host_ca_bundle() -> Path:
    for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(name)
        if value and Path(value).is_file():
            return Path(value)
    for candidate in CA_CANDIDATES:
        if Path(candidate).is_file():
            return Path(candidate)
    raise UsageError("--index-url needs the host's CA bundle: set PIP_CERT or SSL_CERT_FILE")


def _add_file(tar: tarfile.TarFile, source: Path, arcname: str) -> None:
    info = tar.gettarinfo(str(source), arcname)
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mode = 0o644
    with source.open("rb") as fh:
        tar.addfile(info, fh)


def _add_dir(tar: tarfile.TarFile, arcname: str, mode: int = 0o777) -> None:
    info = tarfile.TarInfo(arcname)
    info.type = tarfile.DIRTYPE
    info.mode = mode
    tar.addfile(info)


def write_payload(stream: IO[bytes], wheel: Path, wheelhouse: Path | None, ca_bundle: Path | None) -> None:
    """Write to ``stream`` (a temporary file: wheels can be large) the tar of what the container gets.

    One top-level folder, ``bk-smoke`` (:data:`WORKDIR` once extracted at ``/``).
    """
    top = WORKDIR.lstrip("/")
    with tarfile.open(fileobj=stream, mode="w") as tar:
        _add_dir(tar, top)
        _add_dir(tar, f"{top}/tmp", 0o1777)
        _add_dir(tar, f"{top}/wheel")
        _add_file(tar, wheel, f"{top}/wheel/{wheel.name}")
        _add_dir(tar, f"{top}/wheelhouse")
        if wheelhouse is not None:
            for dep in sorted(wheelhouse.glob("*.whl")):
                if dep.name != wheel.name:
                    _add_file(tar, dep, f"{top}/wheelhouse/{dep.name}")
        if ca_bundle is not None:
            _add_file(tar, ca_bundle, f"{top}/ca-bundle.crt")
    stream.seek(0)


class _Container:
    """A running throwaway container and the environment its steps run with."""

    def __init__(self, container: Throwaway, env: dict[str, str], timeout_prefix: list[str]) -> None:
        self.container = container
        self.env = env
        self.timeout_prefix = timeout_prefix

    def run(self, kind: str, what: str, argv: list[str], *, timeout: bool = True) -> Step:
        command = [*self.timeout_prefix, *argv] if timeout else argv
        result = self.container.exec_run(command, environment=self.env, workdir="/", demux=False)
        raw: bytes = result.output or b""
        output = raw[-OUTPUT_LIMIT:].decode("utf-8", errors="replace")
        code = int(result.exit_code if result.exit_code is not None else 1)
        if code == 124 and self.timeout_prefix:
            output += f"\n(timed out after {self.timeout_prefix[-1]} s)"
        return Step(kind, what, code, output)


def _image_env(client: Any, image: str) -> dict[str, str]:
    try:
        attrs = client.images.get(image).attrs
    except Exception:
        try:
            attrs = client.images.pull(image).attrs
        except Exception as exc:
            raise DockerUnavailable(
                f"runtime image {image!r} is neither present nor pullable: {exc}"
            ) from None
    env: dict[str, str] = {}
    for item in (attrs.get("Config") or {}).get("Env") or []:
        key, _, value = str(item).partition("=")
        env[key] = value
    return env


def resolve_image(
    client: Any,
    ref: str,
    progress: Callable[[str], None],
    packages: tuple[str, ...] = (),
    rocm: str | None = None,
) -> str:
    """``rocm-buildkit/<profile>`` (no tag) names one of our image profiles: build or reuse it, with
    ``packages`` in a generated layer over it (:func:`buildkit.image.builder.with_packages`). A
    profile with one image per ROCm release gives the image of ``rocm`` (the wheel's, from its
    manifest) when it has one."""
    if ref.startswith(images.REPOSITORY_PREFIX) and ":" not in ref:
        profile = ref[len(images.REPOSITORY_PREFIX) :]
        if profile in images.PROFILES:
            # a profile that installs AMD's packages gets its newest release, as `buildkit image build` does
            releases = images.PROFILES[profile].releases
            args = images.profile_rocm_args(profile, rocm if rocm in releases else None, {})
            base = images.ensure_image(profile, build_args=args, client=client, progress=progress)
            if packages:
                return with_packages(client, base, profile, packages, progress).tag
            return base.tag
    if packages:
        raise UsageError(f"smoke packages need a profile's image (rocm-buildkit/<profile>), not {ref!r}")
    return ref


def run_smoke(
    wheel: Path,
    spec: SmokeSpec,
    *,
    client: Any,
    wheelhouse: Path | None = None,
    index_url: str | None = None,
    gpu: GpuAccess | None = None,
    python: str = "python3",
    timeout: int = DEFAULT_TIMEOUT,
    progress: Callable[[str], None] = lambda line: None,
) -> SmokeResult:
    """Run one smoke test of ``wheel`` in a throwaway container of ``spec.image``."""
    if timeout < 1:
        raise UsageError(f"timeout {timeout}: a step needs at least 1 second")
    gpu_note = gpu.describe() if gpu else "no GPU passthrough (/dev/kfd or /dev/dri absent)"
    if spec.needs_gpu and gpu is None:
        return SmokeResult(
            spec.name,
            spec.image,
            "skipped",
            "needs a GPU (gpu: true or the label gpu) but /dev/kfd and /dev/dri are not available here",
            gpu_note,
        )
    python = spec.python or python
    job = (manifest.read(wheel) if manifest.manifest_path(wheel).is_file() else {}).get("job") or {}
    rocm = str(job["rocm"]) if job.get("rocm") else None
    spec = replace(spec, image=resolve_image(client, spec.image, progress, spec.packages, rocm=rocm))
    image_env = _image_env(client, spec.image)
    ca_bundle = host_ca_bundle() if index_url else None
    steps: list[Step] = []
    with throwaway(
        client,
        spec.image,
        ["infinity"],
        purpose="smoke",
        entrypoint=["sleep"],
        network=bool(index_url),
        devices=gpu.devices if gpu is not None else (),
        group_add=gpu.groups if gpu is not None else (),
        warn=lambda line: progress(f"[{spec.name}] {line}"),
    ) as container:
        with tempfile.TemporaryFile() as payload:
            write_payload(payload, wheel, wheelhouse, ca_bundle)
            try:
                copied = container.put_archive("/", payload)
            except Exception as exc:  # docker.errors.APIError/NotFound: the image's filesystem refused it
                raise SmokeFailed(
                    f"smoke {spec.name}: could not copy {wheel.name} into {WORKDIR} of a {spec.image} "
                    f"container: {exc}"
                ) from None
            if not copied:
                raise SmokeFailed(
                    f"smoke {spec.name}: could not copy {wheel.name} into the {spec.image} container"
                )
        container.start()
        progress(f"[{spec.name}] container {container.short_id} of {spec.image}; {gpu_note}")
        has_timeout = container.exec_run(["sh", "-c", "command -v timeout"]).exit_code == 0
        base_env = {**image_env}
        if "TMPDIR" not in base_env and container.exec_run(["sh", "-c", "test -d /tmp -a -w /tmp"]).exit_code:
            base_env["TMPDIR"] = f"{WORKDIR}/tmp"  # an image without a usable /tmp (pip needs a temp dir)
        if ca_bundle is not None:
            base_env["PIP_CERT"] = f"{WORKDIR}/ca-bundle.crt"
        base_env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        base_env["PIP_NO_INPUT"] = "1"
        box = _Container(container, base_env, ["timeout", "-k", "10", str(timeout)] if has_timeout else [])

        if python == "python3":  # the wheel's own CPython when the image has several (python3.14)
            own = wheel_python(wheel)
            if own and container.exec_run(["sh", "-c", f"command -v {own}"]).exit_code == 0:
                python = own
        setup = box.run("setup", f"{python} -m venv", [python, "-m", "venv", "--system-site-packages", VENV])
        steps.append(setup)
        if not setup.passed:
            # a Python without ensurepip (Debian's, without its -venv package) still makes a venv without
            # pip, whose interpreter runs the image's own pip from the system site into the venv
            bare = box.run(
                "setup",
                f"{python} -m venv --without-pip",
                [python, "-m", "venv", "--system-site-packages", "--without-pip", "--clear", VENV],
            )
            if (
                bare.passed
                and box.run("setup", "venv pip", [f"{VENV}/bin/python", "-m", "pip", "--version"]).passed
            ):
                steps[-1] = setup = bare
        if setup.passed:
            py = f"{VENV}/bin/python"
            box.env = {
                **base_env,
                "VIRTUAL_ENV": VENV,
                "PATH": f"{VENV}/bin:" + base_env.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            }
            target: list[str] = []
        else:
            pip_check = box.run("setup", f"{python} -m pip", [python, "-m", "pip", "--version"])
            steps.append(pip_check)
            if not pip_check.passed:
                return _failed(
                    spec, gpu_note, steps, f"the runtime image has no usable {python} with venv or pip"
                )
            py = python
            box.env = {**base_env, "PYTHONPATH": f"{WORKDIR}/site"}
            target = ["--target", f"{WORKDIR}/site"]

        deps: Step | None = None
        if wheelhouse is None and not index_url:
            with tempfile.TemporaryDirectory(prefix="buildkit-smoke-deps-") as tmp:
                deps, files = _dependencies(box, py, wheel, Path(tmp), timeout)
                if deps is not None:
                    steps.append(deps)
                    progress(f"[{spec.name}] deps: {'ok' if deps.passed else 'FAILED: ' + deps.error()}")
                if files:
                    _copy_wheels(container, files)
        sources = ["--find-links", f"{WORKDIR}/wheel", "--find-links", f"{WORKDIR}/wheelhouse"]
        sources += ["--index-url", index_url] if index_url else ["--no-index"]
        install = box.run(
            "install",
            f"pip install {wheel.name}",
            [py, "-m", "pip", "install", *target, *sources, f"{WORKDIR}/wheel/{wheel.name}"],
        )
        steps.append(install)
        progress(f"[{spec.name}] install: {'ok' if install.passed else 'FAILED: ' + install.error()}")
        if not install.passed:
            why = ""
            if deps is not None and not deps.passed:  # pip in the container says what is missing first
                why = (
                    f" ({deps.what} failed: {deps.error()}; give --wheelhouse DIR with their wheels, "
                    "or --index-url URL)"
                )
            return _failed(spec, gpu_note, steps, f"install failed: {install.error()}{why}")
        for module in spec.imports:
            step = box.run("import", module, [py, "-c", f"import {module}"])
            steps.append(step)
            progress(f"[{spec.name}] import {module}: {'ok' if step.passed else 'FAILED: ' + step.error()}")
        for command in spec.commands:
            step = box.run("command", command, ["sh", "-c", command])
            steps.append(step)
            progress(f"[{spec.name}] $ {command}: {'ok' if step.passed else 'FAILED: ' + step.error()}")
    failures = [s for s in steps if s.kind in ("import", "command") and not s.passed]
    if failures:
        reason = "; ".join(f"{s.kind} {s.what}: {s.error()}" for s in failures)
        return _failed(spec, gpu_note, steps, reason)
    return SmokeResult(spec.name, spec.image, "passed", "", gpu_note, tuple(steps))


def wheel_requirements(wheel: Path) -> tuple[str, ...]:
    """The ``Requires-Dist`` lines of the wheel's ``.dist-info/METADATA`` (none without one)."""
    from email.parser import HeaderParser

    try:
        with zipfile.ZipFile(wheel) as zf:
            meta = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            text = zf.read(meta[0]).decode("utf-8", errors="replace") if len(meta) == 1 else ""
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        raise WheelReadError(f"{wheel}: not a readable wheel (zip): {exc}") from None
    return tuple(HeaderParser().parsestr(text).get_all("Requires-Dist") or ())


def missing_requirements(
    requires: Iterable[str], python_version: str, installed: Mapping[str, str]
) -> tuple[str, ...]:
    """The requirements (markers evaluated for CPython ``python_version`` on this platform, no extra)
    that no installed distribution (canonical name -> version) satisfies, without their markers."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    env = {"python_version": python_version, "python_full_version": f"{python_version}.0", "extra": ""}
    out = []
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue  # pip refuses the wheel at install and says why
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        have = installed.get(canonicalize_name(req.name))
        if have is not None and req.specifier.contains(have, prereleases=True):
            continue
        req.marker = None
        out.append(str(req))
    return tuple(out)


def locked_versions(manifest_data: Mapping[str, Any] | None) -> dict[str, str]:
    """name -> version of every file the build's lock names (the manifest's ``build_requirements``)."""
    lock = (manifest_data or {}).get("build_requirements") or {}
    return {
        str(f["name"]): str(f["version"]) for f in lock.get("files") or () if "name" in f and "version" in f
    }


def download_command(
    requirements: Iterable[str], python_version: str, wheel: Path, dest: Path, constraints: Path | None
) -> list[str]:
    """``pip download`` of ``requirements`` with their dependencies, wheels only, for CPython
    ``python_version`` and the wheel's manylinux platform down to manylinux2014 (the host's platform
    for a wheel without one), with the user's pip configuration."""
    from buildkit.building.requirements import target_platforms

    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--progress-bar", "off"]
    cmd += ["--only-binary=:all:", "--python-version", python_version, "--implementation", "cp"]
    cmd += ["--abi", f"cp{python_version.replace('.', '')}"]
    platforms = sorted(
        {t.platform for t in parse_wheel_filename(wheel.name)[3] if t.platform.startswith("manylinux")}
    )
    if platforms:
        for tag in target_platforms(platforms[-1]):
            cmd += ["--platform", tag]
    if constraints is not None:
        cmd += ["--constraint", str(constraints)]
    return [*cmd, "--dest", str(dest), *requirements]


def _dependencies(
    box: _Container, py: str, wheel: Path, work: Path, timeout: int
) -> tuple[Step | None, list[Path]]:
    """Step 2 of the module docstring: the wheel's dependencies the image lacks, downloaded on the
    host into ``work`` (None and no file when there is nothing to download)."""
    requires = wheel_requirements(wheel)
    if not requires:
        return None, []
    version = box.run(
        "deps", "the runtime Python", [py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]
    )
    listing = box.run("deps", "pip list", [py, "-m", "pip", "list", "--format=json"])
    if not version.passed or not listing.passed:
        failed = version if not version.passed else listing
        return Step(
            "deps", f"reading the runtime's Python: {failed.what}", failed.exit_code, failed.output
        ), []
    try:
        from packaging.utils import canonicalize_name

        rows = json.loads(listing.output.strip().splitlines()[-1])
        installed: dict[str, str] = {canonicalize_name(str(r["name"])): str(r["version"]) for r in rows}
    except (ValueError, KeyError, IndexError, TypeError):
        installed = {}
    python_version = version.output.strip().splitlines()[-1]
    missing = missing_requirements(requires, python_version, installed)
    if not missing:
        return None, []
    data = manifest.read(wheel) if manifest.manifest_path(wheel).is_file() else None
    pins = locked_versions(data)
    constraints = None
    if pins:
        constraints = work / "build-lock-constraints.txt"
        constraints.write_text("".join(f"{n}=={v}\n" for n, v in sorted(pins.items())), encoding="utf-8")
    dest = work / "wheelhouse"
    dest.mkdir()
    cmd = download_command(missing, python_version, wheel, dest, constraints)
    what = f"pip download on the host (CPython {python_version}): {' '.join(missing)}"
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, errors="replace", timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Step("deps", what, 1, str(exc)), []
    output = (proc.stdout + proc.stderr)[-OUTPUT_LIMIT:]
    return Step("deps", what, proc.returncode, output), sorted(dest.glob("*.whl"))


def _copy_wheels(container: Throwaway, files: list[Path]) -> None:
    """Copy ``files`` into the container's ``/bk-smoke/wheelhouse``."""
    with tempfile.TemporaryFile() as payload:
        with tarfile.open(fileobj=payload, mode="w") as tar:
            for f in files:
                _add_file(tar, f, f"{WORKDIR.lstrip('/')}/wheelhouse/{f.name}")
        payload.seek(0)
        if not container.put_archive("/", payload):
            raise SmokeFailed(f"could not copy the dependencies into {WORKDIR}/wheelhouse")


def _failed(spec: SmokeSpec, gpu_note: str, steps: list[Step], reason: str) -> SmokeResult:
    return SmokeResult(spec.name, spec.image, "failed", reason, gpu_note, tuple(steps))


def wheel_python(wheel: Path) -> str | None:
    """``python3.14`` for a ``cp314-cp314`` wheel (the interpreter that must import it); None for a
    wheel that is not for one CPython (py3-none, abi3 serve several)."""
    parts = wheel.name.removesuffix(".whl").split("-")
    if len(parts) < 5:
        return None
    match = re.fullmatch(r"cp3(\d+)", parts[-3])
    if match is None or parts[-2] in ("none", "abi3"):
        return None
    return f"python3.{match.group(1)}"


def check_wheel(wheel: Path) -> None:
    """A wheel file name and a readable zip (WheelReadError, exit 6): checked before any container."""
    if not wheel.is_file():
        raise UsageError(f"{wheel}: no such wheel")
    try:
        parse_wheel_filename(wheel.name)
    except ValueError as exc:
        raise UsageError(f"{wheel.name}: not a wheel file name ({exc})") from None
    _members(wheel)


def render_human(results: list[SmokeResult], *, verbose: bool = False) -> str:
    """The results, each step with its outcome; a failed step with the last lines of its output, every step
    with all of it when ``verbose``."""
    lines = []
    for r in results:
        lines.append(f"{r.status.upper():<7} {r.name} in {r.image}")
        lines.append(f"        {r.gpu}")
        if r.status == "skipped":
            lines.append(f"        skipped: {r.reason}")
        for s in r.steps:
            mark = "ok" if s.passed else f"FAILED (exit {s.exit_code}): {s.error()}"
            lines.append(f"        {s.kind:<8} {s.what}: {mark}")
            if verbose or not s.passed:
                said = [x for x in s.output.splitlines() if x.strip()]
                lines += [f"          | {x}" for x in (said if verbose else said[-6:])]
    passed = sum(r.status == "passed" for r in results)
    failed = sum(r.status == "failed" for r in results)
    skipped = sum(r.status == "skipped" for r in results)
    lines.append(f"smoke: {passed} passed, {failed} failed, {skipped} skipped")
    return "\n".join(lines)


def render_json(results: list[SmokeResult]) -> str:
    return json.dumps({"results": to_data(results)}, indent=2, sort_keys=True)


def raise_on_failure(results: list[SmokeResult]) -> None:
    failed = [r for r in results if r.status == "failed"]
    if failed:
        raise SmokeFailed("smoke failed: " + "; ".join(f"{r.name} in {r.image}: {r.reason}" for r in failed))
