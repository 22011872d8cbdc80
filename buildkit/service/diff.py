"""``buildkit diff`` as a library call (:func:`run_diff`): the run-time libraries as ``check`` takes
them (:func:`buildkit.service.check.run_time_globs`), then :mod:`buildkit.compare.diff`."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from buildkit.compare.diff import Baseline, WheelDiff, diff_against_index, diff_wheels
from buildkit.errors import UsageError
from buildkit.gate.options import GateFlags
from buildkit.service.check import run_time_globs


class _DiffRun(NamedTuple):
    """What ``diff`` found: the diff (None: the index has no earlier release to compare with), and
    with an index the release chosen from it."""

    result: WheelDiff | None
    baseline: Baseline | None = None

    def nothing_to_compare(self, new: Path) -> str:
        """The message for an index without an earlier compatible release of ``new``."""
        assert self.baseline is not None
        return f"no earlier compatible release of {new.name} at {self.baseline.page}"


def run_diff(
    wheels: Sequence[Path],
    flags: GateFlags,
    *,
    index_url: str | None = None,
    recipe: Path | None = None,
    job: str | None = None,
    require_baseline: bool = False,
    note: Callable[[str], None] = lambda _line: None,
) -> _DiffRun:
    """OLD and NEW of ``wheels`` compared, or with ``index_url`` NEW alone against the index's newest
    earlier compatible release (none: ``result`` None, or with ``require_baseline`` a UsageError).
    ``flags``: the gate options ``exclude``, ``exclude_sets`` and ``rocm``, with ``recipe`` and ``job``
    the libraries provided at run time; ``note`` gets the warning about a ``--rocm`` that excludes
    nothing."""
    if index_url is None and len(wheels) != 2:
        raise UsageError("buildkit diff takes OLD.whl NEW.whl (or --against-index URL NEW.whl)")
    if index_url is not None and len(wheels) != 1:
        raise UsageError("with --against-index give only NEW.whl")
    exclude, exclude_sets, rocm = flags.get("exclude", ()), flags.get("exclude_sets", ()), flags.get("rocm")
    globs = run_time_globs(exclude=exclude, exclude_sets=exclude_sets, rocm=rocm, recipe=recipe, job=job)
    if rocm is not None and not exclude_sets:
        note(
            f"warning: --rocm {rocm} only chooses what --exclude-set rocm expands to; without "
            "--exclude-set it excludes nothing (add --exclude-set rocm)"
        )
    if index_url is None:
        return _DiffRun(diff_wheels(wheels[0], wheels[1], exclude_globs=globs))
    with tempfile.TemporaryDirectory(prefix="buildkit-diff-") as tmp:
        baseline, result = diff_against_index(index_url, wheels[0], exclude_globs=globs, workdir=Path(tmp))
    run = _DiffRun(result, baseline)
    if result is None and require_baseline:
        raise UsageError(run.nothing_to_compare(wheels[0]))
    return run
