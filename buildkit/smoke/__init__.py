"""Smoke tests: install a wheel in a throwaway container of a runtime image, import it, run commands.

The runtime image must have a ``python3`` (or ``--python``) with ``venv`` or pip. Nothing of the host
is mounted: the payload is copied in (:mod:`buildkit.smoke.payload`). Steps, each with its exit code
and captured output: ``setup`` (a ``--system-site-packages`` venv, so the image's torch stays
visible; without venv, ``pip install --target`` + ``PYTHONPATH``), ``deps`` (:mod:`.dependencies`;
the container still has no network), ``install``, then one ``import`` step per module and one
``command`` step per shell command. The container is removed in every case (failure, exception,
Ctrl-C). GPU passthrough: :mod:`buildkit.smoke.spec`. The modules: docs/ARCHITECTURE.md."""

from buildkit.smoke.container import resolve_image
from buildkit.smoke.dependencies import download_command, locked_versions, missing_requirements
from buildkit.smoke.report import (
    SmokeResult,
    Step,
    raise_on_failure,
    render_human,
    render_json,
    summarize_error,
)
from buildkit.smoke.run import DEFAULT_TIMEOUT, run_smoke
from buildkit.smoke.spec import (
    SmokeSpec,
    check_wheel,
    choose_specs,
    fill_image,
    gpu_access,
    job_values,
    served_pythons,
    specs_from_recipe,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "SmokeResult",
    "SmokeSpec",
    "Step",
    "check_wheel",
    "choose_specs",
    "download_command",
    "fill_image",
    "gpu_access",
    "job_values",
    "locked_versions",
    "missing_requirements",
    "raise_on_failure",
    "render_human",
    "render_json",
    "resolve_image",
    "run_smoke",
    "served_pythons",
    "specs_from_recipe",
    "summarize_error",
]
