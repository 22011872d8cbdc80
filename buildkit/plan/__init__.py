"""The plan stage: a recipe expanded into jobs, each with its archs, version, ceilings and image.

Modules: :mod:`buildkit.plan.models` (:class:`~buildkit.plan.models.Job`,
:class:`~buildkit.plan.models.Plan`, the job selection every command shares),
:mod:`buildkit.plan.expansion` (:func:`~buildkit.plan.expansion.expand`),
:mod:`buildkit.plan.archs` (which GPU archs a build compiles for, and why),
:mod:`buildkit.plan.from_image` (ceilings tightened by runtime images, read by a reader the command
injects), :mod:`buildkit.plan.torch_index` (torch pins against buildkit's ROCm data) and
:mod:`buildkit.plan.render` (table, JSON and GitHub matrix output).
"""
