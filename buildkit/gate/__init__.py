"""The gate: a :class:`~buildkit.inspect.models.WheelReport` and a
:class:`~buildkit.gate.config.GateConfig` in, a :class:`~buildkit.gate.verdict.Verdict` out.

* :mod:`~buildkit.gate.config` what the gate enforces (from flags, a plan job, a recipe job);
* :mod:`~buildkit.gate.facts` what the wheel's host code is (architecture, libc, policies, libraries);
* :mod:`~buildkit.gate.rules` the rules, one module per family, and the registry that orders them
  (:mod:`~buildkit.gate.rule`: the shape of a rule; :mod:`~buildkit.gate.loading`: where ld.so
  finds each library inside the wheel);
* :mod:`~buildkit.gate.evaluate` facts and rules folded into a :mod:`~buildkit.gate.verdict`;
* :mod:`~buildkit.gate.report` the human and JSON reports.

The gate takes facts and a configuration and returns verdicts: no network, no file written, no
command logic. What needs those lives beside it: :mod:`buildkit.compare` (two wheels compared, the
last release on an index, a torch's exports and their cache) and :mod:`buildkit.service.check`
(``buildkit check``'s options to a configuration).

Nothing is imported here: ``import buildkit.gate.evaluate`` loads what evaluation needs only.
"""
