"""The recipe's ``manylinux:`` section: the policy the wheel is repaired to, its symbol-version
ceilings (auditwheel's policy file, tightened by the recipe and by ``from_image`` runtime images
read at plan time), and the image's compatibility ``sysroot`` its host code compiles against."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from buildkit import policy as mlpolicy
from buildkit.errors import UsageError
from buildkit.recipe.schema import did_you_mean
from buildkit.recipe.section import Context, ErrorAt, Section
from buildkit.recipe.sections.image import ImageSpec


@dataclass(frozen=True)
class Manylinux:
    policy: str
    ceilings: Mapping[str, str]  # the policy's ceilings with the recipe's overrides applied
    overrides: Mapping[str, str]  # what the recipe set explicitly
    #: ``ceilings.from_image``: runtime images whose libraries lower the ceilings further (read by
    #: the plan, not here: loading a recipe never contacts Docker)
    from_images: tuple[str, ...] = ()
    #: the image's compatibility sysroot host code compiles against (``manylinux.sysroot``), or None
    sysroot: str | None = None


def _parse_manylinux(d: Mapping[str, Any], image: ImageSpec | None, err: ErrorAt) -> Manylinux:
    """The recipe's ``manylinux:``; the recipe's ceilings may only tighten the policy's."""
    m = d["manylinux"]
    name = m["policy"]
    try:
        pol = mlpolicy.get_policy(name)
    except UsageError:
        known = [p.name for p in mlpolicy.policies() if p.name != "linux"]
        raise err(
            f"manylinux.policy: {name!r} is not a policy the installed auditwheel knows",
            ("manylinux", "policy"),
            hint=did_you_mean(name, known) or f"known: {', '.join(known)}",
        ) from None
    if pol.name == "linux":
        raise err("manylinux.policy: 'linux' is not a manylinux policy", ("manylinux", "policy"))
    base = pol.ceilings()
    overrides = dict(m.get("ceilings", {}))
    # image references, not versions: the "above the policy" rule does not apply to them
    from_image = overrides.pop("from_image", ())
    from_images = (from_image,) if isinstance(from_image, str) else tuple(from_image)
    for lib, value in overrides.items():
        top = base.get(lib)
        mine = mlpolicy.version_tuple(value)
        if top is not None and mine is not None and mine > (mlpolicy.version_tuple(top) or ()):
            raise err(
                f"manylinux.ceilings.{lib} {value} is above what {pol.name} allows ({top})",
                ("manylinux", "ceilings", lib),
                hint=f"a ceiling may only tighten the policy; pick a newer policy to allow {lib} {value}",
            )
    ceilings = {**base, **overrides}
    sysroot = m.get("sysroot")
    if sysroot is not None:
        _check_sysroot(d, image, sysroot, err)
    return Manylinux(
        policy=pol.name,
        ceilings=dict(sorted(ceilings.items())),
        overrides=overrides,
        from_images=from_images,
        sysroot=sysroot,
    )


def _check_sysroot(d: Mapping[str, Any], image: ImageSpec | None, name: str, err: ErrorAt) -> None:
    """``manylinux.sysroot`` must name a sysroot of the image profile (an own Dockerfile or a ref
    names no profile's data, so it is refused); ``image``: the image section's result (None when it
    failed: it reports an unknown profile itself)."""
    raw = d.get("image")
    profile_name = raw if isinstance(raw, str) else raw.get("profile") if isinstance(raw, dict) else None
    if profile_name is None:
        raise err(
            f"manylinux.sysroot: {name!r} needs an image profile of rocm-buildkit (image: <profile>), "
            "whose data says where the sysroot is",
            ("manylinux", "sysroot"),
            hint="image: debian-sid-rocm carries glibc2.31",
        )
    try:
        profile = image.profile_data if image is not None else None
    except UsageError:
        return  # the image section reports an unknown profile, or unreadable profiles, itself
    if profile is None:
        return
    known = profile.sysroots
    if name not in known:
        offered = ", ".join(known) if known else "none"
        raise err(
            f"manylinux.sysroot: image profile {profile_name} has no sysroot {name!r} (it has: {offered})",
            ("manylinux", "sysroot"),
            hint=did_you_mean(name, list(known)) or "use a profile with a sysroot, e.g. debian-sid-rocm",
        )


def _parse(ctx: Context) -> Manylinux:
    return _parse_manylinux(ctx.data, ctx.part("image"), ctx.err)


SECTION = Section("manylinux", ("manylinux",), _parse, "manylinux")
