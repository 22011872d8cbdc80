"""Thin services between the commands (:mod:`buildkit.cli`) and the stages: the sequences of stage
calls a command makes, as library calls (no click, no printing).

* :mod:`~buildkit.service.check` ``buildkit check``'s options and ``--recipe``/``--job`` to a gate
  configuration.

Nothing is imported here.
"""
