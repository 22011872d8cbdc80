"""``manylinux.ceilings.from_image``: the recipe's ceilings tightened by what runtime images define.

Each image is read by the caller's :data:`CeilingsReader` (the commands pass
:func:`buildkit.image.ceilings.ceilings_from_images`; tests pass recorded readers): the plan layer
never imports the image layer or the Docker SDK. A prefix some image does not define at all (no
libstdc++ there) is not tightened, and the plan carries a note saying so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from buildkit.errors import DockerUnavailable, UsageError
from buildkit.policy import CEILING_PREFIXES, CEILING_PROVIDERS, tighten, version_tuple
from buildkit.recipe import Recipe

_FROM_IMAGE = ("manylinux", "ceilings", "from_image")

#: ``reader(["debian:bookworm-slim"]) -> {"GLIBC": "2.36", ...}`` (a prefix the image lacks left out)
CeilingsReader = Callable[[Sequence[str]], Mapping[str, str]]


def _read_image(recipe: Recipe, index: int, image: str, reader: CeilingsReader) -> dict[str, str]:
    """One image's ceilings via ``reader``; failures name the recipe position of the image."""
    at = (*_FROM_IMAGE, index)
    try:
        got = reader([image])
    except DockerUnavailable as exc:
        pos = recipe.spans.value(at)
        where = f"{recipe.display_path}:{pos[0]}:{pos[1]}: " if pos else f"{recipe.display_path}: "
        raise DockerUnavailable(f"{where}manylinux.ceilings.from_image: {exc}") from None
    except UsageError as exc:
        raise recipe.error(f"manylinux.ceilings.from_image: {exc}", at) from None
    return {p: str(got[p]) for p in CEILING_PREFIXES if got.get(p) is not None}


def image_ceilings(
    recipe: Recipe, reader: CeilingsReader | None = None
) -> tuple[dict[str, str], tuple[str, ...]]:
    """``(ceilings, notes)``: the recipe's ceilings (:func:`buildkit.policy.tighten`) by the minimum across
    the images (:func:`buildkit.image.ceilings.minimum_ceilings`). A recipe with ``from_image`` and no
    ``reader`` is a caller's bug (``ValueError``): the plan layer never reaches the engine on its own."""
    m = recipe.manylinux
    if not m.from_images:
        return dict(m.ceilings), ()
    if reader is None:
        raise ValueError(
            f"{recipe.display_path} names manylinux.ceilings.from_image images: expand() needs a "
            "ceilings_reader (the commands pass buildkit.image.ceilings.ceilings_from_images)"
        )
    readings = [(image, _read_image(recipe, i, image, reader)) for i, image in enumerate(m.from_images)]
    absent = {p for _image, got in readings for p in CEILING_PREFIXES if p not in got}
    minimum: dict[str, str] = {}
    for prefix in CEILING_PREFIXES:
        values = [got[prefix] for _image, got in readings if prefix in got]
        if values and prefix not in absent:
            minimum[prefix] = min(values, key=lambda v: version_tuple(v) or ())
    ceilings = dict(sorted(tighten(m.ceilings, minimum).items()))
    notes = []
    for image, got in readings:
        missing = [p for p in CEILING_PREFIXES if p not in got]
        if not missing:
            continue
        libs = ", ".join(sorted({CEILING_PROVIDERS.get(p, p) for p in missing}))
        kept = ", ".join(f"{p} {ceilings[p]}" for p in missing if p in ceilings) or "none"
        notes.append(
            f"manylinux.ceilings.from_image: {image} defines no {'/'.join(missing)} (no {libs} there): "
            f"a wheel needing {libs} will not load in it unless it bundles it; those ceilings stay "
            f"{m.policy}'s or the recipe's ({kept})"
        )
    return ceilings, tuple(notes)
