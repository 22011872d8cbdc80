"""Recipes: YAML files that say how to build, gate and publish wheels of a HIP extension (the modules,
laid out by the recipe's sections: docs/ARCHITECTURE.md).

:func:`load_recipe` validates a recipe against the shipped JSON Schema
(``buildkit/schema/recipe.schema.json``), then against the rules a schema cannot state; every
problem is a :class:`~buildkit.errors.RecipeError` at ``file:line:column``. Loading never contacts
Docker: ``manylinux.ceilings.from_image`` is kept as image references (:attr:`Manylinux.from_images`)
and read by :func:`buildkit.plan.expansion.expand`.

This module only names what the rest of buildkit uses.
"""

from __future__ import annotations

from buildkit.recipe.environment import RESERVED_ENV, ReservedEnv
from buildkit.recipe.load import MAX_RECIPE_BYTES, load_recipe, parse_recipe
from buildkit.recipe.model import PartialRecipe, Recipe
from buildkit.recipe.sections.archs import ArchSpec
from buildkit.recipe.sections.gate import GateRules
from buildkit.recipe.sections.hooks import Hooks
from buildkit.recipe.sections.image import ImageSpec
from buildkit.recipe.sections.manylinux import Manylinux
from buildkit.recipe.sections.matrix import BUILTIN_AXES, ExcludeRule, Matrix
from buildkit.recipe.sections.publish import Publish
from buildkit.recipe.sections.python import cibuildwheel_pythons
from buildkit.recipe.sections.rocm_pip import RocmPip
from buildkit.recipe.sections.smoke import SmokeTest
from buildkit.recipe.sections.source import Source
from buildkit.recipe.sections.torch import TorchPin, TorchStable
from buildkit.recipe.sections.version import VersionSpec
from buildkit.recipe.sections.wheel import WheelAbi

__all__ = [
    "BUILTIN_AXES",
    "MAX_RECIPE_BYTES",
    "RESERVED_ENV",
    "ArchSpec",
    "ExcludeRule",
    "GateRules",
    "Hooks",
    "ImageSpec",
    "Manylinux",
    "Matrix",
    "PartialRecipe",
    "Publish",
    "Recipe",
    "ReservedEnv",
    "RocmPip",
    "SmokeTest",
    "Source",
    "TorchPin",
    "TorchStable",
    "VersionSpec",
    "WheelAbi",
    "cibuildwheel_pythons",
    "load_recipe",
    "parse_recipe",
]
