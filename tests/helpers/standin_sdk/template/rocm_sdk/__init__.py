"""rocm_sdk of the STAND-IN ROCm SDK (tests/helpers/standin_sdk): the API of TheRock's ``rocm``
selector package (``find_libraries``, ``preload_libraries``, ``initialize_process``), over wheels
made from Debian's ROCm 7.2.4 binaries. Not AMD's code: written for rocm-buildkit's tests after
TheRock's docs/packaging/python_packaging.md."""

from __future__ import annotations

import ctypes
import importlib
import os
import re
import warnings
from pathlib import Path

from ._dist_info import ALL_LIBRARIES, ALL_PACKAGES, __version__

__all__ = ["__version__", "find_libraries", "initialize_process", "preload_libraries"]

_ALL_CDLLS: dict[str, ctypes.CDLL] = {}


def _package_root(logical_name: str) -> Path:
    package = ALL_PACKAGES[logical_name]
    try:
        module = importlib.import_module(package.py_package)
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            f"Missing required rocm libraries: {package.dist_name} is not installed. "
            f"Install it with `pip install rocm[{logical_name}]=={__version__}`"
        ) from None
    assert module.__file__ is not None
    return Path(module.__file__).parent


def find_libraries(*shortnames: str) -> list[Path]:
    """Absolute paths of the named libraries ("amdhip64", "hipfft"), in the order given.

    ModuleNotFoundError for an unknown name or a package that is not installed, FileNotFoundError
    when the package lacks the file."""
    paths = []
    for shortname in shortnames:
        try:
            entry = ALL_LIBRARIES[shortname]
        except KeyError:
            raise ModuleNotFoundError(f"Unknown rocm library '{shortname}'") from None
        folder = _package_root(entry.package) / entry.posix_relpath
        matches = sorted(folder.glob(entry.so_pattern))
        if not matches:
            raise FileNotFoundError(
                f"Could not find rocm library '{shortname}' at path '{folder}', "
                f"no match for pattern '{entry.so_pattern}'"
            )
        paths.append(matches[0])
    return paths


def _with_deps(shortnames: list[str]) -> list[str]:
    ordered: list[str] = []
    for name in shortnames:
        entry = ALL_LIBRARIES.get(name)
        for dep in _with_deps(list(entry.deps)) if entry else []:
            if dep not in ordered:
                ordered.append(dep)
        if name not in ordered:
            ordered.append(name)
    return ordered


def preload_libraries(*shortnames: str, rtld_global: bool = True) -> None:
    """dlopen the named libraries (their SDK dependencies first), once each."""
    names = _with_deps(list(shortnames))
    mode = ctypes.RTLD_GLOBAL if rtld_global else ctypes.RTLD_LOCAL
    for name, path in zip(names, find_libraries(*names), strict=True):
        if name not in _ALL_CDLLS:
            _ALL_CDLLS[name] = ctypes.CDLL(str(path), mode=mode)


def initialize_process(
    *,
    preload_shortnames: list[str] | None = None,
    library_shortnames: list[str] | None = None,
    rtld_global: bool = True,
    env_override: bool = True,
    check_version: str | re.Pattern[str] | None = None,
    fail_on_version_mismatch: bool = False,
) -> None:
    """What a package built against the SDK calls at import: preload the libraries its extensions
    need (``preload_shortnames``; ``library_shortnames`` is the older name), those named in
    ``ROCM_SDK_PRELOAD_LIBRARIES``, and check the installed version (``*`` matches anything)."""
    names = list(preload_shortnames or []) + list(library_shortnames or [])
    if names:
        preload_libraries(*names, rtld_global=rtld_global)
    extra = os.getenv("ROCM_SDK_PRELOAD_LIBRARIES") if env_override else None
    if extra:
        wanted = [s.strip() for s in re.split("[,;]", extra) if s.strip()]
        try:
            preload_libraries(*wanted, rtld_global=rtld_global)
        except Exception as exc:
            raise RuntimeError(
                f"Could not preload libraries from ROCM_SDK_PRELOAD_LIBRARIES='{extra}'"
            ) from exc
    if check_version:
        if isinstance(check_version, re.Pattern):
            pattern = check_version
        else:
            pattern = re.compile("^" + re.escape(check_version).replace("\\*", ".*") + "$")
        if not pattern.match(__version__):
            message = (
                f"The program was compiled against a ROCm version matching '{pattern.pattern}' but the "
                f"installed ROCm version in this Python environment is {__version__}."
            )
            if fail_on_version_mismatch:
                raise RuntimeError(message)
            warnings.warn(message, stacklevel=2)
