"""Jobs the chosen builder image cannot build, refused at ``plan`` before any image or compile.

What a profile provides is what ``docker/profiles.toml`` declares (:func:`_declared`). A project's
own Dockerfile or an image ref is not judged here: the builder contract probe
(:mod:`buildkit.image.probe`) checks those at build time. Across jobs: two jobs that would make the
same wheel file name are refused (:func:`same_name_problems`); a recipe that excludes nothing at
repair gets a warning (auditwheel would graft the ROCm runtime into the wheel).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Protocol

from buildkit import policy as mlpolicy
from buildkit import profiles
from buildkit.errors import BuildkitError, RecipeError, UsageError
from buildkit.plan.models import Job
from buildkit.recipe import ImageSpec, Manylinux, PartialRecipe, Recipe
from buildkit.recipe.yamlspan import Path as JsonPath
from buildkit.rocm import data as rocm_data
from buildkit.rocm import install as rocm_install


def provided_releases(profile: profiles.Profile) -> tuple[str, ...] | None:
    """The ROCm releases ``profile`` provides; None when it does not say (any release)."""
    if profile.rocm_releases is not None:
        return profile.rocm_releases
    if profile.rocm_build_arg is not None:  # AMD's packages, installed by the data's repositories
        return tuple(i.rocm for i in rocm_install.el8_installs())
    return None


def _declared(profile: object, name: str, default: Any = None) -> Any:
    """A profile field that a profiles.toml of this version may not have (``pythons``, ``glibc``,
    ``sysroots``, ``role``): absent is unknown, and nothing is refused for it."""
    return getattr(profile, name, default)


def _glibc_tuple(version: str | None) -> tuple[int, ...] | None:
    return mlpolicy.version_tuple(version) if version else None


class _Locator(Protocol):
    """What positions a problem in the recipe: a :class:`Recipe`, or the ``PartialRecipe`` of one that
    failed to load."""

    def error(
        self, message: str, at: JsonPath, *, hint: str | None = None, key: bool = False
    ) -> RecipeError: ...


def image_problems(recipe: Recipe) -> list[RecipeError]:
    """Each ROCm release, Python and policy of ``recipe`` its image profile does not provide, as a
    :class:`RecipeError` at the recipe's value (none when the image is not a profile)."""
    return _problems_of_image(recipe, recipe.image, recipe.rocm, recipe.python, recipe.manylinux)


def release_problems(recipe: _Locator, rocm: Sequence[str]) -> list[RecipeError]:
    """Each ROCm release buildkit has no data for, at its position."""
    problems = []
    for i, rel in enumerate(rocm):
        try:
            rocm_data.get_release(rel)
        except BuildkitError as exc:
            problems.append(recipe.error(f"rocm[{i}]: {exc}", ("rocm", i)))
    return problems


def partial_problems(partial: PartialRecipe) -> list[RecipeError]:
    """The checks after loading, on what of a recipe that failed to load did load: its unknown ROCm
    releases, and what its image does not provide (when the image, releases, Pythons and policy loaded)."""
    problems = release_problems(partial, partial.rocm) if partial.rocm is not None else []
    p = partial
    if p.image is not None and p.rocm is not None and p.python is not None and p.manylinux is not None:
        problems += _problems_of_image(p, p.image, p.rocm, p.python, p.manylinux)
    return problems


def _problems_of_image(
    recipe: _Locator,
    image: ImageSpec,
    rocm_releases: Sequence[str],
    python_versions: Sequence[str],
    manylinux: Manylinux,
) -> list[RecipeError]:
    """:func:`image_problems` of the parts given (``recipe`` positions them)."""
    try:
        profile = image.profile_data
    except (UsageError, OSError):  # the recipe loader reports an unknown profile itself
        return []
    if profile is None:
        return []
    name = profile.name
    where = image.label
    problems: list[RecipeError] = []
    releases = provided_releases(profile)
    if releases is not None:
        for i, rocm in enumerate(rocm_releases):
            if _release_of(rocm) not in {_release_of(r) for r in releases}:
                problems.append(
                    recipe.error(
                        f"rocm[{i}]: image {where} provides ROCm {', '.join(releases)}, not {rocm}",
                        ("rocm", i),
                        hint=_profiles_providing("rocm_releases", rocm, name)
                        or f"remove {rocm}, or give an image that provides it",
                    )
                )
    pythons: tuple[str, ...] | None = _declared(profile, "pythons")
    if pythons is not None:
        for i, python in enumerate(python_versions):
            if python not in pythons:
                problems.append(
                    recipe.error(
                        f"python[{i}]: image {where} provides CPython {', '.join(pythons)}, not {python}",
                        ("python", i),
                        hint=_profiles_providing("pythons", python, name)
                        or f"build for {', '.join(pythons)}, or give an image that provides {python}",
                    )
                )
    policy_problem = _policy_problem(recipe, image, manylinux, profile)
    if policy_problem is not None:
        problems.append(policy_problem)
    return problems


def _release_of(rocm: str) -> str:
    try:
        return rocm_data.get_release(rocm).version
    except rocm_data.UnknownRelease:
        return rocm


def _profiles_providing(field: str, value: str, besides: str) -> str | None:
    """ "image X provides it" for the builder profiles that declare ``value`` in ``field``."""
    found = []
    for other in profiles.PROFILES.values():
        if other.name == besides or _declared(other, "role", "builder") != "builder":
            continue
        declared = provided_releases(other) if field == "rocm_releases" else _declared(other, "pythons")
        if declared is not None and value in declared:
            found.append(other.name)
    if not found:
        return None
    return f"image {' or '.join(found)} provides it"


def _policy_problem(
    recipe: _Locator, image: ImageSpec, manylinux: Manylinux, profile: profiles.Profile
) -> RecipeError | None:
    """A policy older than the glibc the build links against: the image's, or the compatibility
    sysroot's the recipe selects (``manylinux.sysroot``). auditwheel repair cannot make a wheel older;
    the hint names a sysroot of the image that fits, when there is one."""
    glibc: str | None = _declared(profile, "glibc")
    carried: dict[str, Any] = dict(_declared(profile, "sysroots", {}))
    chosen = manylinux.sysroot
    what = f"image {image.label}"
    if chosen is not None and chosen in carried:
        glibc, what = (_declared(carried[chosen], "glibc"), f"the sysroot {chosen} of image {image.label}")
    built_with = _glibc_tuple(glibc)
    policy = manylinux.policy
    try:
        policy_glibc = mlpolicy.get_policy(policy).ceilings().get("GLIBC")
    except UsageError:
        return None
    wanted = _glibc_tuple(policy_glibc)
    if built_with is None or wanted is None or wanted >= built_with:
        return None
    # the sysroots old enough, the newest first (the one closest to the policy)
    fitting = sorted(
        (n for n, s in carried.items() if (_glibc_tuple(_declared(s, "glibc")) or (99,)) <= wanted),
        key=lambda n: _glibc_tuple(_declared(carried[n], "glibc")) or (),
        reverse=True,
    )
    known = {p.name for p in mlpolicy.policies()}
    own = f"manylinux_{str(glibc).replace('.', '_')}"
    newer = f"choose the policy {own}" if own in known else ""  # never one auditwheel does not know
    if chosen is None and fitting:
        hint = f"set manylinux.sysroot: {fitting[0]} (host code compiled against its older glibc)"
        hint += f", or {newer}" if newer else ""
    else:
        # the image's oldest sysroot whose glibc a policy auditwheel knows covers: its policy then
        usable = sorted(
            (s for n, s in carried.items() if n != chosen and _declared(s, "policy") in known),
            key=lambda s: _glibc_tuple(_declared(s, "glibc")) or (99,),
        )
        options = [f"set manylinux.sysroot: {s.name} and manylinux.policy: {s.policy}" for s in usable[:1]]
        options += [newer] if newer else []
        options.append(f"build on an image whose glibc is {policy_glibc} or older")
        hint = ", or ".join(options)
        if chosen is not None:  # what a sysroot cannot give
            hint += (
                f" (the sysroot gives at most its glibc {glibc}, and no sysroot of the image is as old as "
                f"glibc {policy_glibc})"
            )
    return recipe.error(
        f"manylinux.policy: {what} builds against glibc {glibc}; a {policy} wheel needs glibc "
        f"{policy_glibc} at most, and auditwheel repair cannot lower it",
        ("manylinux", "policy"),
        hint=hint,
    )


def wheel_name(recipe: Recipe, job: Job) -> str:
    """The file name a job's wheel gets (PEP 427: ``-`` of the name as ``_``)."""
    dist = recipe.name.replace("-", "_").replace(".", "_")
    return f"{dist}-{job.version}-{job.cp_tag}-{job.cp_tag}-{job.platform_tag}.whl"


def _placeholder(axis: str) -> str:
    return {"rocm": "rocm{rocm}", "torch": "torch{torch_nodot}"}.get(axis, f"{{{axis}}}")


def same_name_problems(recipe: Recipe, jobs: Sequence[Job]) -> list[RecipeError]:
    """Jobs that would make the same wheel file (one would replace the other in an index; ``publish``
    refuses the second): one error per file name, at ``version.local`` (or ``version``)."""
    by_name: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        by_name[wheel_name(recipe, job)].append(job)
    problems = []
    local = recipe.version.local
    for name, same in by_name.items():
        if len(same) < 2:
            continue
        differ = [
            axis
            for axis in ("rocm", "torch", *(n for n, _ in recipe.matrix.axes))
            if len(
                {
                    (j.rocm if axis == "rocm" else j.torch if axis == "torch" else j.axes.get(axis))
                    for j in same
                }
            )
            > 1
        ]
        add = ".".join(_placeholder(a) for a in differ) or "{rocm}"
        ids = ", ".join(j.id for j in same[:3]) + (f" and {len(same) - 3} more" if len(same) > 3 else "")
        fix = f'version.local: "{local}.{add}"' if local else f'version: {{local: "{add}"}}'
        problems.append(
            recipe.error(
                f"jobs {ids} would make the same wheel file {name}: one would replace the other",
                ("version", "local") if local else ("version",),
                key=not local,
                hint=f"give each job its own local version label, e.g. {fix}",
            )
        )
    return problems


def exclude_note(recipe: Recipe) -> str | None:
    """A warning for a HIP build that excludes nothing at repair."""
    if recipe.exclude_sets or recipe.exclude_patterns:
        return None
    return (
        "warning: repair.exclude is empty: auditwheel repair would graft the ROCm runtime "
        "(libamdhip64.so.*, libhsa-runtime64.so.*) into every wheel, where the user's own ROCm must "
        "provide it; add repair: {exclude: {sets: [rocm]}} (and torch for a torch extension)"
    )
