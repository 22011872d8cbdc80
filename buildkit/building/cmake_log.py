"""What CMake looked for and did not find, read from a job's build log.

A CMake project's optional packages (``find_package(OpenMP)`` without REQUIRED, ``find_package(CURL)``)
that are not found leave a build without a feature and only a status line in the log: ``-- Could NOT
find OpenMP_CXX (missing: OpenMP_CXX_FLAGS OpenMP_CXX_LIB_NAMES)`` (FindPackageHandleStandardArgs, which
every find module of CMake uses). Under a compatibility sysroot a package the image has may be out of
reach (the sysroot holds glibc, libstdc++ and libgomp, not the image's other libraries), so a feature
the same project finds without the sysroot could disappear unseen: the build lists each one in its
summary and records them in the manifest (``cmake_not_found``).
"""

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
