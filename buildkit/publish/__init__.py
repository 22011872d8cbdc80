"""The publish stage: gated wheels onto an index, only when their manifests prove the gate passed.

Modules: :mod:`buildkit.publish.run` (:func:`~buildkit.publish.run.publish`: the orchestration and
its guarantees), :mod:`buildkit.publish.refusal` (which wheels are refused, and why),
:mod:`buildkit.publish.target` (where wheels go: ``--to`` or a recipe's ``publish`` section),
:mod:`buildkit.publish.remote` (index servers over HTTP, credentials bound to one origin, twine),
:mod:`buildkit.publish.scrub` (secrets never echoed) and :mod:`buildkit.publish.index` (the static
PEP 503 index of a ``directory`` target).
"""
