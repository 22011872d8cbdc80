"""ROCm from pip, the facts side: the SDK wheels of the pinned release (from the build's lock or a
folder of wheels, such as an index's project folders) read into :class:`~buildkit.gate.sdk.SdkRelease`,
and the other releases a requirement could admit (:class:`~buildkit.gate.sdk.OtherRelease`: the
other versions of those wheels at hand, and AMD's releases of buildkit's ROCm data). The gate judges
them (``rocm-pip-*`` rules) without reading a file itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from email.parser import BytesParser
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from buildkit import rocm as rocmdata
from buildkit.errors import UsageError
from buildkit.gate.loading import install_path
from buildkit.gate.sdk import DEVICE_PREFIX, SELECTOR, OtherRelease, RocmFromPip, SdkRelease, SdkWheel
from buildkit.inspect.wheel import inspect_wheel

#: the distributions of an SDK release: the selector and its ``rocm-sdk-*`` wheels
SDK_PREFIX = "rocm-sdk-"


def is_sdk_dist(name: str) -> bool:
    name = canonicalize_name(name)
    return name == SELECTOR or name.startswith(SDK_PREFIX)


def read_sdk_wheel(path: Path) -> SdkWheel:
    """One SDK wheel: its shared libraries (install path -> SONAME, read as the gate reads any ELF),
    its ``Requires-Dist`` and ``Provides-Extra``."""
    report = inspect_wheel(path)
    libraries = {}
    for elf in report.elves:
        where = install_path(elf.member)
        if elf.soname and where is not None:
            libraries[where] = elf.soname
    meta = report.core_metadata  # its header section, read by the inspection: no second open
    extras = (
        tuple(BytesParser().parsebytes(meta.data, headersonly=True).get_all("Provides-Extra") or ())
        if meta
        else ()
    )
    return SdkWheel(
        dist=canonicalize_name(report.name),
        version=report.version,
        libraries=libraries,
        requires=report.metadata_requires,
        extras=extras,
    )


def _sdk_wheels(paths: Iterable[Path]) -> dict[str, dict[str, Path]]:
    """version -> canonical distribution -> wheel file, for the SDK wheels among ``paths``."""
    out: dict[str, dict[str, Path]] = {}
    for path in paths:
        try:
            name, version, _, _ = parse_wheel_filename(path.name)
        except InvalidWheelFilename:
            continue
        if is_sdk_dist(name):
            out.setdefault(str(version), {})[canonicalize_name(name)] = path
    return out


def find_wheels(folder: Path) -> list[Path]:
    """Every wheel under ``folder`` (a folder of wheels, or a static PEP 503 index's tree)."""
    return sorted(folder.rglob("*.whl"))


def gather(requirement: str, wheels: Sequence[Path], *, source: str) -> RocmFromPip:
    """The gate's ROCm-from-pip facts: the newest release among ``wheels`` that ``requirement``
    (``rocm[libraries]==7.2.*``) admits and that has its selector (:class:`SdkRelease`), and every
    other release known: the other versions among ``wheels`` and AMD's of buildkit's ROCm data.
    A UsageError when no release fits."""
    from packaging.requirements import InvalidRequirement, Requirement  # start-up time of check

    try:
        req = Requirement(requirement)
    except InvalidRequirement as exc:
        raise UsageError(f"ROCm from pip: {requirement!r} is not a requirement: {exc}") from None
    if canonicalize_name(req.name) != SELECTOR:
        raise UsageError(
            f"ROCm from pip: the requirement names {req.name}, not {SELECTOR} (e.g. rocm[libraries]==7.2.*)"
        )
    by_version = _sdk_wheels(wheels)
    fitting = sorted(
        (v for v in by_version if SELECTOR in by_version[v] and req.specifier.contains(v, prereleases=True)),
        key=Version,
    )
    if not fitting:
        have = ", ".join(sorted(by_version, key=Version)) or "none"
        raise UsageError(
            f"ROCm from pip: no release of {SELECTOR} in {source} fits {requirement} (have: {have})"
        )
    pinned = fitting[-1]
    release = SdkRelease(
        pinned, {dist: read_sdk_wheel(path) for dist, path in sorted(by_version[pinned].items())}, source
    )
    others = []
    for version, dists in sorted(by_version.items()):
        if version == pinned:
            continue
        sonames: dict[str, str] = {}
        for dist, path in dists.items():
            if dist == SELECTOR or dist.startswith(DEVICE_PREFIX):
                continue
            for soname in read_sdk_wheel(path).libraries.values():
                sonames.setdefault(soname.partition(".so")[0], soname)
        others.append(OtherRelease(version, sonames, source))
    for amd in rocmdata.releases():
        try:
            Version(amd.version)
        except InvalidVersion:
            continue
        sonames = dict(rocmdata.expected_sonames(amd.version))
        if sonames:
            others.append(OtherRelease(amd.version, sonames, "buildkit's ROCm data (AMD's release)"))
    return RocmFromPip(release, requirement, tuple(others))
