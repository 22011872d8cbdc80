"""Requirements: a hermetic build's requirements downloaded into the staged ``.buildkit/wheelhouse``,
resolved, or exactly the files of ``BuildOptions.lock`` (``buildkit verify``)."""

from __future__ import annotations

import time
from typing import TextIO

from buildkit.building import requirements
from buildkit.building.steps.state import Run


def applies(run: Run) -> bool:
    return not run.recipe.network


def perform(run: Run, log: TextIO) -> None:
    run.step = "downloading the build requirements on the host"
    run.tell("requirements")
    t0 = time.monotonic()
    options, dest = run.options, run.wheelhouse
    if options.lock is not None:
        lock = requirements.fetch_locked(options.lock, run.job, dest, log, wheelhouse=options.wheelhouse)
    else:
        isolation = options.build_isolation
        lock = requirements.resolve(
            run.recipe, run.job, run.staged, dest, log, isolation=isolation, wheelhouse=options.wheelhouse
        )
    seconds = run.result.timings["requirements"] = time.monotonic() - t0
    log.write(
        f"build requirements ({len(lock.files)} wheel(s) in {seconds:.1f}s, lock sha256 {lock.sha256}):\n"
        + lock.render()
    )
    run.lock = lock
