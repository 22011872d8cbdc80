"""One smoke test from start to end (:func:`run_smoke`), the steps of the package's docstring."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from buildkit.errors import UsageError
from buildkit.smoke.container import Box, prepare_python, resolve_image, started
from buildkit.smoke.dependencies import fetch_dependencies
from buildkit.smoke.payload import WORKDIR, host_ca_bundle
from buildkit.smoke.report import SmokeResult, Step, failed, verdict
from buildkit.smoke.spec import GpuAccess, SmokeSpec, manifest_of

DEFAULT_TIMEOUT = 900


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
        why = "needs a GPU (gpu: true or the label gpu) but /dev/kfd and /dev/dri are not available here"
        return SmokeResult(spec.name, spec.image, "skipped", why, gpu_note)
    job = (manifest_of(wheel) or {}).get("job") or {}
    rocm = str(job["rocm"]) if job.get("rocm") else None
    spec = replace(spec, image=resolve_image(client, spec.image, progress, spec.packages, rocm=rocm))
    ca_bundle = host_ca_bundle() if index_url else None

    def said(line: str) -> None:
        progress(f"[{spec.name}] {line}")

    steps: list[Step] = []
    with started(
        client, spec, wheel, wheelhouse=wheelhouse, ca_bundle=ca_bundle, index_url=index_url,
        gpu=gpu, gpu_note=gpu_note, timeout=timeout, progress=progress,
    ) as box:  # fmt: skip
        prepared = prepare_python(box, spec.python or python, wheel, steps)
        if isinstance(prepared, str):
            return failed(spec, gpu_note, steps, prepared)
        py, target = prepared
        deps = None
        if wheelhouse is None and not index_url:
            deps = fetch_dependencies(box, py, wheel, timeout, said)
            steps += [deps] if deps is not None else []
        install = _install(box, py, target, wheel, index_url)
        steps.append(install)
        said(f"install: {install.outcome()}")
        if not install.passed:
            return failed(spec, gpu_note, steps, f"install failed: {install.error()}{_why(deps)}")
        steps += _checks(box, spec, py, said)
    return verdict(spec, gpu_note, steps)


def _install(box: Box, py: str, target: list[str], wheel: Path, index_url: str | None) -> Step:
    """Step 3: ``pip install`` of the wheel, its dependencies from the wheelhouse or the index."""
    sources = ["--find-links", f"{WORKDIR}/wheel", "--find-links", f"{WORKDIR}/wheelhouse"]
    sources += ["--index-url", index_url] if index_url else ["--no-index"]
    argv = [py, "-m", "pip", "install", *target, *sources, f"{WORKDIR}/wheel/{wheel.name}"]
    return box.run("install", f"pip install {wheel.name}", argv)


def _why(deps: Step | None) -> str:
    """Why the install may have failed: the dependencies that could not be downloaded."""
    if deps is None or deps.passed:  # pip in the container says what is missing first
        return ""
    return (
        f" ({deps.what} failed: {deps.error()}; give --wheelhouse DIR with their wheels, or --index-url URL)"
    )


def _checks(box: Box, spec: SmokeSpec, py: str, said: Callable[[str], None]) -> list[Step]:
    """Step 4: one ``import`` step per module, one ``command`` step per shell command."""
    steps = []
    for module in spec.imports:
        steps.append(step := box.run("import", module, [py, "-c", f"import {module}"]))
        said(f"import {module}: {step.outcome()}")
    for command in spec.commands:
        steps.append(step := box.run("command", command, ["sh", "-c", command]))
        said(f"$ {command}: {step.outcome()}")
    return steps
