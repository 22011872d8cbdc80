"""The recipe's sections, one module each, and :data:`SECTIONS`: the one list that registers them (what
a section module defines: :mod:`buildkit.recipe.section`; a new recipe key: docs/ARCHITECTURE.md,
"Where a new recipe key goes").
"""

from __future__ import annotations

from buildkit.recipe.section import Section
from buildkit.recipe.sections import (
    arch_settings,
    archs,
    checks,
    env,
    gate,
    hooks,
    host_isa,
    image,
    manylinux,
    matrix,
    name,
    publish,
    python,
    repair,
    rocm,
    rocm_pip,
    secrets,
    size_budget,
    smoke,
    source,
    switches,
    torch,
    version,
    wheel,
)

#: Every section, in the order it is parsed: a section comes after those it needs (``needs``), and
#: problems found at one position are reported in this order.
SECTIONS: tuple[Section, ...] = (
    name.SECTION,
    source.SECTION,
    python.SECTION,
    rocm.SECTION,
    rocm_pip.SECTION,
    torch.SECTION,
    matrix.SECTION,
    archs.SECTION,
    image.SECTION,  # before manylinux, whose sysroot must be one of the image profile's
    manylinux.SECTION,
    repair.SECTION,
    env.SECTION,
    publish.SECTION,
    version.SECTION,
    wheel.SECTION,
    smoke.SECTION,
    checks.SECTION,
    size_budget.SECTION,
    gate.SECTION,
    hooks.SECTION,
    switches.NETWORK,
    switches.OFFLOAD_COMPRESS,
    host_isa.SECTION,
    arch_settings.SECTION,
    secrets.SECTION,
)
