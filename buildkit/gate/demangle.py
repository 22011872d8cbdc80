"""C++ symbol names as a person reads them: ``_ZN3c106DeviceC1ERKSs`` -> ``c10::Device::Device(std::string
const&)``.

The demangler is LLVM's (``pydemumble``, a package dependency: a compiled wheel, no tool on PATH,
every Itanium name of torch 2.13's 74,000 exports demangled). Where that package cannot be imported
(a platform without its wheel), libstdc++'s own ``abi::__cxa_demangle`` (what ``c++filt`` runs) is
called through ctypes; where neither is there, names stay mangled. A name that is not mangled (a C
symbol) or that a demangler refuses is returned as it is.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable


def _from_pydemumble() -> Callable[[str], str] | None:
    try:
        import pydemumble
    except ImportError:
        return None
    demangle: Callable[[str], str] = pydemumble.demangle
    return demangle


def cxa_demangle() -> Callable[[str], str] | None:
    """libstdc++'s ``__cxa_demangle`` through ctypes (None without libstdc++.so.6)."""
    try:
        lib = ctypes.CDLL("libstdc++.so.6")
        libc = ctypes.CDLL(None)
        fn = lib.__cxa_demangle
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    free = libc.free
    free.argtypes = [ctypes.c_void_p]

    def demangle(name: str) -> str:
        status = ctypes.c_int(0)
        out = fn(name.encode("latin-1"), None, None, ctypes.byref(status))
        if not out or status.value != 0:
            return name
        try:
            text = ctypes.string_at(out).decode("latin-1")
        finally:
            free(out)
        return text

    return demangle


@functools.cache
def _demangler() -> Callable[[str], str] | None:
    return _from_pydemumble() or cxa_demangle()


def demangle(name: str) -> str:
    """``name`` demangled, or as it is (not an Itanium C++ name, or no demangler)."""
    if not name.startswith("_Z"):
        return name
    fn = _demangler()
    if fn is None:
        return name
    try:
        text = fn(name)
    except (ValueError, RuntimeError, UnicodeError):
        return name
    return text or name
