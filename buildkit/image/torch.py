"""The torch installed in a runtime image, as the ``torch-abi`` rule reads it: the dynamic symbol
tables of its ``torch/lib/*.so*`` (``check --torch-abi IMAGE``).

Where torch is installed is asked of the image's own Python without importing torch
(``importlib.util.find_spec``: no GPU, no ROCm initialisation, no network) in one throwaway
container (purpose ``torch-abi``); its ``version.py`` and ``lib/`` are then copied out as tar
streams and each library's tables streamed as the tar goes by: nothing is written to disk. A
library whose tables need a second pass is asked for again on its own.
"""

from __future__ import annotations

import io
import posixpath
import re
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from buildkit.docker_engine import Throwaway, connect, throwaway
from buildkit.errors import DockerUnavailable, UsageError
from buildkit.inspect.symtab import SymbolTable, read_symbol_table

PURPOSE = "torch-abi"
FIND_TORCH = (
    "import importlib.util, os, sys\n"
    "spec = importlib.util.find_spec('torch')\n"
    "sys.exit(3) if spec is None or not spec.origin else print(os.path.dirname(spec.origin))\n"
)
PYTHONS = ("python3", "python")


@dataclass(frozen=True)
class ImageTorch:
    """What an image's torch exports: its folder in the image, its version and each library's tables."""

    image: str
    folder: str
    version: str | None
    tables: dict[str, SymbolTable]


class _Chunks(io.RawIOBase):
    """A readable file over an iterator of byte chunks (the engine's archive stream)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        super().__init__()
        self._chunks: Iterator[bytes] = iter(chunks)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


class _Borrowed(io.RawIOBase):
    """A member's stream the reader may close without closing the tar behind it."""

    def __init__(self, inner: IO[bytes]) -> None:
        super().__init__()
        self._inner = inner

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        return self._inner.read(-1 if size is None else size)


def _tar(box: Throwaway, path: str) -> tarfile.TarFile:
    stream, _stat = box.get_archive(path)
    return tarfile.open(fileobj=io.BufferedReader(_Chunks(stream), 1 << 20), mode="r|")


def _one_file(box: Throwaway, path: str) -> IO[bytes]:
    """A fresh stream of one file of the container (a library's second pass)."""
    tar = _tar(box, path)
    for member in tar:
        if member.isfile():
            handle = tar.extractfile(member)
            assert handle is not None
            return _Borrowed(handle)  # type: ignore[return-value]
    raise UsageError(f"{path}: not a regular file in the image")


def locate_command() -> list[str]:
    """The container's command: print the folder its Python imports torch from (exit 3: none)."""
    return [
        "sh",
        "-c",
        'command -v python3 >/dev/null && exec python3 -c "$0"; exec python -c "$0"',
        FIND_TORCH,
    ]


def torch_folder(image: str, exit_code: int, stdout: bytes, stderr: bytes = b"") -> str:
    """The torch folder from the locating command's result (UsageError when there is none)."""
    lines = stdout.decode("utf-8", "replace").strip().splitlines()
    if exit_code == 0 and lines and lines[-1].startswith("/"):
        return lines[-1]
    why = "torch is not installed" if exit_code == 3 else stderr.decode("utf-8", "replace").strip()[-300:]
    raise UsageError(f"--torch-abi {image}: the image's Python finds no torch (exit {exit_code}: {why})")


def read_torch_tables(box: Throwaway, image: str, folder: str) -> ImageTorch:
    """The version and library tables of the torch at ``folder`` in the container ``box``."""
    version = None
    try:
        tar = _tar(box, posixpath.join(folder, "version.py"))
        for member in tar:
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is not None:
                m = re.search(rb"^__version__\s*=\s*['\"]([^'\"]+)['\"]", handle.read(1 << 16), re.M)
                version = m.group(1).decode("ascii", "replace") if m else None
    except Exception:  # the engine's NotFound: a torch without version.py still has its libraries
        version = None
    lib = posixpath.join(folder, "lib")
    tables: dict[str, SymbolTable] = {}
    tar = _tar(box, lib)
    for member in tar:
        base = posixpath.basename(member.name)
        if not member.isfile() or member.name.count("/") != 1 or not (base.endswith(".so") or ".so." in base):
            continue
        handle = tar.extractfile(member)
        assert handle is not None
        if handle.read(4) != b"\x7fELF":
            continue
        first = [True]
        path = posixpath.join(lib, base)

        def opener(handle: IO[bytes] = handle, path: str = path, first: list[bool] = first) -> IO[bytes]:
            if first[0]:
                first[0] = False
                return _Prefixed(b"\x7fELF", handle)  # type: ignore[return-value]
            return _one_file(box, path)

        tables[base] = read_symbol_table(base, opener, member.size, imports=False)
    if not tables:
        raise UsageError(f"--torch-abi {image}: {lib} holds no ELF library")
    return ImageTorch(image, folder, version, tables)


class _Prefixed(io.RawIOBase):
    """``head`` (bytes already read) followed by the rest of ``inner``."""

    def __init__(self, head: bytes, inner: IO[bytes]) -> None:
        super().__init__()
        self._head = head
        self._inner = inner

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if self._head:
            want = len(self._head) if size is None or size < 0 else min(size, len(self._head))
            out, self._head = self._head[:want], self._head[want:]
            return out
        return self._inner.read(-1 if size is None else size)


def image_torch(image: str) -> ImageTorch:
    """The torch of ``image`` (an image in the engine, by name or id)."""
    import docker.errors  # the Docker SDK: only for an image

    client = connect()
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        raise UsageError(
            f"--torch-abi {image}: neither a file nor an image in the engine (pull it first)"
        ) from None
    except docker.errors.APIError as exc:
        raise DockerUnavailable(f"--torch-abi {image}: {exc}") from None
    try:
        with throwaway(client, image, locate_command(), purpose=PURPOSE, entrypoint=[]) as box:
            done = box.run(timeout=300)
            folder = torch_folder(image, done.exit_code, done.stdout, done.stderr)
            return read_torch_tables(box, image, folder)
    except docker.errors.APIError as exc:
        raise DockerUnavailable(f"reading torch from image {image}: {exc}") from None
