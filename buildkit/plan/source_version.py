"""The plan's versions against the source's own rule, before anything is compiled (docs/REFERENCE.md,
"Versions are decided before compiling").

A project that fixes its version cannot carry a local label: that is known from the source alone,
so :func:`check_source_version` raises it as a :class:`~buildkit.errors.RecipeError` at the
recipe's ``version.local`` (or ``version.base``) with the file and line that fix the version, rather
than the build refusing the wheel after the compile. :func:`with_source_version` reads an
``sdist``/``url`` source from its cached archive (what was read is cached by the archive's sha256:
:func:`buildkit.source.tree.archive_facts`); a git source is checked by ``buildkit build`` once
fetched (:func:`buildkit.building.run.build_plan`).
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Callable, Sequence
from pathlib import Path

from packaging.version import InvalidVersion, Version

from buildkit.errors import RecipeError
from buildkit.plan.models import Job, Plan
from buildkit.recipe import Recipe
from buildkit.source.project import cibuildwheel_notes
from buildkit.source.tree import SourceFacts, archive_facts, read_facts
from buildkit.source.version import VersionDecision

#: the other way out: the build sets both variables to the job's planned version (buildkit.building.cibw)
_FROM_BUILD = (
    "make the build decide the version: read BUILDKIT_VERSION (setup.py: "
    'version=os.environ["BUILDKIT_VERSION"]) or use setuptools-scm (it reads '
    "SETUPTOOLS_SCM_PRETEND_VERSION), both set to the planned version"
)


def _same(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def _source_label(recipe: Recipe) -> str | None:
    """How messages name the source tree a decision's file lies in (None: a path source, whose
    files are named relative to the recipe)."""
    src = recipe.source
    if src.sdist is not None:
        return f"the sdist {src.sdist}"
    if src.url is not None:
        return posixpath.basename(src.url.split("?")[0]) or src.url
    if src.git is not None:
        return f"{src.git} at {src.ref}"
    return None


def _where(recipe: Recipe, decision: VersionDecision) -> str:
    label = _source_label(recipe)
    if label is None and recipe.source.path is not None:
        parts = [recipe.source.path, recipe.source.subdirectory or "", decision.where]
        return posixpath.join(*(p for p in parts if p))
    return f"{decision.where} (in {label})" if label else decision.where


def _recipe_keys(recipe: Recipe) -> dict[str, bool]:
    """Which recipe keys that do a cibuildwheel option's job the recipe sets."""
    hooks = recipe.hooks
    return {
        "python": True,
        "before_all": bool(hooks.before_all),
        "before_build": bool(hooks.before_build),
        "config_settings": bool(hooks.config_settings),
        "build_frontend": True,
        "env": bool(recipe.env),
        "test_command": bool(hooks.test_command),
        "test_requires": bool(hooks.test_requires),
    }


def check_source_version(plan: Plan, tree: Path, jobs: Sequence[Job] | None = None) -> Plan:
    """``plan`` when the source in ``tree`` takes its version from the build or fixes the version of
    every job (``jobs``: those to be built; default all); with a note when its rule is unknown; a
    RecipeError when it fixes another version."""
    return _check_facts(plan, read_facts(tree), jobs)


def _check_facts(plan: Plan, facts: SourceFacts, jobs: Sequence[Job] | None = None) -> Plan:
    """:func:`check_source_version` on what was read from the source tree (perhaps from the cache)."""
    recipe = plan.recipe
    decision = facts.version
    versions = list(dict.fromkeys(job.version for job in (plan.jobs if jobs is None else jobs)))
    # the project's own [tool.cibuildwheel] never applies: rocm-buildkit sets every option itself
    overridden = cibuildwheel_notes(facts.cibuildwheel, _recipe_keys(recipe))
    if overridden:
        plan = dataclasses.replace(plan, notes=(*plan.notes, *overridden))
    if not versions or decision.kind == "tool":
        return plan
    if decision.kind == "unknown":
        note = (
            f"cannot tell how the source decides its version ({decision.how}); if it fixes one other "
            f"than the planned {versions[0]}, the build fails after compiling: make it read BUILDKIT_VERSION"
        )
        return dataclasses.replace(plan, notes=(*plan.notes, note))
    assert decision.version is not None
    fixed = decision.version
    differing = [v for v in versions if not _same(fixed, v)]
    if not differing:
        return plan
    raise _mismatch(recipe, decision, fixed, differing)


def _mismatch(recipe: Recipe, decision: VersionDecision, fixed: str, differing: list[str]) -> RecipeError:
    planned = differing[0] + (f" (and {len(differing) - 1} more)" if len(differing) > 1 else "")
    where = _where(recipe, decision)
    try:
        fixed_public, plan_public = Version(fixed).public, Version(differing[0]).public
    except InvalidVersion:
        fixed_public, plan_public = fixed, ""
    spec = recipe.version
    if fixed_public == plan_public and spec.local:
        return recipe.error(
            f"{where} fixes the version {fixed}; the plan's {planned} cannot be carried",
            ("version", "local"),
            hint=f'set version.base: "{fixed}" and remove version.local, or {_FROM_BUILD}',
        )
    at = ("version", "base") if spec.base is not None else ("version", "from")
    if fixed_public == plan_public:  # the source's version has a local label of its own
        fix = f"set version.local to the source's label ({fixed}), or drop it from the source"
    else:
        fix = f'set version.base: "{fixed_public}"' + (" and remove version.local" if spec.local else "")
    return recipe.error(
        f"{where} fixes the version {fixed}, not the plan's {planned}: the build would fail after compiling",
        at,
        hint=f"{fix}, or {_FROM_BUILD}",
    )


def with_source_version(plan: Plan, echo: Callable[[str], None] | None = None) -> Plan:
    """:func:`check_source_version` on the recipe's source where ``buildkit plan`` can read it
    without a checkout: a path source, or an sdist/url archive (fetched into the cache once)."""
    recipe = plan.recipe
    if not plan.jobs:
        return plan
    local = recipe.source_dir()
    if local is not None:
        if not local.is_dir():
            raise recipe.error(f"source.path: {local} is not a directory", ("source", "path"))
        return check_source_version(plan, local)
    if not recipe.source.downloaded:
        return plan  # git: checked by buildkit build once fetched, before compiling
    # read once per archive: the facts are cached by its sha256 (buildkit.source.tree.archive_facts)
    return _check_facts(plan, archive_facts(recipe, echo))
