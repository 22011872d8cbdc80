"""The recipe's ``torch:``: the torch releases a torch extension is built against, one job each, or
the libtorch stable ABI (:class:`TorchStable`: no torch axis, one job serving every torch from one
release on); the two forms: docs/REFERENCE.md, "Key: rocm, torch, matrix". A series may be pinned
once: job ids name it.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from buildkit import version as ver
from buildkit.recipe.section import Context, Section


@dataclass(frozen=True)
class TorchPin:
    version: str  # as written: "2.10" or "2.10.0"
    index_url: str | None
    python: SpecifierSet | None
    #: ``pip_config: true``: no torch index of its own, pip's configuration (index-url,
    #: extra-index-url, find-links) serves this torch (a CPU torch, a local wheelhouse)
    pip_config: bool = False

    @property
    def series(self) -> str:
        return ver.series(self.version)

    @property
    def requirement(self) -> str:
        """The requirement the wheel carries: ``torch==2.10.*`` (or ``==2.10.0`` when exact)."""
        if self.version.count(".") >= 2:
            return f"torch=={self.version}"
        return f"torch=={self.version}.*"


#: the lowest torch a stable-ABI extension may declare: torch versions its stable C shim from 2.10
#: on (the TORCH_VERSION_2_10_0 macros of torch/csrc/stable/version.h begin there)
STABLE_FLOOR = "2.10"


@dataclass(frozen=True)
class TorchStable:
    """``torch: {abi: stable, from: "2.10"}``: an extension on the libtorch stable ABI."""

    lowest: str  # "2.10": the recipe's ``from``
    below: str | None = None  # an upper bound, only when the recipe asks
    index_url: str | None = None
    pip_config: bool = False

    @property
    def requirement(self) -> str:
        """What the wheel requires: ``torch>=2.10`` (``,<3.0`` with ``below``)."""
        return f"torch>={self.lowest}" + (f",<{self.below}" if self.below else "")

    @property
    def build_requirement(self) -> str:
        """What the build installs: the lowest torch served, ``torch==2.10.*``."""
        return f"torch=={self.lowest}.*"

    @property
    def target_version(self) -> str:
        """``TORCH_TARGET_VERSION`` of ``lowest``, as torch's docs spell it: ``0x020a000000000000``."""
        major, minor = (int(p) for p in self.lowest.split("."))
        return f"0x{major:02x}{minor:02x}000000000000"

    @property
    def flags(self) -> str:
        """The preprocessor flags of a stable-only build (torch/csrc/stable/version.h, the docs'
        notes/libtorch_stable_abi): any other torch header then stops the compile with its #error, and
        a shim function newer than ``lowest`` is not declared."""
        return f"-DTORCH_STABLE_ONLY -DTORCH_TARGET_VERSION={self.target_version}"


def _parse_torch(ctx: Context) -> tuple[TorchPin, ...] | TorchStable:
    if isinstance(ctx.data.get("torch"), dict):
        return _parse_stable(ctx, ctx.data["torch"])
    pins = []
    seen: dict[str, int] = {}
    for i, t in enumerate(ctx.data.get("torch", ())):
        spec: SpecifierSet | None = None
        if "python" in t:
            try:
                spec = SpecifierSet(t["python"])
            except InvalidSpecifier:
                raise ctx.err(
                    f"torch[{i}].python: {t['python']!r} is not a PEP 440 specifier",
                    ("torch", i, "python"),
                    hint='write e.g. ">=3.10,<3.15"',
                ) from None
        pip_config = bool(t.get("pip_config", False))
        if pip_config and "index_url" in t:
            raise ctx.err(
                f"torch[{i}] sets both index_url and pip_config: true",
                ("torch", i, "pip_config"),
                hint="pip_config: true resolves torch with your pip configuration alone; "
                "remove it to use index_url, or remove index_url",
            )
        pin = TorchPin(version=t["version"], index_url=t.get("index_url"), python=spec, pip_config=pip_config)
        if pin.series in seen:
            raise ctx.err(
                f"torch {pin.series} is pinned twice (torch[{seen[pin.series]}] and torch[{i}])",
                ("torch", i, "version"),
                hint="job ids name the torch series, so each series may appear once",
            )
        seen[pin.series] = i
        pins.append(pin)
    return tuple(pins)


def _parse_stable(ctx: Context, t: dict[str, object]) -> TorchStable:
    lowest = str(t["from"])
    if Version(lowest) < Version(STABLE_FLOOR):
        raise ctx.err(
            f"torch.from: {lowest!r} is older than {STABLE_FLOOR}, the first torch that versions its stable "
            "C shim (no build could prove which torch a shim function needs)",
            ("torch", "from"),
            hint=f'write from: "{STABLE_FLOOR}" or later',
        )
    below = t.get("below")
    if below is not None and Version(str(below)) <= Version(lowest):
        raise ctx.err(
            f"torch.below: {below!r} is not above from: {lowest!r}",
            ("torch", "below"),
            hint="below is an exclusive upper bound (torch<below); leave it out for none",
        )
    pip_config = bool(t.get("pip_config", False))
    if pip_config and "index_url" in t:
        raise ctx.err(
            "torch sets both index_url and pip_config: true",
            ("torch", "pip_config"),
            hint="pip_config: true resolves torch with your pip configuration alone; remove one of them",
        )
    index = t.get("index_url")
    return TorchStable(
        lowest, None if below is None else str(below), None if index is None else str(index), pip_config
    )


def pins(result: tuple[TorchPin, ...] | TorchStable | None) -> tuple[TorchPin, ...]:
    """The torch axis' pins of the section's result (none for the stable ABI), for later sections."""
    return () if result is None or isinstance(result, TorchStable) else result


def _fields(result: tuple[TorchPin, ...] | TorchStable) -> dict[str, object]:
    if isinstance(result, TorchStable):
        return {"torch": (), "torch_stable": result}
    return {"torch": result}


SECTION = Section("torch", ("torch",), _parse_torch, _fields)
