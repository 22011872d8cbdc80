"""The gate rule "no regression against the last release" (recipe ``gate.no_regression_against``).

A job whose recipe names a PEP 503 simple index (:attr:`buildkit.plan.models.Job.regression_baseline`)
compares each new wheel with the newest earlier release of the same project and compatible tags
there (:func:`buildkit.compare.diff.diff_against_index`: the ``#sha256=`` fragment is verified, the job's
repair exclude globs apply). Every regression the diff finds becomes a gate
:class:`~buildkit.gate.findings.Finding` with rule ``"regression"`` and severity ``"error"``, naming what
regressed in its fields:

* a symbol version above what the last release needed: ``library`` ``libc.so.6``, ``symbol``
  ``GLIBC_2.34``, ``file`` the member needing it;
* a less compatible manylinux tag: ``symbol`` the new tag;
* a platform tag of the file name no new tag covers: ``symbol`` the lost tag;
* a library newly external (neither whitelisted, grafted nor excluded): ``library``;
* gfx targets removed from an object (``file``) or gone from the wheel: ``symbol`` the target id(s).

The rule runs after the gate, where the index can be read: :mod:`buildkit.compare.baseline` finds
the baseline and turns the diff into findings (:func:`buildkit.compare.baseline.findings_from_diff`).
No earlier compatible release (a first release) is no regression: nothing is reported. An index that
cannot be reached is a :class:`~buildkit.errors.IndexUnavailable` (exit 13, as from every command),
one that is wrong (a missing ``file://`` root, an HTTP 403) a :class:`~buildkit.errors.UsageError`
(exit 2), and a baseline whose bytes do not match the index's hash a
:class:`~buildkit.errors.WheelReadError` (exit 6): the rule could not be evaluated, so the caller must
not treat the wheel as passing it.
"""

from __future__ import annotations

from buildkit.gate.rule import Rule

REGRESSION = Rule(
    "regression",
    ("error",),
    checks=(
        "Only in `build`, when the recipe sets `gate.no_regression_against` (a PEP 503 index): "
        "against the newest earlier compatible release there, no higher symbol version, no less "
        "compatible manylinux tag, no platform tag lost, no newly external library, no gfx target"
        " removed."
    ),
    prevents=(
        "Users who could install the last release losing it: pip falls back to an older release "
        "or the sdist, the new one fails with `GLIBC_x not found` or a missing library, or a GPU "
        "that worked gets `hipErrorNoBinaryForGpu`."
    ),
)
RULES = (REGRESSION,)
