"""The recipe's ``image:``: which builder image a build runs in, and how the recipe extends it (the
four forms: docs/REFERENCE.md, "Key: image"; how each is built: :mod:`buildkit.image.builder`).

A build argument the Dockerfile does not declare is refused here, at the argument's
``file:line:column`` (Docker would only warn that it was "not consumed"); so is one that the
``rocm:`` axis decides (the profile's ``rocm_build_arg``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from buildkit import profiles
from buildkit.errors import UsageError
from buildkit.recipe.section import Context, ErrorAt, Section
from buildkit.recipe.yamlspan import Path as JsonPath
from buildkit.records import Key, json_shape

#: a package name as apt or dnf take it, with an optional version pin (``pkg=1.2-3``, ``pkg-1.2``);
#: nothing a shell would read as more than one word (the names are written into a RUN line)
PACKAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+_~:=*-]*$")


@json_shape(
    "kind",
    "label",
    *(Key(name, omit="none") for name in ("profile", "dockerfile", "context", "ref")),
    *("packages", "build_args"),
)
@dataclass(frozen=True)
class ImageSpec:
    """The builder image of a recipe: exactly one of ``profile``, ``dockerfile`` and ``ref``."""

    profile: str | None = None
    dockerfile: str | None = None  # relative to the recipe, as written
    context: str | None = None  # relative to the recipe, as written; None: the Dockerfile's folder
    ref: str | None = None
    packages: tuple[str, ...] = ()
    build_args: Mapping[str, str] = field(default_factory=dict)

    @functools.cached_property
    def profile_data(self) -> profiles.Profile | None:
        """The named profile, looked up once, here: the layers below the recipe take it instead of
        the name (None for a Dockerfile or a ref). Looked up when first read, so that a recipe loads
        where the profiles cannot be read (an unknown profile: the loader's error at its position)."""
        return profiles.get_profile(self.profile) if self.profile else None

    @property
    def kind(self) -> str:
        return "profile" if self.profile else "dockerfile" if self.dockerfile else "ref"

    @property
    def label(self) -> str:
        """What the plan shows and the job records: the profile name, ``dockerfile:<path>`` or
        ``ref:<image>``."""
        if self.profile:
            return self.profile
        return f"dockerfile:{self.dockerfile}" if self.dockerfile else f"ref:{self.ref}"

    def dockerfile_path(self, recipe_dir: Path) -> Path | None:
        return recipe_dir / self.dockerfile if self.dockerfile else None

    def context_path(self, recipe_dir: Path) -> Path | None:
        if not self.dockerfile:
            return None
        return recipe_dir / self.context if self.context else (recipe_dir / self.dockerfile).parent


def _parse_image(raw: Any, recipe_dir: Path, err: ErrorAt) -> ImageSpec:
    """The recipe's ``image`` value (schema-valid) as an :class:`ImageSpec`, with the checks a
    schema cannot make: build arguments the Dockerfile declares, packages a profile can install."""
    if isinstance(raw, str):
        return ImageSpec(profile=raw)
    build_args = {str(k): str(v) for k, v in raw.get("build_args", {}).items()}
    spec = ImageSpec(
        profile=raw.get("profile"),
        dockerfile=raw.get("dockerfile"),
        context=raw.get("context"),
        ref=raw.get("ref"),
        packages=tuple(raw.get("packages", ())),
        build_args=build_args,
    )
    if spec.packages and not spec.profile:
        raise err(
            f"image.packages needs image.profile: a {spec.kind} image is taken as it is",
            ("image", "packages"),
            key=True,
            hint="install the packages in your Dockerfile"
            if spec.dockerfile
            else "build the image with them, or name a profile (image.profile) to extend",
        )
    if spec.build_args and spec.ref:
        raise err(
            "image.build_args needs a Dockerfile to build: image.ref names an image that is already built",
            ("image", "build_args"),
            key=True,
        )
    if spec.context and not spec.dockerfile:
        raise err("image.context applies only with image.dockerfile", ("image", "context"), key=True)
    if spec.profile:
        _check_profile(spec, err)
    elif spec.dockerfile:
        _check_dockerfile(spec, recipe_dir, err)
    return spec


def check_smoke_packages(image: str, at: JsonPath, err: ErrorAt) -> None:
    """A smoke test's ``packages`` extend the runtime image of a profile, named
    ``rocm-buildkit/<profile>``: any other image is taken as it is."""
    name = image.removeprefix(profiles.REPOSITORY_PREFIX)
    if name == image or ":" in name:
        raise err(
            f"{at[0]}[{at[1]}].packages needs a profile's runtime image (rocm-buildkit/<profile>), "
            f"not {image!r}",
            (*at, "packages"),
            key=True,
            hint="name a profile such as rocm-buildkit/debian-runtime, or install the packages in your image",
        )
    try:
        profile = profiles.get_profile(name)
    except UsageError as exc:
        raise err(f"{at[0]}[{at[1]}].image: {exc}", (*at, "image")) from None
    if profile.package_manager is None:
        raise err(
            f"{at[0]}[{at[1]}].packages: profile {name} installs no extra packages (no package_manager)",
            (*at, "packages"),
            key=True,
        )


def _check_profile(spec: ImageSpec, err: ErrorAt) -> None:
    try:
        profile = spec.profile_data
        assert profile is not None
        declared = profiles.profile_build_args(profile) if spec.build_args else ()
    except (UsageError, OSError) as exc:
        raise err(f"image.profile: {exc}", ("image", "profile")) from None
    if spec.packages and profile.package_manager is None:
        raise err(
            f"image.packages: profile {profile.name} installs no extra packages (no package_manager "
            "in profiles.toml)",
            ("image", "packages"),
            key=True,
        )
    for name in spec.build_args:
        at: JsonPath = ("image", "build_args", name)
        if name == profile.rocm_build_arg:
            raise err(
                f"image.build_args.{name}: the recipe's rocm: axis decides it",
                at,
                key=True,
                hint="list the ROCm releases under rocm: (one image is built per release)",
            )
        if name not in declared:
            raise err(
                f"image.build_args.{name}: {profile.dockerfile} declares no ARG {name}",
                at,
                key=True,
                hint=f"the profile's build arguments: {', '.join(declared) or 'none'}",
            )


def _check_dockerfile(spec: ImageSpec, recipe_dir: Path, err: ErrorAt) -> None:
    path = spec.dockerfile_path(recipe_dir)
    assert path is not None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = "it does not exist" if isinstance(exc, FileNotFoundError) else str(exc)
        raise err(
            f"image.dockerfile: cannot read {spec.dockerfile} (relative to the recipe): {reason}",
            ("image", "dockerfile"),
        ) from None
    context = spec.context_path(recipe_dir)
    assert context is not None
    if not context.is_dir():
        at: JsonPath = ("image", "context") if spec.context else ("image", "dockerfile")
        raise err(f"image.context: {spec.context or '.'} (relative to the recipe) is not a directory", at)
    declared = profiles.declared_build_args(text)
    for name in spec.build_args:
        if name not in declared:
            raise err(
                f"image.build_args.{name}: {spec.dockerfile} declares no ARG {name}",
                ("image", "build_args", name),
                key=True,
                hint=f"its build arguments: {', '.join(declared) or 'none'}",
            )


def _parse(ctx: Context) -> ImageSpec:
    return _parse_image(ctx.data["image"], ctx.path.parent, ctx.err)


SECTION = Section("image", ("image",), _parse, "image")
