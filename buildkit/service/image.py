"""``buildkit image prepare RECIPE`` as a library call (:func:`prepare_images`): every builder image a
recipe's jobs build in and every runtime image its smoke entries name as a profile, built or reused.

A CI workflow prepares the images once and hands the engine's copies (``docker save`` of the refs
returned) to every build and smoke job, which then reuse them by their content tags
(``.github/workflows/buildkit.yml``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from buildkit import image as images
from buildkit.image.builder import ensure_builder
from buildkit.service.plan import load_plan
from buildkit.smoke import fill_image, resolve_image

Progress = Callable[[str], None]


@dataclass(frozen=True)
class _PreparedImage:
    """One image the recipe's jobs use: its role (builder, runtime, base) and its ref in the engine."""

    role: str
    ref: str
    rocm: str | None = None


def _base(profile: str, args: dict[str, str]) -> str | None:
    """The base image of ``profile``'s Dockerfile with ``args`` (the engine has it once the profile's
    image is made: :func:`buildkit.image.content.resolve_tag` pulls a missing one)."""
    spec = images.PROFILES[profile]
    text = (images.docker_dir() / spec.dockerfile).read_text(encoding="utf-8")
    return images.base_image_ref(text, images.effective_build_args(spec, args))


def _runtime(
    client: Any, image: str, entry: Any, rocm: str, found: dict[str, _PreparedImage], progress: Progress
) -> None:
    """The runtime image of one smoke entry: a profile's (``rocm-buildkit/<profile>``) built or reused
    with the entry's packages; an image of a registry is left to ``docker run``, which pulls it."""
    profile = image.removeprefix(images.REPOSITORY_PREFIX)
    if image == profile or ":" in profile or profile not in images.PROFILES:
        return
    ref = resolve_image(client, image, progress, tuple(entry.packages), rocm=rocm)
    if base := _base(profile, {}):  # a release's build arguments keep the Dockerfile's base
        found.setdefault(base, _PreparedImage("base", base))
    found.setdefault(ref, _PreparedImage("runtime", ref, rocm))


def prepare_images(recipe_path: str | Path, *, client: Any, progress: Progress) -> list[_PreparedImage]:
    """The images of the module docstring, in the engine of ``client`` (ENGINE_ERRORS propagate)."""
    loaded = load_plan(recipe_path)
    recipe, plan = loaded.recipe, loaded.plan
    found: dict[str, _PreparedImage] = {}
    for rocm in sorted({job.rocm for job in plan.jobs}):
        served = [job for job in plan.jobs if job.rocm == rocm]
        builder = ensure_builder(
            recipe.image,
            rocm,
            recipe_dir=recipe.path.parent,
            recipe_name=recipe.name,
            client=client,
            progress=progress,
            archs=[str(a) for job in served for a in job.archs.kept],
        )
        if profile := recipe.image.profile_data:
            args = {**images.rocm_build_args(profile, rocm), **recipe.image.build_args}
            if base := _base(profile.name, args):
                found.setdefault(base, _PreparedImage("base", base))
        found.setdefault(builder.tag, _PreparedImage("builder", builder.tag, rocm))
        for job in served:
            values = {"rocm": rocm, "python": job.python, **({"torch": job.torch} if job.torch else {})}
            for entry in recipe.smoke:
                _runtime(client, fill_image(entry.image, values, entry.name), entry, rocm, found, progress)
    return list(found.values())
