"""ROCm from pip: what the wheels of a ROCm SDK release provide, and how a wheel reaches them.

A wheel built in the recipe's ``rocm: {from: pip}`` mode does not carry ROCm and does not expect it
on the system: it declares ``Requires-Dist: rocm[libraries]==X.Y.*`` and its ELFs reach the SDK's
folders through ``$ORIGIN``-relative RPATHs (``$ORIGIN/../_rocm_sdk_core/lib``). The gate judges that
with facts gathered elsewhere (the SDK wheels of the build's lock or of the index, read by
:mod:`buildkit.judge.rocm_pip`): :class:`SdkRelease` (each wheel's library files, requirements and
extras) for the pinned release, and :class:`OtherRelease` (the SONAMEs of releases the requirement
might also admit). This module holds those models and the pure judgement (:func:`provider`,
:func:`installed_closure`); it reads no file and no network.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from packaging.utils import canonicalize_name

from buildkit.gate.loading import resolve_origin
from buildkit.inspect.models import ElfInfo
from buildkit.records import Key, json_shape

if TYPE_CHECKING:
    # packaging.requirements loads dataclasses: imported where a requirement is parsed, so that a
    # plain ``check`` (no ROCm from pip) starts without it (tests/unit/test_check_startup.py)
    from packaging.requirements import Requirement

#: the dependency that selects the SDK (TheRock's selector package; ``import rocm_sdk``)
SELECTOR = "rocm"
DEVICE_PREFIX = "rocm-sdk-device-"


@json_shape(
    "dist", "version", Key("libraries", convert=lambda libs: dict(sorted(libs.items()))), "requires", "extras"
)
class SdkWheel(NamedTuple):
    """One wheel of an SDK release: its distribution, version, the shared libraries it installs
    (install-root-relative path -> SONAME), its ``Requires-Dist`` and ``Provides-Extra``."""

    dist: str  # canonical name, "rocm-sdk-core"
    version: str
    libraries: Mapping[str, str]  # "_rocm_sdk_core/lib/libamdhip64.so.7" -> "libamdhip64.so.7"
    requires: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()


@json_shape("version", "source", Key("wheels", convert=lambda wheels: [w for _, w in sorted(wheels.items())]))
class SdkRelease(NamedTuple):
    """The wheels of one SDK release (``version`` "7.2.4"), by canonical distribution name, and
    where they were read (``source``: "the build's lock", "index https://...")."""

    version: str
    wheels: Mapping[str, SdkWheel]
    source: str = ""

    def devices(self) -> tuple[str, ...]:
        """The gfx targets the release has a device package for."""
        return tuple(
            sorted(d.removeprefix(DEVICE_PREFIX) for d in self.wheels if d.startswith(DEVICE_PREFIX))
        )

    def holders(self, filename: str) -> list[tuple[str, str]]:
        """(distribution, install path) of every library file named ``filename`` in the release."""
        return sorted(
            (w.dist, path)
            for w in self.wheels.values()
            for path in w.libraries
            if posixpath.basename(path) == filename
        )

    def sonames(self) -> dict[str, str]:
        """Library base name -> SONAME over the release's wheels ("libamdhip64" -> "libamdhip64.so.7")."""
        out: dict[str, str] = {}
        for wheel in self.wheels.values():
            for soname in wheel.libraries.values():
                base, sep, _ = soname.partition(".so")
                if sep:
                    out.setdefault(base, soname)
        return out


@json_shape()
class OtherRelease(NamedTuple):
    """A release the declared requirement could also install: its version, its SONAMEs by base name,
    and where that came from ("index", "buildkit/rocm/releases.yaml")."""

    version: str
    sonames: Mapping[str, str]
    source: str


@json_shape()
class RocmFromPip(NamedTuple):
    """The gate's configuration for a wheel whose ROCm comes from pip: the pinned release's wheels,
    the other releases known, and the requirement the recipe pins (``rocm[libraries]==7.2.*``)."""

    release: SdkRelease
    requirement: str
    others: tuple[OtherRelease, ...] = ()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RocmFromPip:
        rel = data["release"]
        wheels = {
            str(w["dist"]): SdkWheel(
                dist=str(w["dist"]),
                version=str(w["version"]),
                libraries={str(k): str(v) for k, v in w["libraries"].items()},
                requires=tuple(str(r) for r in w.get("requires", ())),
                extras=tuple(str(e) for e in w.get("extras", ())),
            )
            for w in rel["wheels"]
        }
        others = tuple(
            OtherRelease(
                str(o["version"]), {str(k): str(v) for k, v in o["sonames"].items()}, str(o["source"])
            )
            for o in data.get("others", ())
        )
        return cls(
            SdkRelease(str(rel["version"]), wheels, str(rel.get("source", ""))),
            str(data["requirement"]),
            others,
        )


def sdk_requirements(requires: Iterable[str], release: SdkRelease) -> list[Requirement]:
    """The wheel's ``Requires-Dist`` lines that name the selector or one of the release's wheels and
    apply to a plain install (no ``extra ==`` marker of the wheel's own)."""
    from packaging.requirements import InvalidRequirement, Requirement  # start-up: see the top

    names = {SELECTOR, *release.wheels}
    found = []
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) not in names:
            continue
        if req.marker is not None and "extra" in str(req.marker):
            continue
        found.append(req)
    return found


def installed_closure(requirements: Iterable[Requirement], release: SdkRelease) -> dict[str, str]:
    """The release's distributions that installing ``requirements`` brings in (pip's view of the
    extras), each with the requirement that brought it ("rocm-sdk-core" -> "rocm[libraries]==7.2.*")."""
    from packaging.requirements import InvalidRequirement, Requirement  # start-up: see the top

    out: dict[str, str] = {}
    todo = [(canonicalize_name(r.name), frozenset(r.extras), str(r)) for r in requirements]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras, why = todo.pop(0)
        wheel = release.wheels.get(name)
        if wheel is None or (name, extras) in seen:
            continue
        seen.add((name, extras))
        out.setdefault(name, why)
        for line in wheel.requires:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in extras or {""}):
                continue
            todo.append((canonicalize_name(req.name), frozenset(req.extras), why))
    return out


class Provided(NamedTuple):
    """Where ld.so finds a needed library in the SDK's installed wheels: the distribution, the
    file (install-root relative), the search entry that reaches it."""

    dist: str
    path: str
    entry: str


def search_entries(elf: ElfInfo) -> tuple[tuple[str, str], ...]:
    """(entry, install-root-relative folder) of each ``$ORIGIN`` entry of the ELF's RUNPATH (alone,
    when it has one) else RPATH, as ld.so searches them; other entries are left out (an absolute
    path is the build machine's)."""
    out = []
    for entry in elf.runpath or elf.rpath:
        folder = resolve_origin(elf.member, entry)
        if folder is not None:
            out.append((entry, folder))
    return tuple(out)


def provider(elf: ElfInfo, name: str, release: SdkRelease, installed: Iterable[str]) -> Provided | None:
    """The first installed SDK file ld.so would load for ``name`` through the ELF's search path."""
    wanted = set(installed)
    for entry, folder in search_entries(elf):
        path = posixpath.join(folder, name) if folder != "." else name
        for dist, held in release.holders(name):
            if held == path and dist in wanted:
                return Provided(dist, held, entry)
    return None


def admitted(requirement: Requirement, version: str) -> bool:
    from packaging.version import InvalidVersion, Version  # start-up: see the top

    try:
        return requirement.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False
