"""What a profile's builder image must hold, from the ROCm data: the HIP compiler at its path and the
ROCm libraries by SONAME, each with the package that provides it.

The SONAMEs are the gate's (:func:`buildkit.rocm.data.expected_sonames`): one table, never a copy.
Debian names a shared-library package after its SONAME (policy 8.1: ``librocblas.so.5`` ->
``librocblas5``), AMD's RPMs follow AMD's package table
(:func:`buildkit.rocm.install.runtime_package`: ``libamdhip64`` -> ``hip-runtime-amd``). Every image
must have ``libamdhip64``; an image of AMD's packages also the libraries of each ``-devel`` package
it installs. :mod:`buildkit.image.probe` checks the pieces inside the image.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from buildkit.profiles import Profile
from buildkit.recipe.sections.image import ImageSpec
from buildkit.rocm import data as rocmdata
from buildkit.rocm import install

#: the library every HIP build links, whatever else the image has
HIP_RUNTIME = "libamdhip64"
#: where the loader finds libraries besides the ROCm prefix (Debian's multiarch folder, EL's lib64)
SYSTEM_LIBDIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib")
_SONAME = re.compile(r"^(?P<name>.+)\.so\.(?P<major>[0-9][0-9.]*)$")


@dataclass(frozen=True)
class Piece:
    """One thing the image must hold: a ``compiler`` at ``name`` (an absolute path) or a ``library``
    named ``name`` (a SONAME) in one of the contract's library folders; ``package`` provides it."""

    kind: Literal["compiler", "library"]
    name: str
    package: str
    what: str  # what it is, for a person: "the HIP compiler", "rocBLAS (librocblas)"

    @property
    def check(self) -> str:
        """The probe's check name: ``path:/opt/rocm/bin/hipcc``, ``lib:libamdhip64.so.7``."""
        return f"{'path' if self.kind == 'compiler' else 'lib'}:{self.name}"


@dataclass(frozen=True)
class ImageContract:
    """The pieces and the folders the probe looks for libraries in."""

    pieces: tuple[Piece, ...]
    libdirs: tuple[str, ...]


def debian_package(soname: str) -> str:
    """Debian's package for a shared library of ``soname`` (policy 8.1): the name without ``.so``, the
    major appended (after a ``-`` when the name ends in a digit), lower case, ``_`` as ``-``."""
    match = _SONAME.match(soname)
    if match is None:
        raise ValueError(f"not a versioned SONAME: {soname!r}")
    name, major = match["name"].lower().replace("_", "-"), match["major"]
    return f"{name}-{major}" if name[-1].isdigit() else f"{name}{major}"


def _installed_libraries(packages: Iterable[str]) -> list[str]:
    """The libraries AMD's ``-devel`` packages among ``packages`` bring (their runtime package's)."""
    wanted = {p.removesuffix("-devel") for p in packages if p.endswith("-devel")}
    runtime = install.published_runtime()
    return [library for library, package in runtime.items() if package in wanted]


def image_contract(profile: Profile, rocm: str, packages: Iterable[str] | None = None) -> ImageContract:
    """What an image of ``profile`` for ROCm ``rocm`` must hold. ``packages``: the AMD packages the
    image installs (default: the release's install.yaml package sets); ignored for Debian profiles."""
    toolchain = profile.toolchain_of(rocm)
    sonames = rocmdata.expected_sonames(rocm, toolchain=toolchain)
    prefix = profile.rocm_prefix or "/opt/rocm"
    amd = profile.package_manager == "dnf"
    libraries = [HIP_RUNTIME]
    if amd:
        chosen = install.el8_install(rocm).packages() if packages is None else tuple(packages)
        libraries += [lib for lib in _installed_libraries(chosen) if lib not in libraries]
    pieces = [Piece("compiler", f"{prefix}/bin/hipcc", "hipcc", "the HIP compiler")]
    for library in libraries:
        soname = sonames.get(library)
        if soname is None:
            continue  # the data does not confirm its SONAME for this release: nothing to hold it to
        package = install.runtime_package(library) if amd else debian_package(soname)
        if package is None:
            continue
        pieces.append(Piece("library", soname, package, f"{library} of ROCm {rocm}"))
    libdirs = (f"{prefix}/lib", f"{prefix}/lib64") if prefix != "/usr" else ()
    return ImageContract(tuple(pieces), (*libdirs, *SYSTEM_LIBDIRS))


def spec_contract(spec: ImageSpec, rocm: str) -> ImageContract | None:
    """The contract of the image a recipe's ``image:`` makes for ROCm ``rocm``: a profile's (with
    the packages its ``ROCM_PACKAGES`` build argument names, when the recipe sets one); None for an
    image ``ref`` or the project's own Dockerfile, whose layout the data does not describe."""
    if spec.profile_data is None:
        return None
    override = spec.build_args.get("ROCM_PACKAGES")
    return image_contract(spec.profile_data, rocm, None if override is None else override.split())
