"""The source stage: a recipe's ``sdist`` or ``url`` source fetched, verified and unpacked, and how a
source tree decides its version (the modules: docs/ARCHITECTURE.md).

Between the plan and the recipe: the plan reads a source's version before any job is built, and the
build unpacks the same archive to stage it.
"""
