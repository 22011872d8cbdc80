#!/usr/bin/env python3
"""Fetch the pinned corpus of real PyPI platform wheels listed in ``wheels.toml``.

Usage::

    python tests/corpus/fetch.py [--ci] [--only NAME ...] [--cache DIR] [--jobs N] [--list]

Each wheel is pinned by its exact filename, sha256 and size.  It is fetched with
``pip download`` (a requirements file ``name==version --hash=sha256:...`` and the
``--platform/--python-version/--implementation/--abi`` options derived from the
filename's tags, so pip selects exactly that file); if pip cannot be made to
select it, the file's URL from PyPI's PEP 691 JSON simple API is downloaded
with urllib instead.  Either way the sha256 is checked before the file is moved
(atomically, ``os.replace``) into the cache under its exact filename, so the
cache never holds a half-written file under a final name.

The cache is resumable: a file already there with the right size and sha256 is
not fetched again.  Its verification is remembered in a ``<file>.sha256``
sidecar (sha256, size and mtime), so checking it again is cheap; a mismatch
deletes the file and fetches it again.

Importable API (used by the benchmark and the corpus CI test)::

    from tests.corpus.fetch import load_corpus, fetch_all, CorpusWheel
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CORPUS_TOML = Path(__file__).resolve().with_name("wheels.toml")
SIMPLE_API = "https://pypi.org/simple/{name}/"
PEP691_ACCEPT = "application/vnd.pypi.simple.v1+json"
_CHUNK = 1 << 20


def default_cache() -> Path:
    """The cache folder: ``$BUILDKIT_CORPUS_CACHE`` or ``~/.cache/rocm-buildkit/corpus``."""
    env = os.environ.get("BUILDKIT_CORPUS_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "rocm-buildkit" / "corpus"


DEFAULT_CACHE: Path = default_cache()


class FetchError(Exception):
    """A wheel could not be fetched or verified (network failure, hash mismatch...)."""


@dataclass(frozen=True)
class CorpusWheel:
    name: str
    version: str
    filename: str
    sha256: str
    size: int
    covers: tuple[str, ...] = ()
    ci: bool = False
    note: str = ""

    @classmethod
    def from_table(cls, table: dict[str, Any]) -> CorpusWheel:
        try:
            return cls(
                name=str(table["name"]),
                version=str(table["version"]),
                filename=str(table["filename"]),
                sha256=str(table["sha256"]).lower(),
                size=int(table["size"]),
                covers=tuple(str(c) for c in table.get("covers", ())),
                ci=bool(table.get("ci", False)),
                note=str(table.get("note", "")),
            )
        except KeyError as exc:
            raise ValueError(f"corpus entry {table!r} lacks the key {exc}") from None


def load_corpus(ci_only: bool = False, path: Path | None = None) -> list[CorpusWheel]:
    """The corpus wheels in ``wheels.toml`` (only the CI subset if *ci_only*)."""
    with open(path or CORPUS_TOML, "rb") as fh:
        data = tomllib.load(fh)
    wheels = [CorpusWheel.from_table(t) for t in data.get("wheel", [])]
    return [w for w in wheels if w.ci] if ci_only else wheels


# --------------------------------------------------------------------------- helpers

_print_lock = threading.Lock()


def _log(msg: str) -> None:
    with _print_lock:
        print(msg, file=sys.stderr, flush=True)


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _write_sidecar(path: Path, digest: str) -> None:
    st = path.stat()
    side = _sidecar(path)
    tmp = side.with_name(side.name + f".tmp{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(json.dumps({"sha256": digest, "size": st.st_size, "mtime_ns": st.st_mtime_ns}) + "\n")
    os.replace(tmp, side)


def _sidecar_matches(path: Path, wheel: CorpusWheel) -> bool:
    try:
        info = json.loads(_sidecar(path).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return False
    return (
        isinstance(info, dict)
        and info.get("sha256") == wheel.sha256
        and info.get("size") == st.st_size == wheel.size
        and info.get("mtime_ns") == st.st_mtime_ns
    )


def _remove(path: Path) -> None:
    for p in (path, _sidecar(path)):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def cached_path(wheel: CorpusWheel, cache: Path | None = None) -> Path | None:
    """The verified cached file of *wheel*, or None (a bad cached copy is deleted)."""
    path = Path(cache or DEFAULT_CACHE) / wheel.filename
    if not path.is_file():
        _remove(path)
        return None
    if _sidecar_matches(path, wheel):
        return path
    if path.stat().st_size == wheel.size and _sha256_of(path) == wheel.sha256:
        _write_sidecar(path, wheel.sha256)
        return path
    _log(f"corpus: {wheel.filename}: cached copy has the wrong size or sha256, fetching it again")
    _remove(path)
    return None


def pip_target_options(filename: str) -> list[str]:
    """``pip download`` options under which pip accepts exactly the tags of *filename*."""
    from packaging.utils import parse_wheel_filename

    _, _, _, tags = parse_wheel_filename(filename)
    platforms = sorted({t.platform for t in tags})
    interpreters = sorted({t.interpreter for t in tags})
    abis = sorted({t.abi for t in tags})
    # Prefer a CPython interpreter tag (cp312), else a generic one (py3).
    cp = [i for i in interpreters if re.fullmatch(r"cp\d+", i)]
    interp = cp[0] if cp else next((i for i in interpreters if i.startswith("py3")), interpreters[0])
    m = re.fullmatch(r"[a-z]+(\d)(\d*)", interp)
    if not m:
        raise FetchError(f"{filename}: cannot derive a python version from the tag {interp!r}")
    major, minor = m.group(1), m.group(2)
    if not minor:  # py3-none-*: any CPython 3 accepts it
        minor = "12"
    opts = ["--python-version", f"{major}.{minor}", "--implementation", "cp" if cp else "py"]
    for abi in abis:
        opts += ["--abi", abi]
    for plat in platforms:
        opts += ["--platform", plat]
    return opts


def _pip_download(wheel: CorpusWheel, workdir: Path) -> Path:
    req = workdir / "requirements.txt"
    req.write_text(f"{wheel.name}=={wheel.version} --hash=sha256:{wheel.sha256}\n")
    out = workdir / "out"
    out.mkdir()
    cmd = [
        sys.executable, "-m", "pip", "download",
        "--no-deps", "--only-binary=:all:", "--ignore-requires-python",
        "--no-cache-dir", "--disable-pip-version-check", "--progress-bar", "off", "-q",
        "--retries", "2", "--timeout", "60",
        *pip_target_options(wheel.filename),
        "-d", str(out), "-r", str(req),
    ]  # fmt: skip
    env = dict(os.environ, PIP_NO_INPUT="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    got = out / wheel.filename
    if proc.returncode != 0 or not got.is_file():
        if "do not match the hashes" in proc.stderr.lower():
            raise FetchError("pip download failed: the file PyPI serves does not match the pinned sha256")
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        errs = [ln for ln in lines if ln.startswith("ERROR:")]
        last = (errs or lines or ["pip did not select the pinned file"])[-1]
        raise FetchError(f"pip download failed: {last}")
    return got


def _pep691_url(wheel: CorpusWheel) -> str:
    name = re.sub(r"[-_.]+", "-", wheel.name).lower()
    req = urllib.request.Request(SIMPLE_API.format(name=name), headers={"Accept": PEP691_ACCEPT})
    with urllib.request.urlopen(req, timeout=60) as resp:
        data = json.load(resp)
    for f in data.get("files", []):
        if f.get("filename") == wheel.filename:
            return str(f["url"])
    raise FetchError(f"{wheel.filename} is not in PyPI's file list of {wheel.name}")


def _urllib_download(wheel: CorpusWheel, workdir: Path) -> Path:
    url = _pep691_url(wheel)
    dest = workdir / wheel.filename
    with urllib.request.urlopen(url, timeout=120) as resp, open(dest, "wb") as fh:
        shutil.copyfileobj(resp, fh, _CHUNK)
    return dest


def fetch(wheel: CorpusWheel, cache: Path | None = None) -> Path:
    """The path of *wheel* in *cache*, downloading and verifying it if needed."""
    cache = Path(cache or DEFAULT_CACHE)
    cache.mkdir(parents=True, exist_ok=True)
    hit = cached_path(wheel, cache)
    if hit is not None:
        return hit
    final = cache / wheel.filename
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=cache) as tmp:
        workdir = Path(tmp)
        errors: list[str] = []
        got: Path | None = None
        for how, method in (("pip", _pip_download), ("urllib", _urllib_download)):
            sub = workdir / how
            sub.mkdir()
            try:
                got = method(wheel, sub)
            except FetchError as exc:
                errors.append(f"{how}: {exc}")
                if how == "pip":
                    _log(f"corpus: {wheel.filename}: {exc}; downloading its URL from PyPI's JSON instead")
                continue
            except (urllib.error.URLError, OSError, ValueError) as exc:
                reason = getattr(exc, "reason", None) or exc
                errors.append(f"{how}: {reason}")
                continue
            size = got.stat().st_size
            digest = _sha256_of(got)
            if size != wheel.size or digest != wheel.sha256:
                errors.append(
                    f"{how}: hash mismatch (got {size} bytes, sha256 {digest};"
                    f" pinned {wheel.size} bytes, sha256 {wheel.sha256})"
                )
                got = None
                continue
            break
        if got is None:
            raise FetchError(f"{wheel.filename}: " + "; ".join(errors))
        os.replace(got, final)
    _write_sidecar(final, wheel.sha256)
    return final


def fetch_all(wheels: Sequence[CorpusWheel], cache: Path | None = None, jobs: int = 2) -> list[Path]:
    """Fetch *wheels* (*jobs* at a time); the paths, in the order of *wheels*.

    Raises FetchError naming every wheel that failed, after trying them all.
    """
    cache = Path(cache or DEFAULT_CACHE)
    total = len(wheels)
    results: dict[int, Path] = {}
    failures: list[str] = []
    done = 0

    def one(i: int, w: CorpusWheel) -> tuple[int, Path, bool]:
        hit = cached_path(w, cache)
        if hit is not None:
            return i, hit, True
        return i, fetch(w, cache), False

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futs = {pool.submit(one, i, w): w for i, w in enumerate(wheels)}
        for fut in concurrent.futures.as_completed(futs):
            w = futs[fut]
            done += 1
            try:
                i, path, was_cached = fut.result()
            except FetchError as exc:
                failures.append(str(exc))
                _log(f"[{done}/{total}] FAILED {exc}")
                continue
            results[i] = path
            _log(f"[{done}/{total}] {'cached ' if was_cached else 'fetched'} {w.filename} ({_human(w.size)})")
    if failures:
        raise FetchError(f"{len(failures)} of {total} wheels could not be fetched: " + " | ".join(failures))
    return [results[i] for i in range(total)]


def select(wheels: Iterable[CorpusWheel], only: Sequence[str] | None) -> list[CorpusWheel]:
    """The wheels whose project name (normalized) or filename is in *only*."""
    wheels = list(wheels)
    if not only:
        return wheels

    def norm(s: str) -> str:
        return re.sub(r"[-_.]+", "-", s).lower()

    want = {norm(o) for o in only}
    picked = [w for w in wheels if norm(w.name) in want or w.filename in only]
    known = {norm(w.name) for w in wheels} | {norm(w.filename) for w in wheels}
    missing = sorted(o for o in only if norm(o) not in known)
    if missing:
        raise FetchError(f"not in the corpus: {', '.join(missing)}")
    return picked


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Fetch the pinned corpus of real PyPI platform wheels.")
    ap.add_argument("--ci", action="store_true", help="only the CI subset (ci = true)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these projects (or exact filenames)")
    ap.add_argument(
        "--cache",
        type=Path,
        default=None,
        help=f"cache folder (default: {DEFAULT_CACHE}; env BUILDKIT_CORPUS_CACHE)",
    )
    ap.add_argument("--jobs", type=int, default=2, help="parallel downloads (default: 2)")
    ap.add_argument("--list", action="store_true", help="print the corpus instead of fetching it")
    ap.add_argument("--corpus", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        wheels = select(load_corpus(ci_only=args.ci, path=args.corpus), args.only)
    except (OSError, ValueError, tomllib.TOMLDecodeError, FetchError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.list:
        for w in wheels:
            print(f"{w.name}\t{w.filename}\t{w.size}\t{','.join(w.covers)}\t{'ci' if w.ci else '-'}")
        print(f"{len(wheels)} wheels, {_human(sum(w.size for w in wheels))}", file=sys.stderr)
        return 0
    cache = args.cache or default_cache()
    _log(f"corpus: {len(wheels)} wheels, {_human(sum(w.size for w in wheels))}, into {cache}")
    try:
        fetch_all(wheels, cache, jobs=args.jobs)
    except FetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 1
    _log("corpus: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
