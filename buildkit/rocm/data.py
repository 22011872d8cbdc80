"""The records and loaders of :mod:`buildkit.rocm` (imported from there on first use; what the data
is: that package's docstring).
"""

from __future__ import annotations

import datetime
import fnmatch
import functools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version

from buildkit.errors import UsageError
from buildkit.records import json_shape
from buildkit.rocm import processor_of, processor_sort_key


class UnknownRelease(UsageError):
    """A ROCm release (or library set) rocm-buildkit has no data for."""


class UnknownToolchain(UsageError):
    """A toolchain id that is not in ``toolchains.yaml``."""


@dataclass(frozen=True)
class TorchIndex:
    url: str
    torch: tuple[str, ...]


@dataclass(frozen=True)
class RuntimeLibrary:
    name: str
    component: str
    glob: str
    source: str
    soname_major: Mapping[str, int] = field(default_factory=dict)
    since: str | None = None
    note: str | None = None
    unverified: str | None = None

    def major_for(self, rocm: str) -> int | None:
        """SONAME major for release ``rocm`` ("6.4"), or None when not confirmed."""
        major = rocm.split(".")[0]
        if rocm in self.soname_major:
            return self.soname_major[rocm]
        return self.soname_major.get(major)

    def shipped_in(self, rocm: str) -> bool:
        return self.since is None or version_key(rocm) >= version_key(self.since)


@dataclass(frozen=True)
class LibrarySet:
    name: str
    description: str
    libraries: tuple[RuntimeLibrary, ...]


@dataclass(frozen=True)
class RocmRelease:
    version: str
    patches: tuple[str, ...]
    llvm: str
    official: tuple[str, ...]
    official_source: str
    library_targets: tuple[str, ...]
    library_source: str
    withheld: Mapping[str, str]
    archs: tuple[str, ...]
    torch_indexes: tuple[TorchIndex, ...]
    amd_torch: tuple[str, ...]
    torch_source: str
    notes: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()
    #: the HIP version the release ships (from 10.0 on it differs from the release's: HIP 7.15)
    hip: str | None = None
    #: facts read from AMD's own artifacts (wheels on PyPI), each saying which and how
    verified: tuple[str, ...] = ()
    #: the day AMD published the release (ISO date) and where that is stated; None when not recorded
    released: str | None = None
    released_source: str | None = None
    #: "legacy" (AMD's rocm-X.Y.Z packages under /opt/rocm-X.Y.Z, installed by the production image) or
    #: "therock" (the ROCm Core SDK from 7.14: amdrocm-* packages, /opt/rocm/core-X.Y, Python wheels)
    stream: str = "legacy"

    @property
    def torch_index(self) -> str | None:
        """The newest download.pytorch.org index built against this release, if any."""
        return self.torch_indexes[-1].url if self.torch_indexes else None

    @property
    def torch_versions(self) -> tuple[str, ...]:
        """Torch minor versions published on download.pytorch.org for this release."""
        seen: dict[str, None] = {}
        for index in self.torch_indexes:
            for version in index.torch:
                seen[version] = None
        return tuple(seen)

    @property
    def arch_min_release(self) -> dict[str, str]:
        """For each arch of this release, the first release that supports it."""
        return {arch: min_release_for(arch) or self.version for arch in self.archs}

    def torch_index_for(self, torch: str) -> str | None:
        """The index serving torch ``torch`` ("2.9" or "2.9.1") for this release, if known."""
        minor = ".".join(torch.split(".")[:2])
        for index in reversed(self.torch_indexes):
            if minor in index.torch:
                return index.url
        return None

    @property
    def runtime_libraries(self) -> tuple[str, ...]:
        """Exclude globs of the ``rocm`` set for this release."""
        return tuple(exclude_globs(["rocm"], self.version))

    def to_json(self) -> dict[str, Any]:
        # hand-written, no JsonShape (buildkit/records.py): computed groups (libraries, torch)
        return {
            "version": self.version,
            "patches": list(self.patches),
            "llvm": self.llvm,
            "archs": list(self.archs),
            "arch_min_release": self.arch_min_release,
            "official": list(self.official),
            "official_source": self.official_source,
            "library_targets": list(self.library_targets),
            "library_source": self.library_source,
            "withheld": dict(self.withheld),
            "runtime_libraries": [
                {
                    "name": lib.name,
                    "glob": lib.glob,
                    "soname": _soname(lib, self.version),
                    "source": lib.source,
                }
                for lib in _libraries_for(["rocm"], self.version)
            ],
            "torch": {
                "pytorch_org": [{"index": i.url, "torch": list(i.torch)} for i in self.torch_indexes],
                "amd": list(self.amd_torch),
                "source": self.torch_source,
            },
            "notes": list(self.notes),
            "unverified": list(self.unverified),
            "hip": self.hip,
            "verified": list(self.verified),
            "released": self.released,
            "released_source": self.released_source,
            "stream": self.stream,
        }


@json_shape()
@dataclass(frozen=True)
class Toolchain:
    id: str
    description: str
    rocm: str
    hipcc: str
    llvm: str
    archs: tuple[str, ...]
    source: str
    note: str | None = None
    #: library name -> the SONAME it has in this packaging ("libhipblas" -> "libhipblas.so.0")
    sonames: Mapping[str, str] = field(default_factory=dict)
    sonames_source: str | None = None
    #: processors the compiler accepts but buildkit does not for this packaging, with the reason
    withheld: Mapping[str, str] = field(default_factory=dict)
    #: library name -> the GPU targets its package carries kernels for (Debian's X-Rocm-Gpu-Architecture)
    library_targets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    library_targets_source: str | None = None


@dataclass(frozen=True)
class Observation:
    """One ROCm patch release as AMD's wheels on PyPI show it (``observed.yaml``, written by
    ``buildkit rocm refresh``): which wheel was read, the day it was uploaded, what it holds."""

    rocm: str  # the ROCm patch release, "10.0.0"
    project: str  # the PyPI project read, "rocm-bindings-core"
    version: str  # its version, "10.0.0.0.1.2"
    uploaded: str  # ISO day of the upload
    hip: str | None = None  # HIP_VERSION_NAME, "7.15.26333-0000000"
    llvm: str | None = None  # "23.0.0git"
    llvm_commit: str | None = None
    sysdeps: tuple[str, ...] = ()  # librocm_sysdeps_*.so.1 an ELF of the wheel needs

    @property
    def release(self) -> str:
        """The release this patch belongs to ("10.0")."""
        return ".".join(self.rocm.split(".")[:2])

    def describe(self) -> str:
        facts = [f"HIP {self.hip}" if self.hip else "", f"LLVM {self.llvm}" if self.llvm else ""]
        if self.sysdeps:
            facts.append("needs " + ", ".join(self.sysdeps))
        told = "; ".join(f for f in facts if f) or "no facts read"
        return f"ROCm {self.rocm}: {self.project} {self.version} (uploaded {self.uploaded}): {told}"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "sysdeps": list(self.sysdeps)}

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> Observation:
        return cls(
            rocm=str(row["rocm"]),
            project=str(row["project"]),
            version=str(row["version"]),
            uploaded=str(row["uploaded"]),
            hip=row.get("hip"),
            llvm=row.get("llvm"),
            llvm_commit=row.get("llvm_commit"),
            sysdeps=tuple(str(s) for s in row.get("sysdeps") or ()),
        )


# --------------------------------------------------------------------------- loading


def _load(name: str) -> Any:
    from importlib import resources  # the data files, read when first asked for (start-up time)

    import yaml  # only when the data is first asked for: `check` without --rocm never needs it

    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return yaml.safe_load(text)


def version_key(version: str) -> Version:
    """Comparable form of a release version ("6.4" < "7.0")."""
    return Version(version)


def _texts(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def _release(row: Mapping[str, Any]) -> RocmRelease:
    version = str(row["version"])
    official = tuple(str(a) for a in row["official"])
    library_targets = tuple(str(a) for a in row["library_targets"])
    withheld = {str(k): str(v) for k, v in (row.get("withheld") or {}).items()}
    candidates = dict.fromkeys([*official, *(processor_of(t) for t in library_targets)])
    archs = tuple(sorted((a for a in candidates if a not in withheld), key=processor_sort_key))
    torch = row["torch"]
    indexes = tuple(
        TorchIndex(url=str(i["index"]), torch=tuple(str(t) for t in i["torch"]))
        for i in torch.get("pytorch_org") or ()
    )
    unverified = _texts(row.get("unverified")) + _texts(torch.get("unverified"))
    for arch in official:
        if arch in withheld:
            raise ValueError(f"releases.yaml {version}: {arch} is both official and withheld")
    for name in ("official_source", "library_source"):
        if not row.get(name):
            raise ValueError(f"releases.yaml {version}: missing {name}")
    if not torch.get("source"):
        raise ValueError(f"releases.yaml {version}: torch rows need a source")
    released = str(row["released"]) if row.get("released") else None
    if released is not None:
        datetime.date.fromisoformat(released)  # ValueError names a malformed day
        if not row.get("released_source"):
            raise ValueError(f"releases.yaml {version}: released needs a released_source")
    return RocmRelease(
        version=version,
        patches=_texts(row.get("patches")),
        llvm=str(row["llvm"]),
        official=official,
        official_source=str(row["official_source"]),
        library_targets=library_targets,
        library_source=str(row["library_source"]),
        withheld=withheld,
        archs=archs,
        torch_indexes=indexes,
        amd_torch=tuple(str(t) for t in torch.get("amd") or ()),
        torch_source=str(torch["source"]),
        notes=_texts(row.get("notes")),
        unverified=unverified,
        hip=str(row["hip"]) if row.get("hip") else None,
        verified=tuple(" ".join(t.split()) for t in _texts(row.get("verified"))),
        released=released,
        released_source=" ".join(str(row["released_source"]).split()) if released else None,
        stream=str(row.get("stream", "legacy")),
    )


@functools.cache
def _releases() -> tuple[RocmRelease, ...]:
    rows = _load("releases.yaml")["releases"]
    found = tuple(_release(row) for row in rows)
    return tuple(sorted(found, key=lambda r: version_key(r.version)))


@functools.cache
def _library_sets() -> dict[str, LibrarySet]:
    data = _load("libraries.yaml")["sets"]
    sets: dict[str, LibrarySet] = {}
    for name, body in data.items():
        libs = []
        for row in body["libraries"]:
            glob = str(row["glob"])
            if not glob.endswith(".so*"):
                raise ValueError(f"libraries.yaml {row['name']}: glob {glob!r} must end in '.so*'")
            if not row.get("source"):
                raise ValueError(f"libraries.yaml {row['name']}: missing source")
            libs.append(
                RuntimeLibrary(
                    name=str(row["name"]),
                    component=str(row["component"]),
                    glob=glob,
                    source=str(row["source"]),
                    soname_major={str(k): int(v) for k, v in (row.get("soname_major") or {}).items()},
                    since=str(row["since"]) if row.get("since") else None,
                    note=row.get("note"),
                    unverified=row.get("unverified"),
                )
            )
        sets[str(name)] = LibrarySet(str(name), str(body["description"]).strip(), tuple(libs))
    return sets


@functools.cache
def _toolchains() -> tuple[Toolchain, ...]:
    rows = _load("toolchains.yaml")["toolchains"]
    return tuple(
        Toolchain(
            id=str(r["id"]),
            description=str(r["description"]),
            rocm=str(r["rocm"]),
            hipcc=str(r["hipcc"]),
            llvm=str(r["llvm"]),
            archs=tuple(str(a) for a in r["archs"] if str(a) not in (r.get("withheld") or {})),
            source=str(r["source"]),
            withheld={str(k): " ".join(str(v).split()) for k, v in (r.get("withheld") or {}).items()},
            library_targets={
                str(k): tuple(str(a) for a in v) for k, v in (r.get("library_targets") or {}).items()
            },
            library_targets_source=r.get("library_targets_source"),
            note=r.get("note"),
            sonames={str(k): str(v) for k, v in (r.get("sonames") or {}).items()},
            sonames_source=r.get("sonames_source"),
        )
        for r in rows
    )


@functools.cache
def _observed() -> tuple[Observation, ...]:
    rows = _load("observed.yaml").get("observed") or ()
    return tuple(Observation.from_json(r) for r in rows)


@functools.cache
def _features() -> dict[str, frozenset[str]]:
    data = _load("targets.yaml")["features"]
    return {str(k): frozenset(str(p) for p in v["processors"]) for k, v in data.items()}


# --------------------------------------------------------------------------- queries


def releases() -> list[RocmRelease]:
    """All known releases, oldest first."""
    return list(_releases())


def get_release(version: str) -> RocmRelease:
    """The release ``version`` ("6.4", "6.4.1", "rocm6.4"); raises :class:`UnknownRelease`."""
    text = str(version).strip().removeprefix("rocm").removeprefix("ROCm").strip()
    known = ", ".join(r.version for r in _releases())
    try:
        parsed = Version(text)
    except InvalidVersion:
        raise UnknownRelease(f"{version!r} is not a ROCm version (known releases: {known})") from None
    minor = f"{parsed.major}.{parsed.minor}"
    for release in _releases():
        if release.version == minor:
            return release
    raise UnknownRelease(f"no data for ROCm {version} (known releases: {known})")


def observed() -> list[Observation]:
    """What the data refresh read from AMD's wheels on PyPI (``observed.yaml``), oldest upload first."""
    return sorted(_observed(), key=lambda o: (o.uploaded, o.rocm, o.project))


def observed_since(day: datetime.date) -> list[Observation]:
    """The observations of wheels uploaded on or after ``day``."""
    return [o for o in observed() if o.uploaded >= day.isoformat()]


def min_release_for(arch: str) -> str | None:
    """The first known release whose ``archs`` contain ``arch``'s processor, or None."""
    name = processor_of(arch)
    for release in _releases():
        if name in release.archs:
            return release.version
    return None


def library_sets() -> dict[str, LibrarySet]:
    return dict(_library_sets())


def _libraries_for(sets: Sequence[str], rocm: str | None) -> list[RuntimeLibrary]:
    known = _library_sets()
    if rocm is not None:
        rocm = get_release(rocm).version
    out: list[RuntimeLibrary] = []
    for name in sets:
        if name not in known:
            raise UnknownRelease(
                f"unknown runtime-library set {name!r} (known sets: {', '.join(sorted(known))})"
            )
        for lib in known[name].libraries:
            if rocm is None or lib.shipped_in(rocm):
                out.append(lib)
    return out


def exclude_globs(sets: Sequence[str], rocm: str | None = None) -> list[str]:
    """Named sets (``rocm``, ``rocm-system``, ``torch``) as fnmatch globs over SONAMEs.

    Each glob matches the unversioned and every versioned SONAME (``librocblas.so*`` matches
    ``librocblas.so.5``). With ``rocm``, libraries the release does not ship are left out.
    Order follows the data files; duplicates are removed.
    """
    return list(dict.fromkeys(lib.glob for lib in _libraries_for(sets, rocm)))


def _soname(lib: RuntimeLibrary, rocm: str) -> str | None:
    major = lib.major_for(rocm)
    if major is None or "*" in lib.name:
        return None
    return f"{lib.name}.so.{major}"


def expected_sonames(
    rocm: str, sets: Sequence[str] = ("rocm",), toolchain: str | None = None
) -> dict[str, str]:
    """Library name -> the SONAME release ``rocm`` ships (only where the major is confirmed); with a
    ``toolchain`` (a distribution's packaging, toolchains.yaml), the SONAMEs of that packaging."""
    if toolchain is not None:
        return dict(get_toolchain(toolchain).sonames)
    release = get_release(rocm)
    out: dict[str, str] = {}
    for lib in _libraries_for(sets, release.version):
        soname = _soname(lib, release.version)
        if soname is not None:
            out[lib.name] = soname
    return out


def matches(soname: str, globs: Sequence[str]) -> bool:
    """True when ``soname`` matches one of ``globs`` (case-sensitive, like the dynamic linker)."""
    return any(fnmatch.fnmatchcase(soname, g) for g in globs)


def toolchains() -> list[Toolchain]:
    return list(_toolchains())


def get_toolchain(toolchain_id: str) -> Toolchain:
    for toolchain in _toolchains():
        if toolchain.id == toolchain_id:
            return toolchain
    known = ", ".join(t.id for t in _toolchains())
    raise UnknownToolchain(f"unknown toolchain {toolchain_id!r} (known toolchains: {known})")


def feature_processors() -> dict[str, frozenset[str]]:
    """Target-ID feature ("xnack", "sramecc") -> processors that accept it."""
    return dict(_features())
