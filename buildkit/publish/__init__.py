"""The publish stage: gated wheels onto an index, only when their manifests prove the gate passed
(:func:`~buildkit.publish.run.publish`; its modules: docs/ARCHITECTURE.md)."""
