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
* :mod:`~buildkit.service.check`: ``buildkit check`` (``run_check``): its options, ``--recipe``/``--job``
  and ROCm from pip to a gate configuration, every wheel gated, and its verdict;
* :mod:`~buildkit.service.publish`: ``buildkit publish`` (``run_publish``): the target, the publish
  log, the wheels published or refused, the install check, and its verdict.
* :mod:`~buildkit.service.diff`: ``buildkit diff`` (``run_diff``): the run-time libraries as
  ``check`` takes them, then two wheels compared, or one against an index's last release.
* :mod:`~buildkit.service.smoke`: ``buildkit smoke`` (``run_smoke_tests``): the wheel checked, the
  smoke tests chosen, the GPU passthrough decided, each test run in its runtime image.

Nothing is imported here.
"""
