"""The data model of a wheel inspection: NamedTuples (cheap to define, which ``check``'s start-up
needs), JSON-ready through their shapes (:func:`buildkit.records.to_data`).

Everything here is plain data built by :func:`buildkit.inspect.inspect_wheel`; the gate reads it
and never re-opens the wheel. Their JSON is declared on each class (``@json_shape``).
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from buildkit.records import Key, by_key, json_shape

_VERSION_RE = re.compile(r"^(?P<prefix>[A-Za-z_]+?)_(?P<version>[0-9]+(?:\.[0-9]+)*)$")


def split_symbol_version(name: str) -> tuple[str, tuple[int, ...]] | None:
    """``"GLIBC_2.2.5"`` -> ``("GLIBC", (2, 2, 5))``; ``None`` for names without a numeric version
    (``"GLIBC_PRIVATE"``, ``"Qt_5"`` is ``("Qt", (5,))``)."""
    match = _VERSION_RE.match(name)
    if match is None:
        return None
    return match["prefix"], tuple(int(part) for part in match["version"].split("."))


@json_shape()
class OffloadEntry(NamedTuple):
    """One entry of a clang offload bundle.

    ``entry_id`` is the bundle's id string, e.g. ``"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"``;
    ``kind`` is its first field (``"hipv4"``, ``"hip"``, ``"host"``, ``"openmp"``), ``triple`` the
    target triple (``"amdgcn-amd-amdhsa"``), ``target_id`` the processor with its features
    (``"gfx90a:xnack-"``; ``None`` for the host entry). ``compression`` is ``None`` for a plain
    bundle, ``"zlib"`` or ``"zstd"`` for a CCOB one. ``code_object_target`` is the target id read
    back from the entry's own ELF header when it could be read (a cross-check), else ``None``.

    Sizes: ``size`` is the code object's own size (inflated, for a CCOB); ``stored`` the bytes it
    takes in the member (``size`` in a plain bundle; a CCOB's compressed bytes, header included,
    shared among its entries in proportion to their sizes; None: not known); ``bundle`` the number of
    its bundle in the member's ``.hip_fatbin`` (0, 1, ...); ``compressed_estimate`` for an entry of a
    plain bundle, what zstd makes of it, measured on a sample of its first bytes (None: not sampled).
    """

    entry_id: str
    kind: str
    triple: str
    target_id: str | None
    size: int
    compression: str | None = None
    code_object_target: str | None = None
    stored: int | None = None
    bundle: int = 0
    compressed_estimate: int | None = None

    @property
    def is_device(self) -> bool:
        return self.target_id is not None

    @property
    def gfx(self) -> str | None:
        """The processor name without features (``"gfx90a"``)."""
        return None if self.target_id is None else self.target_id.split(":", 1)[0]


@json_shape()
class CodeObject(NamedTuple):
    """A standalone AMDGPU code object (an ELF with ``e_machine == EM_AMDGPU``): ``.co``, ``.hsaco``
    or any member whose header says so. ``target_id`` comes from ``e_flags``
    (``"gfx90a:xnack-"``); ``code_object_version`` from ``e_ident[EI_ABIVERSION]`` (2..6)."""

    member: str
    target_id: str
    code_object_version: int | None
    e_flags: int

    @property
    def gfx(self) -> str:
        return self.target_id.split(":", 1)[0]


def _dotted(versions: dict[str, tuple[int, ...]]) -> dict[str, str]:
    """``{"GLIBC": (2, 34)}`` -> ``{"GLIBC": "2.34"}``, sorted by prefix."""
    return {k: ".".join(map(str, v)) for k, v in sorted(versions.items())}


@json_shape(
    *("member", "machine", "elf_class", "soname", "needed", "rpath", "runpath"),
    Key("version_needs", convert=by_key),
    Key("max_versions", convert=_dotted),
    *("offload_bundles", "offload_targets", "endian", "undefined_of_interest", "x86_isa_needed"),
)
class ElfInfo(NamedTuple):
    """One host ELF member (shared library, extension module, executable).

    ``version_needs`` maps each needed library (``"libc.so.6"``) to the version names required from
    it (``("GLIBC_2.2.5", "GLIBC_2.34")``), sorted. ``max_versions`` is derived: per version prefix
    (``"GLIBC"``, ``"GLIBCXX"``, ``"CXXABI"``, ``"GCC"``...) the highest numeric version required by
    this file, as a tuple of ints. ``offload_targets`` lists every entry of every clang offload
    bundle in the file's ``.hip_fatbin`` (host entries included; filter with ``is_device``).

    ``endian`` is ``e_ident[EI_DATA]`` (``"little"``/``"big"``: ppc64le vs ppc64).
    ``undefined_of_interest`` lists, sorted, the names of the undefined (``SHN_UNDEF``), non-weak
    ``.dynsym`` entries that are in the set the inspection was given (default
    :func:`~buildkit.inspect.symbols.default_symbols_of_interest`: auditwheel's blacklisted symbols
    and ``PyFPE_*``); the other names are never kept. ``x86_isa_needed`` is the
    ``GNU_PROPERTY_X86_ISA_1_NEEDED`` bitmask of an x86 object's GNU property note (1 baseline,
    2 x86-64-v2, 4 v3, 8 v4), ``None`` when it has none.
    """

    member: str
    machine: str
    elf_class: int
    soname: str | None
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    version_needs: dict[str, tuple[str, ...]]
    offload_targets: tuple[OffloadEntry, ...] = ()
    offload_bundles: int = 0
    endian: Literal["little", "big"] = "little"
    undefined_of_interest: tuple[str, ...] = ()
    x86_isa_needed: int | None = None

    @property
    def max_versions(self) -> dict[str, tuple[int, ...]]:
        best: dict[str, tuple[int, ...]] = {}
        for names in self.version_needs.values():
            for name in names:
                parsed = split_symbol_version(name)
                if parsed is None:
                    continue
                prefix, version = parsed
                if version > best.get(prefix, ()):
                    best[prefix] = version
        return best

    @property
    def gfx_targets(self) -> tuple[str, ...]:
        """Sorted, unique device target ids (``"gfx90a:xnack-"``) of this file's offload bundles."""
        return tuple(sorted({e.target_id for e in self.offload_targets if e.target_id is not None}))


@json_shape()
class RecordEntry(NamedTuple):
    """One row of ``.dist-info/RECORD``, parsed, not yet checked."""

    path: str
    hash: str | None
    size: int | None


@json_shape()
class MemberFile(NamedTuple):
    """One file of the archive (directory entries left out) as the zip's central directory declares
    it, with its digest when the inspection verified the RECORD: ``hash`` is written the way RECORD
    writes it (``"sha256=<urlsafe base64, no padding>"``), in the algorithm RECORD names for that
    path (sha256 for a path RECORD does not list or lists with an unknown algorithm); ``None`` when
    the member was not hashed (``inspect_wheel(verify_record=False)``, or RECORD itself)."""

    name: str
    size: int
    hash: str | None = None


@json_shape()
class MemberStat(NamedTuple):
    """What reading one member cost: ``bytes_read`` decompressed bytes consumed (a member read
    twice counts twice), ``passes`` how many times it was streamed, ``kind`` one of ``"elf"``,
    ``"amdgpu"``, ``"not-elf-library"``, ``"metadata"``, ``"other"``."""

    name: str
    compressed_size: int
    file_size: int
    bytes_read: int
    passes: int
    kind: str


@json_shape()
class Oddity(NamedTuple):
    """Something odd but not unreadable, for the gate to judge (e.g. ``kind="not-elf-library"``: a
    member named like a shared library whose first bytes are not the ELF magic)."""

    kind: str
    member: str
    message: str


@json_shape()
class CoreMetadata(NamedTuple):
    """The ``.dist-info/METADATA`` header section as read (up to its first empty line, line ends
    kept; bytes that are not UTF-8 surrogate-escaped): the gate's ``core-metadata`` rule parses it as
    pip and PyPI do. The body (the long description) is left out."""

    member: str  # "demo-1.0.dist-info/METADATA"
    headers: str

    @property
    def data(self) -> bytes:
        """The header section's bytes, as the wheel holds them."""
        return self.headers.encode("utf-8", "surrogateescape")


@json_shape()
class LinkMember(NamedTuple):
    """A member whose zip external attributes give it a file type other than a regular file or a
    folder (``unzip`` recreates it as such): ``kind`` ``"symlink"`` (``target``: its bytes, the link
    text), ``"fifo"``, ``"device"``, ``"socket"``."""

    member: str
    kind: str
    target: str = ""


@json_shape(
    *("path", "filename", "size", "sha256", "name", "version", "build_tag", "tags", "wheel_tags"),
    *("root_is_purelib", "metadata_requires", "record", "uncompressed_size", "members", "elves"),
    *(
        "code_objects",
        "findings",
        "bytes_read",
        Key("dist_info", "dist_info_dir"),
        "files",
        "record_verified",
        "core_metadata",
        "special_members",
    ),
)
class WheelReport(NamedTuple):
    """Everything the gate needs about one wheel, read in one streaming pass. Two reports of one
    wheel are equal only with equal ``stats``: compare ``_replace(stats=())`` to ignore how it was
    read (the workers and limits change the bytes read)."""

    path: str
    filename: str
    size: int
    sha256: str
    name: str
    version: str
    build_tag: str | None
    tags: tuple[str, ...]
    wheel_tags: tuple[str, ...]
    root_is_purelib: bool | None
    metadata_requires: tuple[str, ...]
    record: tuple[RecordEntry, ...]
    uncompressed_size: int
    members: tuple[str, ...]
    elves: tuple[ElfInfo, ...]
    code_objects: tuple[CodeObject, ...]
    findings: tuple[Oddity, ...] = ()
    stats: tuple[MemberStat, ...] = ()
    dist_info: str | None = None  # "pkg-1.0.dist-info" (None: derived from the members)
    files: tuple[MemberFile, ...] = ()  # every file member, archive order
    record_verified: bool = False  # every member except RECORD (and its signatures) was hashed
    core_metadata: CoreMetadata | None = None  # None: the wheel has no .dist-info/METADATA
    special_members: tuple[LinkMember, ...] = ()  # symlinks and other non-regular members

    @property
    def dist_info_dir(self) -> str | None:
        """The ``*.dist-info`` directory holding ``WHEEL`` (from the members when not given)."""
        if self.dist_info is not None:
            return self.dist_info
        found = sorted(
            {m.split("/", 1)[0] for m in self.members if m.count("/") == 1 and m.endswith(".dist-info/WHEEL")}
        )
        return found[0] if len(found) == 1 else None

    @property
    def bytes_read(self) -> int:
        """Decompressed bytes consumed across all members (the benchmark's work figure)."""
        return sum(s.bytes_read for s in self.stats)

    @property
    def platform_tags(self) -> tuple[str, ...]:
        """The platform parts of the file-name tags (``"manylinux_2_28_x86_64"``), sorted, unique."""
        return tuple(sorted({t.rsplit("-", 1)[-1] for t in self.tags}))

    def elf(self, member: str) -> ElfInfo | None:
        return next((e for e in self.elves if e.member == member), None)
