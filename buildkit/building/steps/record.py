"""Record: a manifest and provenance beside each wheel, then all of them into ``--out/<job-id>/`` at
once. Each manifest's ``gate`` is the configuration that wheel was gated with, recorded (and signed)
for ``publish`` to run the gate again with."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path
from typing import Any, TextIO

from buildkit import manifest
from buildkit.building import provenance, requirements
from buildkit.building.output import publish_to_out
from buildkit.building.quarantine import release
from buildkit.building.steps.state import Output, Run
from buildkit.building.toolchain import job_interpreter, toolchain_versions
from buildkit.fsutil import atomic_write
from buildkit.gate.config import gate_key
from buildkit.plan.models import Job
from buildkit.pyindex import redact
from buildkit.recipe import Recipe
from buildkit.records import to_data


def applies(run: Run) -> bool:
    return run.refusal is None


def perform(run: Run, log: TextIO) -> None:
    outputs = run.outputs or [Output(*run.built(), gate_key(run.config))]
    interpreter = job_interpreter(run.job)
    run.step = "reading the toolchain versions in the builder image"
    toolchain = toolchain_versions(run.client, run.image.tag, python=interpreter, build_id=run.build_id)
    for out in outputs:
        manifest.write(out.wheel, _manifest(run, out, toolchain))
        run.step = "recording the build environment (provenance)"
        provenance.record(
            out.wheel,
            client=run.client,
            image=run.image,
            source=run.staged,
            isolation=run.options.build_isolation,
            interpreter=interpreter,
            run_id=run.build_id,
        )
    run.step = f"moving the wheel into {run.dest}"
    publish_to_out([out.wheel for out in outputs], run.dest)
    release(run.options.refused_dir / run.job.id, run.job, run.echo)
    host, result = outputs[0], run.result
    result.status = "passed"
    result.wheel = run.dest / host.wheel.name
    result.message = f"{host.wheel.name} ({host.gated.tag})"
    if len(outputs) > 1:
        result.message += " + " + ", ".join(out.wheel.name for out in outputs[1:])


def _manifest(run: Run, out: Output, toolchain: Any) -> dict[str, Any]:
    recipe, job, image = run.recipe, run.job, run.image
    data: dict[str, Any] = {
        "wheel": {"filename": out.wheel.name, "sha256": out.gated.sha256, "size": out.gated.size},
        "recipe": recipe.record(),
        "job": to_data(job),
        "image": {"profile": job.image_profile, "tag": image.tag, "id": image.id},
        "toolchain": toolchain,
        "archs": [str(t) for t in job.archs.kept],
        "source": _source_info(recipe, run.source),
        "source_date_epoch": run.epoch,
        "inputs_key": run.key,
        "network": recipe.network,
        "build_requirements": _lock_record(out.wheel, run.lock),
        "torch": torch_record(job, run.lock),
        "compiler_cache": to_data(run.result.compiler_cache),
        "cmake_not_found": list(run.result.not_found),
        "host_isa": run.result.host_isa,
        "regression": to_data(run.regression),
        "verdict": out.gated.verdict,
        "gate": out.gate,
    }
    if out.split is not None:
        data["split"] = out.split
    return data


def _lock_record(wheel: Path, lock: requirements.Lock | None) -> dict[str, Any] | None:
    """The manifest's ``build_requirements``; the lock file written beside the wheel."""
    if lock is None:
        return None
    path = atomic_write(manifest.lock_path(wheel), lock.render())
    return {**to_data(lock), "lock": path.name}


def torch_record(job: Job, lock: requirements.Lock | None) -> dict[str, Any] | None:
    """The manifest's ``torch``: the job's pin and the torch wheel the extension was built against, by
    file name and sha256, from the hermetic build's lock (``file``/``sha256`` null in a networked build,
    which locks nothing, or when the build did not install torch); None without a torch pin."""
    if job.torch_requirement is None:
        return None
    wheel = next((f for f in (lock.files if lock is not None else ()) if f.name == "torch"), None)
    return {
        "requirement": job.torch_requirement,
        "index_url": job.torch_index_url,
        "version": wheel.version if wheel is not None else None,
        "file": wheel.file if wheel is not None else None,
        "sha256": wheel.sha256 if wheel is not None else None,
    }


def _source_info(recipe: Recipe, source: Path) -> dict[str, str]:
    info = {k: v for k, v in vars(recipe.source).items() if v is not None}
    if recipe.source.downloaded:  # pinned by sha256; an unpacked archive has no commit of its own
        if recipe.source.url is not None:
            info["url"] = redact(recipe.source.url)
        return info
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        commit = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
        if commit:
            info["commit"] = commit
    return info
