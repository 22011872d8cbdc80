"""The build stage: recipe jobs -> gated wheels in ``<out>/<job-id>/``. Its modules, by job:

:mod:`~buildkit.build.run` (``buildkit build``: all jobs of a plan), :mod:`~buildkit.build.job` (one
job), :mod:`~buildkit.build.staging` (source fetch, staging folders, tree digest, debris sweep),
:mod:`~buildkit.build.key` (inputs key, up-to-date check), :mod:`~buildkit.build.gating` (the gate
as ``build`` uses it), :mod:`~buildkit.build.wheel_gate` (the gate on wheel files, as ``build``,
``check`` and ``publish`` run it), :mod:`~buildkit.build.runner` (the cibuildwheel subprocess),
:mod:`~buildkit.build.cibw` (cibuildwheel's options), :mod:`~buildkit.build.toolchain` (the builder
image's interpreter and toolchain versions), :mod:`~buildkit.build.output` (``<out>/<job-id>/``
housekeeping), :mod:`~buildkit.build.summary` (the table printed at the end),
:mod:`~buildkit.build.provenance` (build environment, attestation), :mod:`~buildkit.build.tuned`
(pre-build checks of tuned CSVs) and :mod:`~buildkit.build.verify` (``buildkit verify``).

Only the :data:`Echo` type is defined here: ``buildkit.build.cibw`` or ``.provenance`` alone does
not pull in the gate or the Docker SDK.
"""

from __future__ import annotations

from collections.abc import Callable

#: where a build's progress lines go (click.echo to stderr from the command; a list in tests)
Echo = Callable[[str], None]
