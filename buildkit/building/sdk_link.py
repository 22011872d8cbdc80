"""ROCm from pip, the wheel's side: after ``auditwheel repair``, in the build container, each ELF that
needs a library of the SDK gets ``$ORIGIN``-relative RPATH entries to the SDK's folders (depth
computed per ELF), METADATA the ``Requires-Dist`` on the pinned release, and RECORD is written again.

This file is also a script the build stages into the source (``.buildkit/sdk_link.py``) and appends
to cibuildwheel's repair command (:func:`buildkit.building.cibw.repair_command`), so it uses the
standard library alone and the container's ``patchelf`` (the builder contract has it). The gate then
judges the result (``rocm-pip-*``): nothing here decides whether the wheel is sound."""

from __future__ import annotations

import argparse
import base64
import fnmatch
import hashlib
import os
import posixpath
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

#: the SDK's folders an ELF may need, by the selector's extra that installs them
CORE_LIB = "_rocm_sdk_core/lib"
LIBRARIES_LIB = "_rocm_sdk_libraries/lib"
_DATA_LIB = re.compile(r"^[^/]+\.data/(purelib|platlib)/")
_ELF_MAGIC = b"\x7fELF"

#: ``run(args) -> stdout``: patchelf, replaceable in tests that have no patchelf
Runner = Callable[[Sequence[str]], str]


def _install_dir(member: str) -> str | None:
    """The folder ``member`` is installed in, relative to site-packages (``""`` for the root); None
    for a member not installed there (``.data/scripts``, ``.data/headers``...)."""
    match = _DATA_LIB.match(member)
    if match is not None:
        member = member[match.end() :]
    elif re.match(r"^[^/]+\.data/", member):
        return None
    return posixpath.dirname(member)


def origin_entry(member: str, folder: str) -> str | None:
    """The ``$ORIGIN``-relative entry from ``member``'s folder to ``folder`` (both under
    site-packages): ``refkernels/_C.so`` and ``_rocm_sdk_core/lib`` give ``$ORIGIN/../_rocm_sdk_core/lib``."""
    where = _install_dir(member)
    if where is None:
        return None
    depth = len([p for p in where.split("/") if p]) if where else 0
    return "$ORIGIN/" + "../" * depth + folder


def add_requirement(metadata: str, requirement: str) -> str:
    """METADATA with ``Requires-Dist: requirement`` after its last ``Requires-Dist`` (else at the end
    of the headers); unchanged when it already has that line."""
    line = f"Requires-Dist: {requirement}"
    head, sep, body = metadata.partition("\n\n")
    lines = (head if sep else head.rstrip("\n")).split("\n")
    if line in lines:
        return metadata
    requires = [i for i, text in enumerate(lines) if text.startswith("Requires-Dist:")]
    last = requires[-1] if requires else len(lines) - 1
    lines.insert(last + 1, line)
    return "\n".join(lines) + (sep + body if sep else "\n")


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _patchelf(args: Sequence[str]) -> str:
    return subprocess.run(["patchelf", *args], check=True, capture_output=True, text=True).stdout


def _link_elf(
    path: Path, member: str, folders: Sequence[str], needs: Sequence[str], run: Runner
) -> list[str]:
    """The entries to ``folders`` added to the ELF at ``path`` (``member``) when it needs one of ``needs``."""
    needed = run(["--print-needed", str(path)]).split()
    if not any(fnmatch.fnmatch(name, glob) for name in needed for glob in needs):
        return []
    current = [e for e in run(["--print-rpath", str(path)]).strip().split(":") if e]
    wanted = [e for e in (origin_entry(member, f) for f in folders) if e is not None]
    added = [e for e in wanted if e not in current]
    if added:
        run(["--set-rpath", ":".join([*current, *added]), str(path)])
    return added


def link_wheel(
    wheel: Path, requirement: str, folders: Sequence[str], needs: Sequence[str], run: Runner = _patchelf
) -> dict[str, list[str]]:
    """Patch ``wheel`` in place (written to a temporary file, then renamed): the RPATHs, the
    ``Requires-Dist`` and RECORD. Member order, dates and modes are kept. Returns member -> entries added."""
    added: dict[str, list[str]] = {}
    with zipfile.ZipFile(wheel) as zf, tempfile.TemporaryDirectory() as tmp:
        infos = zf.infolist()
        metadata = next(i.filename for i in infos if i.filename.endswith(".dist-info/METADATA"))
        dist_info = metadata.split("/")[0]
        contents: dict[str, bytes] = {}
        for info in infos:
            data = zf.read(info)
            if data[:4] == _ELF_MAGIC and not info.is_dir():
                path = Path(tmp) / "elf"
                path.write_bytes(data)
                entries = _link_elf(path, info.filename, folders, needs, run)
                if entries:
                    added[info.filename] = entries
                    data = path.read_bytes()
            elif info.filename == f"{dist_info}/METADATA":
                data = add_requirement(data.decode("utf-8"), requirement).encode("utf-8")
            contents[info.filename] = data
        record_name = f"{dist_info}/RECORD"
        files = [i.filename for i in infos if not i.is_dir() and i.filename != record_name]
        lines = [record_line(name, contents[name]) for name in files]
        contents[record_name] = ("\n".join([*lines, f"{record_name},,"]) + "\n").encode()
        out = wheel.with_name(wheel.name + ".tmp")
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as new:
            for info in infos:
                new.writestr(info, contents[info.filename])
    os.replace(out, wheel)
    return added


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("folder", type=Path, help="the folder of repaired wheels")
    parser.add_argument("--requires", required=True, help="the Requires-Dist: rocm[libraries]==7.2.*")
    parser.add_argument("--rpath", action="append", default=[], help="an SDK folder under site-packages")
    parser.add_argument("--needs", action="append", default=[], help="a glob of the SDK's SONAMEs")
    args = parser.parse_args(argv)
    wheels = sorted(args.folder.glob("*.whl"))
    for wheel in wheels:
        added = link_wheel(wheel, args.requires, args.rpath, args.needs)
        print(f"rocm-buildkit: {wheel.name}: Requires-Dist: {args.requires}", file=sys.stderr)
        for member, entries in sorted(added.items()):
            print(f"rocm-buildkit:   {member}: RPATH + {':'.join(entries)}", file=sys.stderr)
        if not added:
            print("rocm-buildkit:   no ELF needs a library of the SDK", file=sys.stderr)
    return 0 if wheels else 1


if __name__ == "__main__":
    sys.exit(main())
