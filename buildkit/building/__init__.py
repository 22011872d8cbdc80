"""The build stage: recipe jobs -> gated wheels in ``<out>/<job-id>/`` (its modules:
docs/ARCHITECTURE.md).

Only the :data:`Echo` type is defined here: ``buildkit.building.cibw`` or ``.provenance`` alone does
not pull in the gate or the Docker SDK."""

from __future__ import annotations

from collections.abc import Callable

#: where a build's progress lines go (click.echo to stderr from the command; a list in tests)
Echo = Callable[[str], None]
