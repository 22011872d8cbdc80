"""The recipe's build switches, each a top-level boolean the schema checks (docs/REFERENCE.md, "Key:
network", "Key: offload_compress"; :mod:`buildkit.building.requirements`,
:func:`buildkit.plan.expansion.offload_compress_env`).
"""

from __future__ import annotations

from buildkit.recipe.section import Context, Section


def _parse_network(ctx: Context) -> bool:
    return bool(ctx.data.get("network", False))


def _parse_offload_compress(ctx: Context) -> bool:
    return bool(ctx.data.get("offload_compress", False))


NETWORK = Section("network", ("network",), _parse_network, "network")
OFFLOAD_COMPRESS = Section(
    "offload_compress", ("offload_compress",), _parse_offload_compress, "offload_compress"
)
