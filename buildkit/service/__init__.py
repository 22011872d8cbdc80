"""Thin services between the commands (:mod:`buildkit.cli`) and the stages: the sequences of stage
calls a command makes, as library calls (no click, no printing). A command parses its options and
calls one function here (or one function of its stage, when that is all it needs).

* :mod:`~buildkit.service.plan`: a recipe's plan, loaded and expanded with the runtime images'
  ceilings reader injected (``load_plan``, ``plan_of``): the one place that sequence is written;
  ``buildkit plan``'s plan (``command_plan``);
* :mod:`~buildkit.service.build`: ``buildkit build`` (``run_build``) and its verdict;
* :mod:`~buildkit.service.verify`: ``buildkit verify``'s rebuild (``verify_rebuild``);
* :mod:`~buildkit.service.archs`: ``buildkit archs``' options and recipe to a resolution
  (``resolve_archs``);
* :mod:`~buildkit.service.check`: ``buildkit check``'s options and ``--recipe``/``--job`` to a gate
  configuration.

Nothing is imported here.
"""
