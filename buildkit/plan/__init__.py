"""The plan stage: a recipe expanded into jobs, each with its archs, version, ceilings and image (the
modules: docs/ARCHITECTURE.md).
"""
