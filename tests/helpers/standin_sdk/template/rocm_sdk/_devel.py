"""The devel package's root, expanded on first use from its ``_devel.tar`` (as TheRock's
``rocm-sdk-devel`` does: a wheel holds no symlinks, the tar does)."""

from __future__ import annotations

import os
import tarfile
import tempfile
from pathlib import Path

from . import _package_root

_MARKER = ".expanded"


def devel_root() -> Path:
    """``_rocm_sdk_devel/``, its ``_devel.tar`` unpacked into it once (atomically: a marker file
    written last; relative symlinks into ``_rocm_sdk_core`` and ``_rocm_sdk_libraries``)."""
    root = _package_root("devel")
    if (root / _MARKER).exists():
        return root
    site = root.parent.resolve()
    with tarfile.open(root / "_devel.tar") as tar:
        for member in tar.getmembers():
            target = (root / member.name).resolve()
            linked = (target.parent / member.linkname).resolve() if member.issym() else target
            inside = target.is_relative_to(root.resolve()) and linked.is_relative_to(site)
            if not inside or not (member.isfile() or member.isdir() or member.issym()):
                raise RuntimeError(f"_devel.tar: refusing member {member.name}")
        # checked above: files and folders inside the root, links into the runtime packages
        # beside it (which the "data" filter of Python >= 3.12 would refuse)
        if hasattr(tarfile, "fully_trusted_filter"):
            tar.extractall(root, filter="fully_trusted")
        else:
            tar.extractall(root)
    fd, tmp = tempfile.mkstemp(dir=root)
    os.close(fd)
    os.replace(tmp, root / _MARKER)
    return root
