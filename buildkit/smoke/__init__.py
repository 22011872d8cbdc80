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

The package: what to run (:mod:`.spec`), what the container gets (:mod:`.payload`), the wheel's
dependencies the image lacks (:mod:`.dependencies`), the container and its Python (:mod:`.container`),
the results (:mod:`.report`) and one smoke test from start to end (:mod:`.run`: :func:`run_smoke`).
"""

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
