"""Recipes: YAML files that say how to build, gate and publish wheels of a HIP extension.

:func:`load_recipe` reads a recipe, validates it against the shipped JSON Schema
(``buildkit/schema/recipe.schema.json``) and then against the rules a schema cannot state
(zipped axes of equal length, known placeholders, PyPI versus local labels, ceilings within the
policy ...). Every problem is a :class:`~buildkit.errors.RecipeError` at ``file:line:column``.

Loading never contacts Docker: ``manylinux.ceilings.from_image`` is kept as image references
(:attr:`Manylinux.from_images`) and read by :func:`buildkit.plan.expansion.expand`.

The package is laid out by the recipe's sections (rattler-build's parser is the model):

* :mod:`~buildkit.recipe.yamlspan`: YAML with a position for every value;
* :mod:`~buildkit.recipe.schema`: the JSON Schema and its errors as positioned messages;
* :mod:`~buildkit.recipe.section`: what a section is, and the context it is parsed in;
* :mod:`~buildkit.recipe.sections`: one module per section, registered in ``SECTIONS``;
* :mod:`~buildkit.recipe.model`: the typed :class:`Recipe`;
* :mod:`~buildkit.recipe.load`: reading the file and running the sections.

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
