"""What CMake looked for and did not find, read from a job's build log.

An optional package (``find_package(OpenMP)`` without REQUIRED) that is not found leaves a build
without a feature and only a ``-- Could NOT find ...`` status line (FindPackageHandleStandardArgs,
which every find module of CMake uses). Under a compatibility sysroot a package the image has may be
out of reach (the sysroot holds glibc, libstdc++ and libgomp only), so a feature could disappear
unseen: the build lists each one in its summary and the manifest (``cmake_not_found``)."""

from __future__ import annotations

import re

_NOT_FOUND = re.compile(
    r"^\s*(?:--\s+)?Could NOT find (\S+?)(?:\s+\(missing:\s*([^)]*)\))?\s*$", re.MULTILINE
)


def not_found(text: str) -> tuple[str, ...]:
    """Each package CMake reported as not found in ``text``, once, in order: ``OpenMP_CXX (missing:
    OpenMP_CXX_FLAGS OpenMP_CXX_LIB_NAMES)``; a package found on a later configure is left out."""
    missing: dict[str, str] = {}
    for m in _NOT_FOUND.finditer(text):
        name, what = m.group(1), " ".join((m.group(2) or "").split())
        missing[name] = f"{name} (missing: {what})" if what else name
    found = set(re.findall(r"^\s*(?:--\s+)?Found (\S+?):", text, re.MULTILINE))
    return tuple(line for name, line in missing.items() if name not in found)
