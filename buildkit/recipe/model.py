"""The typed :class:`Recipe`: one field (or a few) per section of :mod:`buildkit.recipe.sections`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from buildkit.errors import RecipeError
from buildkit.recipe.sections.archs import ArchSpec
from buildkit.recipe.sections.gate import GateRules
from buildkit.recipe.sections.hooks import Hooks
from buildkit.recipe.sections.host_isa import HostIsa
from buildkit.recipe.sections.image import ImageSpec
from buildkit.recipe.sections.manylinux import Manylinux
from buildkit.recipe.sections.matrix import Matrix
from buildkit.recipe.sections.publish import Publish
from buildkit.recipe.sections.rocm_pip import RocmPip
from buildkit.recipe.sections.smoke import SmokeTest
from buildkit.recipe.sections.source import Source
from buildkit.recipe.sections.torch import TorchPin, TorchStable
from buildkit.recipe.sections.version import VersionSpec
from buildkit.recipe.sections.wheel import WheelAbi
from buildkit.recipe.yamlspan import Path as JsonPath
from buildkit.recipe.yamlspan import Spans


@dataclass(frozen=True)
class Recipe:
    path: Path
    sha256: str
    #: :func:`buildkit.recipe.load.build_digest`: the recipe less its ``publish:`` and ``smoke:``
    build_sha256: str
    name: str
    source: Source
    version: VersionSpec
    python: tuple[str, ...]
    rocm: tuple[str, ...]
    torch: tuple[TorchPin, ...]
    matrix: Matrix
    archs: ArchSpec
    manylinux: Manylinux
    exclude_sets: tuple[str, ...]
    exclude_patterns: tuple[str, ...]
    env: Mapping[str, str]
    image: ImageSpec
    smoke: tuple[SmokeTest, ...]
    publish: Publish | None
    tuned_csv: tuple[str, ...]
    size_budget: Mapping[str, int]  # "limit"/"warn" -> bytes (wheel file size)
    spans: Spans = field(repr=False, compare=False)
    gate: GateRules = field(default_factory=GateRules)
    hooks: Hooks = field(default_factory=Hooks)
    #: ``network: true``: the build container gets the network; False: a hermetic build
    network: bool = False
    #: ``wheel:``: one wheel per CPython (the default), or one ``py3-none``/``abi3`` wheel per cell
    wheel: WheelAbi = field(default_factory=WheelAbi)
    #: ``offload_compress: true`` (:func:`buildkit.plan.expansion.offload_compress_env`)
    offload_compress: bool = False
    #: ``host_isa:``: the host code's x86-64 level, held by the build's compiler launcher (None: only
    #: -march=native is refused)
    host_isa: HostIsa | None = None
    #: ``rocm_pip:``: ROCm from pip (the ``rocm`` selector's SDK wheels), None: the system's ROCm
    rocm_pip: RocmPip | None = None
    #: ``torch: {abi: stable, from: ...}`` (``torch`` is then empty: no torch axis); None: pins, or no torch
    torch_stable: TorchStable | None = None
    #: :func:`buildkit.recipe.load.build_keys`: the digest of each top-level key :attr:`build_sha256` covers
    build_keys: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def display_path(self) -> str:
        """The recipe path as given to :func:`~buildkit.recipe.load.load_recipe` (used in messages)."""
        return str(self.path)

    def record(self) -> dict[str, Any]:
        """The recipe as a wheel's manifest records it (``recipe``): its file, name, the file's sha256 and the
        :attr:`build_sha256` that ``publish --recipe`` compares (:mod:`buildkit.manifest`), and the digest
        of each key it covers (:attr:`build_keys`: ``plan`` names the keys changed since a build)."""
        return {
            "name": self.name,
            "file": self.path.name,
            "sha256": self.sha256,
            "build_sha256": self.build_sha256,
            "build_keys": dict(self.build_keys),
        }

    def changed_build_keys(self, recorded: Mapping[str, Any]) -> tuple[str, ...] | None:
        """The top-level keys whose digests differ between a manifest's recipe record (:meth:`record`) and
        this recipe's :attr:`build_keys` (a key added or removed counts); None: the record has no
        ``build_keys`` (a manifest of an older build)."""
        keys = recorded.get("build_keys")
        if not isinstance(keys, dict):
            return None
        now = dict(self.build_keys)
        return tuple(sorted(k for k in set(keys) | set(now) if keys.get(k) != now.get(k)))

    def error(self, message: str, at: JsonPath, *, hint: str | None = None, key: bool = False) -> RecipeError:
        """A :class:`RecipeError` positioned at the value (or key) at JSON path ``at``."""
        pos = self.spans.key(at) if key else self.spans.value(at)
        line, column = pos if pos else (None, None)
        return RecipeError(message, file=self.display_path, line=line, column=column, hint=hint)

    def source_dir(self) -> Path | None:
        """The local source directory (path sources), resolved against the recipe's directory."""
        if self.source.path is None:
            return None
        base = self.path.parent / self.source.path
        return base / self.source.subdirectory if self.source.subdirectory else base


@dataclass(frozen=True)
class PartialRecipe:
    """What the sections of a recipe that failed to load gave (the :class:`RecipeError`'s ``partial``): the
    checks that come after loading (the ROCm data, what the image provides) run on the parts that loaded, so
    that ``plan`` reports every mistake in one run (:func:`buildkit.service.plan.load_plan`). A field is None
    where its section failed."""

    path: Path
    spans: Spans = field(repr=False)
    rocm: tuple[str, ...] | None = None
    python: tuple[str, ...] | None = None
    image: ImageSpec | None = None
    manylinux: Manylinux | None = None

    @property
    def display_path(self) -> str:
        return str(self.path)

    def error(self, message: str, at: JsonPath, *, hint: str | None = None, key: bool = False) -> RecipeError:
        """A :class:`RecipeError` positioned as :meth:`Recipe.error` positions it."""
        pos = self.spans.key(at) if key else self.spans.value(at)
        line, column = pos if pos else (None, None)
        return RecipeError(message, file=self.display_path, line=line, column=column, hint=hint)
