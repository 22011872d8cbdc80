"""Write clang offload bundles byte by byte, per clang/lib/Driver/OffloadBundler.cpp."""

from __future__ import annotations

import struct
import zlib

import zstandard

PLAIN_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"


def plain_bundle(entries: list[tuple[str, bytes]], *, align: int = 4096) -> bytes:
    """magic + u64 count + (u64 offset, u64 size, u64 id length, id) per entry, then the payloads, each
    starting at a multiple of ``align`` (as clang-offload-bundler does)."""
    header_len = 32 + sum(24 + len(entry_id) for entry_id, _ in entries)
    offsets = []
    pos = header_len
    for _entry_id, payload in entries:
        if payload:
            pos = (pos + align - 1) // align * align
        offsets.append(pos)
        pos += len(payload)
    out = bytearray(PLAIN_MAGIC + struct.pack("<Q", len(entries)))
    for (entry_id, payload), offset in zip(entries, offsets, strict=True):
        out += struct.pack("<QQQ", offset, len(payload), len(entry_id)) + entry_id.encode()
    for (_entry_id, payload), offset in zip(entries, offsets, strict=True):
        out += b"\0" * (offset - len(out)) + payload
    return bytes(out)


def compressed_bundle(plain: bytes, *, method: str = "zstd", version: int = 2) -> bytes:
    """A CCOB wrapping ``plain``: method 0 zlib / 1 zstd (llvm::compression::Format), versions 1-3."""
    if method == "zlib":
        payload, code = zlib.compress(plain), 0
    else:
        payload, code = zstandard.ZstdCompressor(level=3).compress(plain), 1
    digest = 0x1234_5678_9ABC_DEF0
    if version == 1:
        header = b"CCOB" + struct.pack("<HHIQ", 1, code, len(plain), digest)
    elif version == 2:
        header = b"CCOB" + struct.pack("<HHIIQ", 2, code, 24 + len(payload), len(plain), digest)
    else:
        header = b"CCOB" + struct.pack("<HHQQQ", 3, code, 32 + len(payload), len(plain), digest)
    return header + payload


def amdgpu_header(e_flags: int, abi_version: int = 3) -> bytes:
    """A 64-byte AMDGPU ELF header (HSA OS ABI), enough for target-id parsing."""
    ident = b"\x7fELF" + bytes([2, 1, 1, 64, abi_version]) + b"\0" * 7
    return ident + struct.pack("<HHIQQQIHHHHHH", 3, 224, 1, 0, 0, 0, e_flags, 64, 0, 0, 64, 0, 0)
