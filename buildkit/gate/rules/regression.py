"""The gate rule "no regression against the last release" (recipe ``gate.no_regression_against``).

The rule runs in ``build`` after the gate, where the index can be read: :mod:`buildkit.compare.baseline`
diffs the wheel against the newest earlier compatible release
(:func:`buildkit.compare.diff.diff_against_index`) and makes each regression an error
(:func:`buildkit.compare.baseline.findings_from_diff`). A first release is no regression. An index that
cannot be read, or a baseline whose bytes do not match its hash, raises (exit codes in
docs/GATE-RULES.md): the rule could not be evaluated, so the caller must not treat the wheel as passing.
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
