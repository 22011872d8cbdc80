"""The build stage: recipe jobs -> gated wheels in ``<out>/<job-id>/``. Its modules, by job:

:mod:`~buildkit.building.run` (``buildkit build``: all jobs of a plan), :mod:`~buildkit.building.job` (one
job), :mod:`~buildkit.building.staging` (source fetch, staging folders, tree digest, debris sweep),
:mod:`~buildkit.building.key` (inputs key, up-to-date check), :mod:`~buildkit.building.gating` (the gate
as ``build`` uses it: :func:`buildkit.judge.judge_wheel`'s verdict), :mod:`~buildkit.building.runner`
(the cibuildwheel subprocess), :mod:`~buildkit.building.cibw` (cibuildwheel's options),
:mod:`~buildkit.building.toolchain` (the builder image's interpreter and toolchain versions),
:mod:`~buildkit.building.output` (``<out>/<job-id>/`` housekeeping), :mod:`~buildkit.building.summary`
(the table printed at the end), :mod:`~buildkit.building.provenance` (build environment, writing the
attestation), :mod:`~buildkit.building.tuned` (pre-build checks of tuned CSVs) and
:mod:`~buildkit.building.verify` (``buildkit verify``).

Only the :data:`Echo` type is defined here: ``buildkit.building.cibw`` or ``.provenance`` alone does
not pull in the gate or the Docker SDK.
"""

from __future__ import annotations

from collections.abc import Callable

#: where a build's progress lines go (click.echo to stderr from the command; a list in tests)
Echo = Callable[[str], None]
