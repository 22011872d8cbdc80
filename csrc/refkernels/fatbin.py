"""Read the GPU targets compiled into a HIP binary, with the standard library only.

A HIP host object or shared library keeps its device code in the ELF section ``.hip_fatbin``.
The section holds one clang offload bundle per translation unit (aligned, padded with zeros)::

    "__CLANG_OFFLOAD_BUNDLE__"              24-byte magic
    u64 entry count
    per entry: u64 offset, u64 size, u64 triple length, triple   (offsets from the bundle start)

with triples such as ``hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`` (device code) and
``host-x86_64-unknown-linux-gnu-`` (empty host entry). Newer compilers may store a bundle
compressed (``-offload-compress``)::

    "CCOB", u16 version, u16 method (0 zlib, 1 zstd),
    v1: u32 uncompressed size, u64 hash
    v2: u32 total size, u32 uncompressed size, u64 hash
    v3: u64 total size, u64 uncompressed size, u64 hash
    then the compressed bytes of an uncompressed bundle.

All integers are little-endian. zlib payloads are read with :mod:`zlib`; zstd payloads need
Python >= 3.14 (:mod:`compression.zstd`) or the optional ``zstandard`` module.
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from dataclasses import dataclass

from .errors import BundleFormatError

__all__ = ["OffloadEntry", "entries_in_fatbin", "read_offload_entries", "read_section", "target_id"]

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED_MAGIC = b"CCOB"
FATBIN_SECTION = ".hip_fatbin"
MAX_ENTRIES = 4096
MAX_UNCOMPRESSED = 1 << 31  # refuse to inflate more than 2 GiB

_TARGET_RE = re.compile(r"(gfx[0-9a-z]+(?:-[0-9a-z]+)*-generic|gfx[0-9a-f]+)((?::[a-z_]+[+-])*)$")


@dataclass(frozen=True)
class OffloadEntry:
    """One entry of an offload bundle."""

    triple: str  # "hipv4-amdgcn-amd-amdhsa--gfx90a"
    size: int  # bytes of the code object
    compressed: bool  # came from a CCOB bundle

    @property
    def target(self) -> str | None:
        """The target ID ("gfx90a:xnack-") of a device entry, None for the host entry."""
        return target_id(self.triple)


def target_id(triple: str) -> str | None:
    """Target ID at the end of an AMDGPU bundle triple, None when the triple is not AMDGPU."""
    if "amdgcn-amd-amdhsa" not in triple:
        return None
    match = _TARGET_RE.search(triple)
    return match.group(1) + match.group(2) if match else None


def _u16(data: bytes, pos: int) -> int:
    return int(struct.unpack_from("<H", data, pos)[0])


def _u32(data: bytes, pos: int) -> int:
    return int(struct.unpack_from("<I", data, pos)[0])


def _u64(data: bytes, pos: int) -> int:
    return int(struct.unpack_from("<Q", data, pos)[0])


def read_section(path: str | os.PathLike[str], name: str = FATBIN_SECTION) -> bytes | None:
    """Bytes of the ELF section ``name`` of the file at ``path``; None when there is no such section."""
    with open(path, "rb") as handle:
        data = handle.read()
    return elf_section(data, name)


def elf_section(data: bytes, name: str) -> bytes | None:
    """Bytes of the section ``name`` of an ELF image held in memory (32/64-bit, either byte order)."""
    if len(data) < 16 or data[:4] != b"\x7fELF":
        raise BundleFormatError("not an ELF file")
    klass, order = data[4], data[5]
    if klass not in (1, 2) or order not in (1, 2):
        raise BundleFormatError(f"unsupported ELF class {klass} / data encoding {order}")
    end = "<" if order == 1 else ">"
    is64 = klass == 2
    try:
        if is64:
            (shoff,) = struct.unpack_from(end + "Q", data, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x3A)
            shdr = end + "IIQQQQIIQQ"
        else:
            (shoff,) = struct.unpack_from(end + "I", data, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x2E)
            shdr = end + "IIIIIIIIII"
        if shoff == 0:
            return None
        if shentsize < struct.calcsize(shdr):
            raise BundleFormatError(f"ELF section header size {shentsize} is too small")
        headers = []
        for index in range(shnum):
            fields = struct.unpack_from(shdr, data, shoff + index * shentsize)
            # (name, type, flags, addr, offset, size, ...) in both layouts
            headers.append((fields[0], fields[1], fields[4], fields[5]))
        if shstrndx >= len(headers):
            raise BundleFormatError("ELF section-name table index out of range")
        _, _, str_off, str_size = headers[shstrndx]
        names = data[str_off : str_off + str_size]
    except struct.error as exc:
        raise BundleFormatError(f"truncated ELF headers: {exc}") from None
    wanted = name.encode()
    for name_off, sh_type, offset, size in headers:
        stop = names.find(b"\0", name_off)
        if names[name_off : stop if stop >= 0 else None] != wanted:
            continue
        if sh_type == 8:  # SHT_NOBITS: no file contents
            return b""
        if offset + size > len(data):
            raise BundleFormatError(f"section {name} extends past the end of the file")
        return data[offset : offset + size]
    return None


def _decompress(method: int, payload: bytes, expected: int) -> bytes:
    if expected > MAX_UNCOMPRESSED:
        raise BundleFormatError(f"compressed bundle claims {expected} bytes uncompressed")
    if method == 0:
        inflater = zlib.decompressobj()
        try:
            out = inflater.decompress(payload, expected + 1)
        except zlib.error as exc:
            raise BundleFormatError(f"corrupt zlib payload in compressed bundle: {exc}") from None
    elif method == 1:
        out = _zstd_decompress(payload, expected)
    else:
        raise BundleFormatError(f"unknown compression method {method} in compressed bundle")
    if len(out) != expected:
        raise BundleFormatError(f"compressed bundle inflated to {len(out)} bytes, header says {expected}")
    return out


def _zstd_decompress(payload: bytes, expected: int) -> bytes:
    try:
        from compression import zstd  # Python >= 3.14

        return bytes(zstd.decompress(payload))
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        raise BundleFormatError(
            "bundle is zstd-compressed: needs Python >= 3.14 or the 'zstandard' module"
        ) from None
    try:
        return bytes(zstandard.ZstdDecompressor().decompress(payload, max_output_size=expected))
    except zstandard.ZstdError as exc:
        raise BundleFormatError(f"corrupt zstd payload in compressed bundle: {exc}") from None


def _parse_bundle(data: bytes, start: int, compressed: bool) -> tuple[list[OffloadEntry], int]:
    """Entries of the uncompressed bundle at ``start`` and the offset just past it."""
    pos = start + len(BUNDLE_MAGIC)
    try:
        count = _u64(data, pos)
        pos += 8
        if count > MAX_ENTRIES:
            raise BundleFormatError(f"offload bundle at {start:#x} claims {count} entries")
        entries = []
        end = pos
        for _ in range(count):
            offset, size, triple_len = struct.unpack_from("<QQQ", data, pos)
            pos += 24
            if triple_len > 1024 or pos + triple_len > len(data):
                raise BundleFormatError(f"bad triple length {triple_len} in bundle at {start:#x}")
            triple = data[pos : pos + triple_len].decode("ascii", "replace")
            pos += triple_len
            if start + offset + size > len(data):
                raise BundleFormatError(f"entry {triple} of bundle at {start:#x} extends past its section")
            entries.append(OffloadEntry(triple=triple, size=size, compressed=compressed))
            end = max(end, pos, start + offset + size)
    except struct.error:
        raise BundleFormatError(f"truncated offload bundle at {start:#x}") from None
    return entries, end


def _parse_compressed(data: bytes, start: int) -> tuple[list[OffloadEntry], int]:
    try:
        version, method = struct.unpack_from("<HH", data, start + 4)
        if version == 1:
            total = None
            expected = _u32(data, start + 8)
            header = 20
        elif version == 2:
            total = _u32(data, start + 8)
            expected = _u32(data, start + 12)
            header = 24
        elif version == 3:
            total = _u64(data, start + 8)
            expected = _u64(data, start + 16)
            header = 32
        else:
            raise BundleFormatError(f"unsupported compressed bundle version {version} at {start:#x}")
    except struct.error:
        raise BundleFormatError(f"truncated compressed bundle header at {start:#x}") from None
    if total is not None:
        if total < header or start + total > len(data):
            raise BundleFormatError(f"compressed bundle at {start:#x} claims {total} bytes")
        payload = data[start + header : start + total]
        end = start + total
    else:
        # v1 does not store its size: it runs to the end of the section (trailing padding ignored)
        payload = data[start + header :]
        end = len(data)
    inner = _decompress(method, payload, expected)
    if not inner.startswith(BUNDLE_MAGIC):
        raise BundleFormatError(f"compressed bundle at {start:#x} does not hold an offload bundle")
    entries, _ = _parse_bundle(inner, 0, compressed=True)
    return entries, end


def entries_in_fatbin(data: bytes) -> list[OffloadEntry]:
    """All entries of all bundles (plain or compressed) found in a ``.hip_fatbin`` payload."""
    entries: list[OffloadEntry] = []
    pos = 0
    while True:
        plain = data.find(BUNDLE_MAGIC, pos)
        packed = data.find(COMPRESSED_MAGIC, pos)
        starts = [p for p in (plain, packed) if p >= 0]
        if not starts:
            return entries
        start = min(starts)
        if start == plain:
            found, pos = _parse_bundle(data, start, compressed=False)
        else:
            found, pos = _parse_compressed(data, start)
        entries.extend(found)


def read_offload_entries(path: str | os.PathLike[str]) -> list[OffloadEntry]:
    """Offload-bundle entries in the ``.hip_fatbin`` section of the ELF file at ``path``."""
    section = read_section(path)
    return entries_in_fatbin(section) if section else []
