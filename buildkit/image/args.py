"""The build arguments of a profile's image: the ``--build-arg`` pairs of ``buildkit image build``,
the profile's defaults, and the arguments that make an image carry one ROCm release (a profile's
``releases`` table of ``docker/profiles.toml``, or AMD's packages of ``buildkit/rocm/install.yaml``
for a profile that installs them by ``rocm_build_arg``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from buildkit import rocm as rocm_data
from buildkit.errors import UsageError
from buildkit.profiles import Profile
from buildkit.rocm.install import el8_install, el8_installs


def parse_build_args(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``["K=V", ...]`` -> ``{"K": "V"}``; a pair without ``=`` is a usage error."""
    args: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--build-arg expects KEY=VALUE, got {pair!r}")
        args[key] = value
    return args


#: the build argument naming the processors whose GPU kernel libraries stay in the image
KEEP_ARCHS_ARG = "KEEP_GFX_ARCHS"


def rocm_build_args(profile: Profile, rocm: str, archs: Iterable[str] | None = None) -> dict[str, str]:
    """The build arguments that make ``profile``'s image carry ROCm ``rocm`` (a release such as
    "7.2"): the patch, AMD's repositories and the packages of ``buildkit/rocm/install.yaml``. With
    ``archs`` (target ids), the image keeps the GPU kernel libraries of those processors only. A
    profile fixed to other releases refuses; a release without install data is a usage error."""
    if profile.rocm_releases is not None:
        if rocm not in profile.rocm_releases:
            raise UsageError(
                f"image profile {profile.name} provides ROCm {', '.join(profile.rocm_releases)} only, "
                f"not {rocm}; use the manylinux_2_28-rocm profile for other releases"
            )
        return profile.release_build_args(rocm)
    if profile.rocm_build_arg is None:
        return {}
    install = el8_install(rocm)
    args = {
        profile.rocm_build_arg: install.version,
        "ROCM_REPO": install.rocm_repo,
        "GRAPHICS_REPO": install.graphics_repo,
        "ROCM_GPG_KEY": install.gpg_key,
        "ROCM_PACKAGES": " ".join(install.packages()),
    }
    if archs is not None:
        kept = sorted({rocm_data.processor_of(a) for a in archs}, key=rocm_data.processor_sort_key)
        if kept:
            args[KEEP_ARCHS_ARG] = ";".join(kept)
    return args


def profile_rocm_args(profile: Profile, rocm: str | None, build_args: Mapping[str, str]) -> dict[str, str]:
    """``buildkit image build``'s arguments: a profile that installs AMD's packages gets the
    install.yaml arguments of ``rocm`` (default: the newest release there) under ``build_args``,
    which may override any of them but the release itself (``--rocm`` names it)."""
    if profile.rocm_releases is not None:  # fixed releases: --rocm may only name one of them
        if profile.releases:  # one image per release: --rocm picks it (default: the newest)
            chosen = rocm if rocm is not None else profile.rocm_releases[-1]
            return {**rocm_build_args(profile, chosen), **build_args}
        if rocm is not None:
            rocm_build_args(profile, rocm)
        return dict(build_args)
    if profile.rocm_build_arg is None:
        if rocm is not None:
            raise UsageError(f"image profile {profile.name} installs no ROCm release of its own: drop --rocm")
        return dict(build_args)
    if profile.rocm_build_arg in build_args:
        raise UsageError(
            f"--build-arg {profile.rocm_build_arg}: the ROCm release and its repositories come from "
            f"buildkit/rocm/install.yaml; use --rocm RELEASE (e.g. --rocm "
            f"{build_args[profile.rocm_build_arg].rsplit('.', 1)[0]})"
        )
    chosen = rocm if rocm is not None else el8_installs()[-1].rocm
    return {**rocm_build_args(profile, chosen), **build_args}


def effective_build_args(profile: Profile, build_args: Mapping[str, str] | None) -> dict[str, str]:
    merged = dict(profile.build_args)
    merged.update(build_args or {})
    return dict(sorted(merged.items()))
