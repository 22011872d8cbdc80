"""The phases of one job, one module each, run in the order :data:`buildkit.building.job.STEPS` gives:
``stage`` (the source staged, the inputs key), ``reuse`` (an up-to-date output kept), ``requirements``
(a hermetic build's requirements downloaded on the host), ``compile`` (cibuildwheel), ``repair`` (the
wheel's version, tags and SBOM), ``gate``, ``regression`` (against the last release), ``split`` (the
recipe's ``wheel.split: per-target``), ``quarantine`` (a refused wheel kept apart) and ``record``
(manifest, provenance, the move into ``--out``). What they share is :mod:`.state`: the job being
built (:class:`~.state.Run`), what it was given and what it gives back.

A phase is a module with ``applies(run) -> bool`` and ``perform(run, log) -> None``; a new phase is a
module here and a line in ``STEPS``.
"""
