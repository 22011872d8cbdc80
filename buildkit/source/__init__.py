"""The source stage: a recipe's ``sdist`` or ``url`` source fetched, verified and unpacked, and how a
source tree decides its version.

Between the plan and the recipe: the plan reads a source's version before any job is built, and the
build unpacks the same archive to stage it. Modules: :mod:`buildkit.source.fetch` (an sdist from the
index pip is configured with, an archive URL; sha256-verified, cached in
``$XDG_CACHE_HOME/rocm-buildkit/sources``), :mod:`buildkit.source.unpack` (a tar or zip unpacked
without trusting it), :mod:`buildkit.source.tree` (the recipe's archive as a local folder, errors at
the recipe's positions) and :mod:`buildkit.source.version` (whether a source tree takes its version
from the build or fixes one, and where).
"""
