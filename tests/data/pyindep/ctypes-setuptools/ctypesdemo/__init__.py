"""buildkit-ctypesdemo: a C library loaded with ctypes (one py3-none wheel for every CPython)."""

import ctypes
import os

from typing_extensions import Final

_LIB: Final = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libctypesdemo.so"))
_LIB.ctypesdemo_add.argtypes = (ctypes.c_int, ctypes.c_int)
_LIB.ctypesdemo_add.restype = ctypes.c_int
_LIB.ctypesdemo_name.restype = ctypes.c_char_p


def add(a: int, b: int) -> int:
    return int(_LIB.ctypesdemo_add(a, b))


def name() -> str:
    return bytes(_LIB.ctypesdemo_name()).decode()


def gpus() -> int:
    """The AMD GPUs the HIP runtime sees (0 on a machine without one)."""
    return int(_LIB.ctypesdemo_gpus())
