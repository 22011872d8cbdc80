"""A torch's exports read for the ``torch-abi`` rule (:mod:`buildkit.gate.torchabi` judges them).

The torch's exports are read from its wheel (``torch/lib/*.so*``, streamed: only the dynamic symbol
tables, :func:`buildkit.inspect.symtab.wheel_symbol_tables`), from an installed torch's folder, or
(through a reader the command injects: the gate never talks to a Docker engine) from an image.
Exports of a torch wheel are cached per sha256 in ``$XDG_CACHE_HOME/rocm-buildkit/torch-exports/``
(zstd-compressed JSON, written atomically).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from buildkit.errors import UsageError, WheelReadError
from buildkit.fsutil import atomic_write, cache_home
from buildkit.gate.torchabi import TorchExports, TorchLibrary
from buildkit.manifest import sha256_file

if TYPE_CHECKING:  # the inspection's types only: importing buildkit.inspect costs 0.2 s of start-up
    from buildkit.inspect.symtab import SymbolTable

CACHE_FORMAT = 2  # 2: the version is torch.version.__version__ (2.14.1+cu130), not the file name's
ImageReader = Callable[[str], TorchExports]


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/rocm-buildkit/torch-exports`` (default ``~/.cache``)."""
    return cache_home() / "torch-exports"


def _is_lib_member(name: str) -> bool:
    if not name.startswith("torch/lib/") or name.count("/") != 2:
        return False
    base = name.rsplit("/", 1)[-1]
    return base.endswith(".so") or ".so." in base


def _serialise(exports: TorchExports) -> bytes:
    import zstandard

    doc = {
        "format": CACHE_FORMAT,
        "version": exports.version,
        "filename": exports.filename,
        "sha256": exports.sha256,
        "libraries": [
            {
                "name": lib.name,
                "soname": lib.soname,
                "needed": list(lib.needed),
                "exported": sorted(lib.exported),
            }
            for lib in exports.libraries
        ],
    }
    return zstandard.ZstdCompressor(level=3).compress(json.dumps(doc, separators=(",", ":")).encode())


def _deserialise(data: bytes, source: str) -> TorchExports | None:
    import zstandard

    try:
        doc = json.loads(zstandard.ZstdDecompressor().decompress(data, max_output_size=1 << 30))
        if doc.get("format") != CACHE_FORMAT:
            return None
        libraries = tuple(
            TorchLibrary(str(lib["name"]), lib["soname"], tuple(lib["needed"]), frozenset(lib["exported"]))
            for lib in doc["libraries"]
        )
    except (zstandard.ZstdError, ValueError, KeyError, TypeError):
        return None  # a damaged entry is read again from the wheel (and rewritten)
    return TorchExports(
        source, "wheel", doc["version"], libraries, doc["filename"], doc["sha256"], cached=True
    )


def _stat_key(path: Path) -> str:
    """What a file is known by between two runs without hashing it: path, size, mtime, inode (as
    tests/corpus/fetch.py's sidecars and git's index trust them)."""
    import hashlib

    st = path.stat()
    ident = f"{path.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0{st.st_dev}"
    return hashlib.sha256(ident.encode("utf-8", "surrogateescape")).hexdigest()


def _known_sha256(path: Path, where: Path) -> str:
    """The file's sha256: remembered for the same path, size, mtime and inode (``stat/``), else
    computed (and remembered)."""
    stat_file = where / "stat" / _stat_key(path)
    try:
        known = stat_file.read_text("ascii").strip()
        if re.fullmatch(r"[0-9a-f]{64}", known):
            return known
    except OSError:
        pass
    digest = sha256_file(path)
    try:
        stat_file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(stat_file, digest + "\n")
        _prune(stat_file.parent, keep=STAT_ENTRIES)
    except OSError:
        pass
    return digest


#: remembered (path, size, mtime, inode) -> sha256 entries: a build's staged wheelhouse is a new path
#: every time, so the oldest are dropped beyond this many
STAT_ENTRIES = 256


def _prune(folder: Path, *, keep: int) -> None:
    entries = sorted(folder.iterdir(), key=lambda p: p.stat().st_mtime_ns)
    for old in entries[: max(0, len(entries) - keep)]:
        old.unlink(missing_ok=True)


def torch_wheel_exports(path: Path, *, cache: Path | None = None, use_cache: bool = True) -> TorchExports:
    """The exports of a torch wheel: read from the cache entry of its sha256, else streamed from its
    ``torch/lib/*.so*`` members (and cached). A wheel of another distribution, or one without
    torch's libraries, is a UsageError (exit 2); a wheel that cannot be read, a WheelReadError
    (exit 6) naming it."""
    from buildkit.inspect.symtab import wheel_symbol_tables  # the streaming reader: only when asked

    source = str(path)
    where = cache if cache is not None else cache_dir()
    if use_cache:
        try:
            digest = _known_sha256(path, where)
        except OSError as err:
            raise WheelReadError(f"--torch-abi {path}: cannot read the file: {err}") from None
        try:
            hit = _deserialise((where / f"{digest}.json.zst").read_bytes(), source)
        except OSError:
            hit = None
        if hit is not None and hit.sha256 == digest:
            return hit
    try:
        read = wheel_symbol_tables(
            path, _is_lib_member, imports=False, sha256=True, texts=["torch/version.py"]
        )
    except WheelReadError as err:
        raise WheelReadError(f"--torch-abi {path.name}: the torch wheel cannot be read: {err}") from None
    if read.name.lower() != "torch":
        raise UsageError(
            f"--torch-abi {path}: not a torch wheel (its distribution is {read.name}); give a torch wheel, "
            "an installed torch folder or a runtime image"
        )
    libraries = tuple(
        TorchLibrary(member.rsplit("/", 1)[-1], t.soname, t.needed, t.exported)
        for member, t in read.tables.items()
    )
    if not any(lib.name.startswith(("libc10", "libtorch")) for lib in libraries):
        raise UsageError(f"--torch-abi {path}: this torch wheel has no torch/lib/libc10*.so or libtorch*.so")
    version = _version_of(read.texts.get("torch/version.py", b"")) or read.version
    exports = TorchExports(source, "wheel", version, libraries, read.filename, read.sha256)
    if use_cache and read.sha256:
        try:
            where.mkdir(parents=True, exist_ok=True)
            atomic_write(where / f"{read.sha256}.json.zst", _serialise(exports))
        except OSError:
            pass  # a read-only cache only costs the next run the read
    return exports


def _version_of(version_py: bytes) -> str | None:
    """``__version__`` of torch's ``version.py`` (``2.14.1+cu130``: the wheel's name lacks the label)."""
    m = re.search(rb"^__version__\s*=\s*['\"]([^'\"]+)['\"]", version_py, re.M)
    return m.group(1).decode("ascii", "replace") if m else None


def torch_folder_exports(folder: Path) -> TorchExports:
    """The exports of an installed torch: ``folder`` is the ``torch`` package (holding ``lib/``) or a
    ``site-packages`` folder holding it."""
    from buildkit.inspect.symtab import file_symbol_tables  # the streaming reader: only when asked

    package = folder if (folder / "lib").is_dir() and (folder / "__init__.py").exists() else folder / "torch"
    lib_dir = package / "lib"
    files = sorted(p for p in lib_dir.glob("*.so*") if p.is_file()) if lib_dir.is_dir() else []
    if not files:
        raise UsageError(
            f"--torch-abi {folder}: no torch/lib/*.so here (give a torch wheel or the torch folder)"
        )
    tables = file_symbol_tables(files, imports=False)
    version_py = package / "version.py"
    version = _version_of(version_py.read_bytes()) if version_py.is_file() else None
    return exports_from_tables(str(folder), "folder", version, tables)


def exports_from_tables(
    source: str,
    kind: Literal["wheel", "folder", "image"],
    version: str | None,
    tables: Mapping[str, SymbolTable],
) -> TorchExports:
    """A torch's exports from its libraries' symbol tables (keyed by file name), as an image's torch
    is read (:mod:`buildkit.image.torch`, injected by the command)."""
    libraries = tuple(
        TorchLibrary(name, t.soname, t.needed, t.exported) for name, t in sorted(tables.items())
    )
    if not any(lib.name.startswith(("libc10", "libtorch")) for lib in libraries):
        raise UsageError(f"--torch-abi {source}: its torch/lib has no libc10*.so or libtorch*.so")
    return TorchExports(source, kind, version, libraries)


def looks_like_path(source: str) -> bool:
    """Whether ``--torch-abi`` names a file or folder rather than an image reference."""
    return source.endswith(".whl") or source.startswith(("/", ".", "~")) or Path(source).exists()


def load_torch_exports(
    source: str | os.PathLike[str], *, image_reader: ImageReader | None = None
) -> TorchExports:
    """The exports of ``--torch-abi SOURCE``: a torch wheel, an installed torch folder, or an image
    (read by ``image_reader``; without one, a UsageError)."""
    text = str(source)
    if looks_like_path(text):
        path = Path(text).expanduser()
        if path.is_dir():
            return torch_folder_exports(path)
        if not path.is_file():
            raise UsageError(
                f"--torch-abi {text}: no such file (give a torch wheel, a torch folder or an image)"
            )
        return torch_wheel_exports(path)
    if image_reader is None:
        raise UsageError(
            f"--torch-abi {text}: not a file; as an image it needs a Docker engine, which this command "
            "does not use (run `buildkit check --torch-abi IMAGE`)"
        )
    return image_reader(text)
