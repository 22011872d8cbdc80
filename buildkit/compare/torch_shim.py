"""The table of torch's stable C shim (``buildkit/gate/torch_shim.json``), made from real torch wheels.

Each function of the stable C headers a torch wheel ships (``torch/csrc/stable/c/shim.h``,
``torch/csrc/inductor/aoti_torch/c/*.h``, ``torch/csrc/inductor/aoti_torch/generated/c_shim_*.h``:
every declaration marked ``AOTI_TORCH_EXPORT``) gets the first torch release that has it:

* the release of the ``#if TORCH_FEATURE_VERSION >= TORCH_VERSION_X_Y_0`` block declaring it (torch
  versions its shim so from 2.10: a function without such a block was in a release before 2.10,
  recorded as :data:`UNVERSIONED`);
* at least the release of the oldest wheel given whose headers declare it (a function the oldest
  wheel lacks is not older than the next one).

Each wheel's exports (:func:`~buildkit.compare.torch_exports.load_torch_exports`) are counted against
its headers: the table records, per wheel, how many declared functions its libraries export (the
others are another backend's: ``aoti_torch_mps_*``, or CUDA's in a CPU wheel).

Regenerate: ``python -m buildkit.compare.torch_shim WHEEL... --write`` (the wheels of every torch the
table should know, e.g. ``pip download torch==2.14.1 --no-deps``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from buildkit.compare.torch_exports import load_torch_exports
from buildkit.gate.torchshim import TABLE_PATH, UNVERSIONED

_HEADERS = re.compile(
    r"^torch/include/torch/csrc/(stable/c/shim\.h|inductor/aoti_torch/c/[^/]+\.h"
    r"|inductor/aoti_torch/generated/c_shim_[^/]+\.h)$"
)
_VERSION_IF = re.compile(r"^#\s*if\s+TORCH_FEATURE_VERSION\s*>=\s*TORCH_VERSION_(\d+)_(\d+)_\d+\b")
_EXPORT = re.compile(r"AOTI_TORCH_EXPORT\b([^;{]*?)\b([A-Za-z_]\w*)\s*\(", re.S)


def declared(header: str) -> dict[str, str]:
    """Function name -> the release its version block names (``UNVERSIONED`` outside any), for one
    header's ``AOTI_TORCH_EXPORT`` declarations."""
    out: dict[str, str] = {}
    stack: list[str | None] = []
    pending = ""
    for line in header.splitlines():
        text = line.strip()
        if text.startswith("#"):
            directive = text[1:].lstrip()
            m = _VERSION_IF.match(text)
            if m:
                stack.append(f"{int(m[1])}.{int(m[2])}")
            elif directive.startswith("if"):  # #if, #ifdef, #ifndef
                stack.append(None)
            elif directive.startswith(("else", "elif")) and stack:
                stack[-1] = None  # below the version: not the versioned declarations
            elif directive.startswith("endif") and stack:
                stack.pop()
            continue
        if "AOTI_TORCH_EXPORT" in text or pending:
            pending += " " + text
            m = _EXPORT.search(pending)
            if m is not None:
                versions = [v for v in stack if v is not None]
                out[m[2]] = max(versions, key=_key) if versions else UNVERSIONED
                pending = ""
            elif ";" in text:
                pending = ""  # a declaration without parameters' parenthesis: not a function
    return out


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def wheel_headers(wheel: Path) -> dict[str, str]:
    """Every shim function the wheel's headers declare, with its version block's release."""
    found: dict[str, str] = {}
    with zipfile.ZipFile(wheel) as zf:
        for name in sorted(zf.namelist()):
            if _HEADERS.match(name):
                found.update(declared(zf.read(name).decode("utf-8", "replace")))
    return found


def build_table(wheels: Sequence[Path]) -> dict[str, Any]:
    """The table's document from ``wheels`` (any order: they are sorted by torch release)."""
    read = []
    for wheel in wheels:
        exports = load_torch_exports(str(wheel))
        release = ".".join((exports.version or "0.0").split("+")[0].split(".")[:2])
        read.append((_key(release), release, wheel, exports, wheel_headers(wheel)))
    read.sort(key=lambda r: r[0])
    functions: dict[str, str] = {}
    records = []
    for _order, release, wheel, exports, headers in read:
        for name, version in headers.items():
            if name not in functions:  # first declared here: not older than this wheel, unless versioned
                oldest = read[0][1] == release
                functions[name] = version if oldest or version != UNVERSIONED else release
        records.append(
            {
                "file": wheel.name,
                "sha256": exports.sha256,
                "version": exports.version,
                "declared": len(headers),
                "exported": sum(1 for n in headers if n in exports.exports),
            }
        )
    return {
        "format": 1,
        "source": {
            "wheels": records,
            "method": (
                "AOTI_TORCH_EXPORT declarations of torch/csrc/stable/c/shim.h, "
                "torch/csrc/inductor/aoti_torch/c/*.h and torch/csrc/inductor/aoti_torch/generated/"
                "c_shim_*.h in each wheel; the release is the TORCH_FEATURE_VERSION block declaring it "
                f"({UNVERSIONED}: none, in torch before 2.10), at least the oldest wheel declaring it"
            ),
            "regenerate": "python -m buildkit.compare.torch_shim WHEEL... --write",
        },
        "functions": dict(sorted(functions.items())),
    }


def render(table: dict[str, Any]) -> str:
    return json.dumps(table, indent=1, sort_keys=False) + "\n"


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m buildkit.compare.torch_shim", description=__doc__)
    parser.add_argument("wheels", nargs="+", type=Path, help="torch wheels (.whl)")
    parser.add_argument("--write", action="store_true", help=f"write {TABLE_PATH} (else print it)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    text = render(build_table(args.wheels))
    if args.write:
        TABLE_PATH.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
