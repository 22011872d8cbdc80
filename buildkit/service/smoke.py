"""``buildkit smoke`` as a library call (:func:`run_smoke_tests`).

Imported only when the command runs: the Docker SDK is its start-up's heaviest part."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from buildkit.docker_engine import connect
from buildkit.errors import UsageError
from buildkit.smoke import DEFAULT_TIMEOUT, SmokeResult, check_wheel, choose_specs, gpu_access, run_smoke


def run_smoke_tests(
    wheel: Path,
    *,
    image: str | None = None,
    imports: Iterable[str] = (),
    commands: Iterable[str] = (),
    recipe: str | None = None,
    labels: Iterable[str] = (),
    wheelhouse: Path | None = None,
    index_url: str | None = None,
    python: str | None = None,
    gpu: bool | None = None,
    timeout: int = DEFAULT_TIMEOUT,
    progress: Callable[[str], None] = lambda _line: None,
) -> list[SmokeResult]:
    """Every smoke test of ``wheel`` run, in order: ``recipe``'s entries (those with one of ``labels``)
    or one test of ``image`` with ``imports`` and ``commands``; dependencies from ``wheelhouse`` or
    ``index_url`` (not both: UsageError). ``gpu``: pass the GPU through (True: UsageError without
    one), never (False), or when this machine has one (None). A recipe without smoke entries gives
    one skipped result, before any engine is asked."""
    if image is not None and not image.strip():
        raise UsageError("--image: empty image name")
    check_wheel(wheel)
    if wheelhouse and index_url:
        raise UsageError("--wheelhouse and --index-url exclude each other")
    specs = choose_specs(
        wheel, recipe=recipe, labels=labels, image=image, imports=imports, commands=commands, python=python
    )
    if recipe is not None and not specs:  # smoke what the recipe has: nothing, said as a skipped test
        reason = f"{recipe} has no smoke: entries (`buildkit schema` shows the smoke keys)"
        return [SmokeResult("recipe smoke tests", "-", "skipped", reason, "no container started")]
    if gpu is False:
        access = None
    else:
        access = gpu_access()
        if gpu and access is None:
            raise UsageError("--gpu: /dev/kfd and /dev/dri are not present on this machine")
    client = connect()
    return [
        run_smoke(
            wheel,
            spec,
            client=client,
            wheelhouse=wheelhouse,
            index_url=index_url,
            gpu=access,
            python=python or "python3",
            timeout=timeout,
            progress=progress,
        )
        for spec in specs
    ]
