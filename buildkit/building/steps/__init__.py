"""The phases of one job, one module each, run in the order :data:`buildkit.building.job.STEPS` gives
(each phase: docs/ARCHITECTURE.md). What they share is :mod:`.state`: the job being built
(:class:`~.state.Run`), what it was given and what it gives back.

A phase is a module with ``applies(run) -> bool`` and ``perform(run, log) -> None``; a new phase is a
module here and a line in ``STEPS``."""
