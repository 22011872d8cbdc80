"""The recipe's ``rocm_pip:``: ROCm from pip (TheRock's SDK wheels) instead of the system's
(docs/REFERENCE.md, "ROCm from pip"). The release is the job's ``rocm:`` entry, said once
(:meth:`RocmPip.requirement`, :meth:`RocmPip.build_requirement`); ``devel`` and the device extras
are the build's, so naming them in ``extras`` is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from buildkit.recipe.section import Context, Section

#: the selector distribution (TheRock's ``rocm``; ``import rocm_sdk``)
SELECTOR = "rocm"
_DEFAULT_EXTRAS = ("libraries",)
#: the extra that installs headers and CMake files (``rocm-sdk-devel``): a build's, not a run's
_DEVEL = "devel"
_DEVICE_EXTRA = "device-"


@dataclass(frozen=True)
class RocmPip:
    """``rocm_pip:``: the run-time extras of the ``rocm`` selector the wheel declares."""

    extras: tuple[str, ...] = _DEFAULT_EXTRAS

    def requirement(self, rocm: str) -> str:
        """The ``Requires-Dist`` of a job of ROCm ``rocm`` ("7.2"): ``rocm[libraries]==7.2.*``."""
        return f"{SELECTOR}[{','.join(sorted(self.extras))}]=={_series(rocm)}"

    def build_requirement(self, rocm: str, processors: Iterable[str]) -> str:
        """What the build installs: the run-time extras, ``devel`` and ``device-<gfx>`` per processor."""
        extras = {*self.extras, _DEVEL, *(f"{_DEVICE_EXTRA}{p}" for p in processors)}
        return f"{SELECTOR}[{','.join(sorted(extras))}]=={_series(rocm)}"


def _series(rocm: str) -> str:
    """``7.2`` -> ``7.2.*``; an exact ``7.2.4`` stays exact."""
    return rocm if rocm.count(".") >= 2 else f"{rocm}.*"


def _parse_rocm_pip(ctx: Context) -> RocmPip | None:
    data = ctx.data.get("rocm_pip")
    if data is None:
        return None
    if ctx.data.get("network") is True:
        raise ctx.err(
            "rocm_pip needs a hermetic build: the SDK's wheels are resolved and locked on the host, "
            "and the gate reads them from the lock",
            ("network",),
            hint="remove network: true (the build requirements are then downloaded on the host)",
        )
    extras = tuple(data.get("extras", _DEFAULT_EXTRAS))
    for i, extra in enumerate(extras):
        if extra == _DEVEL or extra.startswith(_DEVICE_EXTRA):
            raise ctx.err(
                f"rocm_pip.extras[{i}]: {extra!r} is added for the build only; the wheel's Requires-Dist "
                "names its run-time extras",
                ("rocm_pip", "extras", i),
                hint="remove it: the build installs devel and one device-<gfx> extra per target of the job",
            )
    return RocmPip(extras)


SECTION = Section("rocm_pip", ("rocm_pip",), _parse_rocm_pip, "rocm_pip")
