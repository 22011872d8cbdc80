"""The gate: a :class:`~buildkit.inspect.models.WheelReport` and a
:class:`~buildkit.gate.config.GateConfig` in, a :class:`~buildkit.gate.verdict.Verdict` out.

Its modules are mapped in docs/ARCHITECTURE.md.

The gate takes facts and a configuration and returns verdicts: no network, no file written, no
command logic. What needs those lives beside it: :mod:`buildkit.compare` (two wheels compared, the
last release on an index, a torch's exports and their cache) and :mod:`buildkit.service.check`
(``buildkit check``'s options to a configuration).

Nothing is imported here: ``import buildkit.gate.evaluate`` loads what evaluation needs only.
"""
