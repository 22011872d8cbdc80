"""Exceptions of refkernels (importable without the compiled extension)."""

from __future__ import annotations


class HipError(RuntimeError):
    """The HIP runtime returned an error; ``code`` is the hipError_t value."""

    def __init__(self, code: int, name: str, message: str, what: str) -> None:
        super().__init__(f"{what}: {name} ({code}): {message}")
        self.code = code
        self.name = name
        self.what = what


class NoDeviceError(HipError):
    """No AMD GPU is visible (hipErrorNoDevice): expected on build and CI machines."""


class ExtensionUnavailable(ImportError):
    """The compiled extension ``refkernels._C`` cannot be loaded (e.g. no ROCm runtime installed)."""


class TunedTableError(ValueError):
    """A tuned dispatch CSV is malformed: missing column, bad value, unknown kernel or duplicate key."""


class BundleFormatError(ValueError):
    """A binary's ELF header or clang offload bundle is malformed."""
