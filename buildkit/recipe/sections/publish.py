"""The recipe's ``publish:``: where ``buildkit publish`` sends the gated wheels (``pypi``, ``index`` or
``directory``, exactly one) and whether each wheel's attestation must be signed.
"""

from __future__ import annotations

from dataclasses import dataclass

from buildkit.recipe.section import Context, Section

PYPI_UPLOAD = "https://upload.pypi.org/legacy/"
TARGETS = ("pypi", "index", "directory")


@dataclass(frozen=True)
class Publish:
    kind: str  # "pypi" | "index" | "directory"
    target: str  # "https://upload.pypi.org/legacy/", an index URL, or a directory relative to the recipe
    require_signature: bool = False  # publish only wheels whose attestation a given key signs


def _parse_publish(ctx: Context) -> Publish | None:
    p = ctx.data.get("publish")
    if p is None:
        return None
    targets = [key for key in TARGETS if key in p]
    if len(targets) != 1:
        got = f"; got {' and '.join(targets)}" if targets else ""
        raise ctx.err(f"publish: give only one of {', '.join(TARGETS)}{got}", ("publish",))
    signed = bool(p.get("require_signature", False))
    if "pypi" in p:
        return Publish("pypi", PYPI_UPLOAD, signed)
    if "index" in p:
        return Publish("index", p["index"], signed)
    return Publish("directory", p["directory"], signed)


SECTION = Section("publish", ("publish",), _parse_publish, "publish")
