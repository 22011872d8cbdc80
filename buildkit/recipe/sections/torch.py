"""The recipe's ``torch:``: the torch releases a torch extension is built against, one job each.

Each pin names a release (``"2.10"``: the series, or an exact ``"2.10.0"``), where it comes from
(``index_url``, or ``pip_config: true``: pip's own configuration) and optionally the Pythons it
serves (``python``: a PEP 440 specifier). A series may be pinned once: job ids name it.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet

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


def parse_torch(ctx: Context) -> tuple[TorchPin, ...]:
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


SECTION = Section("torch", ("torch",), parse_torch, "torch")
