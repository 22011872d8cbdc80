"""Expansion: a recipe into a :class:`~buildkit.plan.models.Plan` (python x rocm x torch x extra
axes, zip and exclude), with stable job ids; combinations left out are kept in
:attr:`Plan.skipped` with the reason.

The plan's notes are listed in docs/REFERENCE.md (``buildkit plan``); ``--strict`` turns a dropped
arch into exit 5 (:func:`~buildkit.plan.models.check_strict`). Jobs the recipe's image profile
cannot build, and jobs that would make the same wheel file, are recipe errors
(:mod:`buildkit.plan.feasibility`), all reported at once.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from packaging.version import Version

from buildkit import rocm as rocm_data
from buildkit import version as ver
from buildkit.errors import BuildkitError, RecipeError
from buildkit.plan import archs as archs_mod
from buildkit.plan import feasibility
from buildkit.plan.archs import ArchSet
from buildkit.plan.from_image import CeilingsReader, image_ceilings
from buildkit.plan.models import Job, Plan, Skipped
from buildkit.plan.torch_index import index_note, missing_index_hint
from buildkit.recipe import Recipe, TorchPin, TorchStable
from buildkit.recipe.sections.archs import CMAKE_DEFINE, is_environment_name

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._]+")

_Combo = dict[str, str | None]


#: what the recipe's ``offload_compress: true`` adds to the build's flags
_OFFLOAD_COMPRESS_FLAG = "--offload-compress"
#: where: hipcc appends these to every compile and link (AMD's hipcc and Debian's); CMake's HIP
#: language starts CMAKE_HIP_FLAGS from HIPFLAGS
_OFFLOAD_COMPRESS_VARS = ("HIPCC_COMPILE_FLAGS_APPEND", "HIPCC_LINK_FLAGS_APPEND", "HIPFLAGS")
#: the first LLVM whose clang has --offload-compress (Debian trixie's clang 17 refuses it: measured)
_OFFLOAD_COMPRESS_LLVM = 18


def offload_compress_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables that turn clang's ``--offload-compress`` on, each after what ``env`` has there."""
    out = {}
    for var in _OFFLOAD_COMPRESS_VARS:
        flags = env.get(var, "").split()
        out[var] = " ".join(
            [*flags, _OFFLOAD_COMPRESS_FLAG] if _OFFLOAD_COMPRESS_FLAG not in flags else flags
        )
    return out


#: the variables a stable-ABI job's torch flags go in (each after what the job has there): the
#: preprocessor flags of setuptools' compiles, CMake's C++ and HIP flags, and every hipcc compile
_STABLE_FLAG_VARS = ("CPPFLAGS", "CXXFLAGS", "HIPFLAGS", "HIPCC_COMPILE_FLAGS_APPEND")


def _torch_stable_env(env: Mapping[str, str], stable: TorchStable) -> dict[str, str]:
    """The flags of a stable-ABI job: torch's stable-only flags (:attr:`TorchStable.flags`) after what
    ``env`` has in :data:`_STABLE_FLAG_VARS` (the build adds ``BUILDKIT_TORCH_REQUIREMENT``,
    :func:`buildkit.building.cibw.container_environment`)."""
    return {var: " ".join(filter(None, (env.get(var, ""), stable.flags))) for var in _STABLE_FLAG_VARS}


def job_id(
    python: str,
    rocm: str,
    torch: str | None,
    axes: Sequence[tuple[str, str]] = (),
    *,
    prefix: str | None = None,
) -> str:
    """``cp312-rocm7.2-torch2.10`` (+ ``-prebuild_kernels1`` per extra axis); with ``prefix`` (a
    Python-independent wheel: ``py3``, ``abi3-cp312``) that prefix instead of the Python's tag."""
    out = f"{prefix or f'cp{ver.nodot(python)}'}-rocm{rocm}"
    if torch is not None:
        out += f"-torch{torch}"
    for name, value in axes:
        out += "-" + _ID_UNSAFE.sub("_", f"{name.lower()}{value}")
    return out


def _combinations(recipe: Recipe) -> Iterator[_Combo]:
    """Every combination of axis values: zipped axes move together, the rest form a product."""
    axes: list[tuple[str, tuple[str | None, ...]]] = [
        ("python", recipe.python),
        ("rocm", recipe.rocm),
        ("torch", tuple(t.series for t in recipe.torch) or (None,)),
        *recipe.matrix.axes,
    ]
    zipped = set(recipe.matrix.zip)
    groups: list[list[_Combo]] = []
    zip_group: list[_Combo] | None = None
    for name, values in axes:
        if name in zipped:
            if zip_group is None:
                zip_names = [n for n, _ in axes if n in zipped]
                columns = [dict(axes)[n] for n in zip_names]
                zip_group = [dict(zip(zip_names, row, strict=True)) for row in zip(*columns, strict=True)]
                groups.append(zip_group)
            continue
        groups.append([{name: v} for v in values])
    for parts in itertools.product(*groups):
        combo: _Combo = {}
        for part in parts:
            combo.update(part)
        yield combo


def _base_version(recipe: Recipe) -> str:
    spec = recipe.version
    if spec.base is not None:
        return spec.base
    try:
        if recipe.source.git is not None:
            assert recipe.source.ref is not None
            return ver.base_from_tag(recipe.source.ref, spec.tag_pattern)
        src = recipe.source_dir()
        assert src is not None
        tag, distance = ver.describe_tag(src)
        return ver.base_from_tag(tag, spec.tag_pattern, distance)
    except ver.VersionProblem as exc:
        raise recipe.error(f"version.from: git-tag: {exc}", ("version", "from")) from None


def _releases(recipe: Recipe) -> dict[str, rocm_data.RocmRelease]:
    """The data of every pinned ROCm release; an unknown one is a recipe error at its position."""
    problems = feasibility.release_problems(recipe, recipe.rocm)
    if problems:  # with what the image cannot build: every problem at once
        raise RecipeError.combine([*problems, *feasibility.image_problems(recipe)])
    return {rel: rocm_data.get_release(rel) for rel in recipe.rocm}


def _profile_toolchain(recipe: Recipe, rocm: str) -> str | None:
    """The distribution toolchain the recipe's image profile names for ROCm ``rocm`` (None if none)."""
    if recipe.image.profile is None:
        return None
    try:
        profile = recipe.image.profile_data
        return profile.toolchain_of(rocm) if profile is not None else None
    except BuildkitError:
        return None


def _toolchains(
    recipe: Recipe, releases: Mapping[str, rocm_data.RocmRelease]
) -> dict[str, tuple[str | None, tuple[str, ...] | None]]:
    """Per pinned release: the toolchain that builds it and the archs it compiles ((None, None)
    without one). ``archs.toolchain`` names one for every release (its ROCm must be every pin's);
    without it, an image profile with one image per release names each release's own."""
    out: dict[str, tuple[str | None, tuple[str, ...] | None]] = {}
    for i, rel in enumerate(recipe.rocm):
        name = recipe.archs.toolchain or _profile_toolchain(recipe, rel)
        if name is None:
            out[rel] = (None, None)
            continue
        try:
            toolchain = rocm_data.get_toolchain(name)
        except BuildkitError as exc:
            where = ("archs", "toolchain") if recipe.archs.toolchain else ("image",)
            raise recipe.error(f"archs.toolchain: {exc}", where) from None
        if releases[rel].version != rocm_data.get_release(toolchain.rocm).version:
            raise recipe.error(
                f"rocm[{i}]: toolchain {toolchain.id} packages ROCm {toolchain.rocm}, not {rel}",
                ("rocm", i),
                hint="a distribution toolchain builds against its own ROCm only",
            )
        out[rel] = (toolchain.id, toolchain.archs)
    return out


def _library_notes(recipe: Recipe, rocm: str, toolchain: str | None, archs: ArchSet) -> list[str]:
    """A note for each kept arch that a ROCm library the image installs carries no kernels for
    (the toolchain's ``library_targets``: Debian's X-Rocm-Gpu-Architecture of each package)."""
    if toolchain is None or recipe.image.profile is None:
        return []
    try:
        data = rocm_data.get_toolchain(toolchain)
        profile = recipe.image.profile_data
    except BuildkitError:
        return []
    if profile is None:
        return []
    packages = profile.release_build_args(rocm).get("ROCM_PACKAGES", "").split()
    if not packages:
        packages = profile.build_args.get("ROCM_PACKAGES", "").split()
    packages += [p.split("=", 1)[0] for p in recipe.image.packages]
    notes = []
    for package in packages:
        library = package.removesuffix("-dev").rstrip("0123456789")
        targets = data.library_targets.get(library)
        if targets is None:
            continue
        for target in archs.kept:
            if rocm_data.processor_of(str(target)) not in targets:
                notes.append(
                    f"ROCm {rocm} (toolchain {toolchain}): {library} ({package}) carries no kernels for "
                    f"{target} (its GPU targets: {', '.join(targets)}); calls into it fail on that GPU"
                )
    return notes


def _arch_notes(rocm: str, archs: ArchSet) -> list[str]:
    return [f"ROCm {rocm}: {d}" for d in archs.dropped] + list(archs.warnings)


@dataclass
class _Expansion:
    """What the jobs of one expansion share, and the memo of what they computed once."""

    recipe: Recipe
    environ: Mapping[str, str]
    cli_archs: str | None
    enumerator: Callable[[], list[str]] | None
    base: str
    releases: dict[str, rocm_data.RocmRelease]
    #: per release: (toolchain id, the archs it compiles), (None, None) without a toolchain
    toolchains: dict[str, tuple[str | None, tuple[str, ...] | None]]
    ceilings: dict[str, str]
    notes: dict[str, None]  # insertion-ordered, without duplicates
    pins: dict[str, tuple[int, TorchPin]] = field(init=False)
    used_fields: set[str] = field(init=False)
    rule_hits: list[int] = field(init=False)
    arch_cache: dict[str, ArchSet] = field(default_factory=dict)
    arch_env: dict[str, dict[str, str]] = field(default_factory=dict)
    arch_cmake: dict[str, dict[str, str]] = field(default_factory=dict)  # cmake.define.X / -DX -> list
    values_cache: dict[tuple[str, str, str | None], dict[str, str]] = field(default_factory=dict)
    glob_cache: dict[str, tuple[str, ...]] = field(default_factory=dict)
    version_cache: dict[tuple[tuple[str, str], ...], str] = field(default_factory=dict)
    noted: set[tuple[int | str, str]] = field(default_factory=set)  # (torch index or "unverified", rocm)
    seen_ids: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.pins = {t.series: (i, t) for i, t in enumerate(self.recipe.torch)}
        self.used_fields = set(ver.template_fields(self.recipe.version.local))
        self.rule_hits = [0] * len(self.recipe.matrix.exclude)

    def new_id(self, combo: _Combo, extra: Sequence[tuple[str, str]], *, prefix: str | None = None) -> str:
        python, rocm = combo["python"], combo["rocm"]
        assert python is not None and rocm is not None
        jid = job_id(python, rocm, combo["torch"], extra, prefix=prefix)
        if jid in self.seen_ids:
            raise self.recipe.error(
                f"two combinations share the job id {jid!r}",
                ("matrix",),
                hint="give matrix.axes values that differ in letters or digits",
            )
        self.seen_ids.add(jid)
        return jid

    def skip_reason(self, combo: _Combo) -> str | None:
        """Why ``combo`` is left out (the first matching exclude rule, a torch without wheels for
        the Python), or None; counts every rule that matches."""
        reason = None
        for n, rule in enumerate(self.recipe.matrix.exclude):
            if all(combo.get(axis) == value for axis, value in rule.values):
                self.rule_hits[n] += 1
                if reason is None:
                    why = f": {rule.reason}" if rule.reason else ""
                    reason = f"excluded by matrix.exclude[{rule.index}]{why}"
        torch, python = combo["torch"], combo["python"]
        assert python is not None
        if reason is not None or torch is None:
            return reason
        pin_index, pin = self.pins[torch]
        if pin.python is not None and not pin.python.contains(Version(python)):
            return (
                f"torch {pin.series} ships no wheels for Python {python} "
                f"(torch[{pin_index}].python is {str(pin.python)!r})"
            )
        return None

    def archs(self, rocm: str) -> ArchSet:
        """The resolved archs of ``rocm`` (resolved once per release; its notes recorded then)."""
        archs = self.arch_cache.get(rocm)
        if archs is None:
            archs = archs_mod.resolve(
                rocm=rocm,
                cli_archs=self.cli_archs,
                recipe_archs=self.recipe.archs.list,
                allow=self.recipe.archs.allow,
                env=self.environ,
                enumerator=self.enumerator,
                toolchain_archs=self.toolchains[rocm][1],
                toolchain=self.toolchains[rocm][0],
            )
            self.arch_cache[rocm] = archs
            exported = archs.exported(self.recipe.archs.export)
            self.arch_env[rocm] = {k: v for k, v in exported.items() if is_environment_name(k)}
            self.arch_cmake[rocm] = {k: v for k, v in exported.items() if not is_environment_name(k)}
            self.notes.update(dict.fromkeys(_arch_notes(rocm, archs)))
            self.notes.update(
                dict.fromkeys(_library_notes(self.recipe, rocm, self.toolchains[rocm][0], archs))
            )
        return archs

    def note_unverified(self, rocm: str, pin: TorchPin | None) -> None:
        """Note the release's unverified data once, when it is used: for its arch list (no
        toolchain) or its torch index."""
        if (self.toolchains[rocm][1] is None or pin is not None) and ("unverified", rocm) not in self.noted:
            self.noted.add(("unverified", rocm))
            self.notes.update(
                dict.fromkeys(
                    f"ROCm {rocm}: buildkit's data for this release is marked unverified: {text}"
                    for text in self.releases[rocm].unverified
                )
            )

    def note_offload_compress(self, rocm: str) -> None:
        """``offload_compress: true`` with a compiler older than LLVM 18 (the first clang with
        ``--offload-compress``): noted once per release, the build would fail at the first compile."""
        toolchain = self.recipe.archs.toolchain
        llvm = rocm_data.get_toolchain(toolchain).llvm if toolchain else self.releases[rocm].llvm
        where = f"toolchain {toolchain}" if toolchain else f"ROCm {rocm}"
        major = llvm.split(".")[0]
        if major.isdigit() and int(major) < _OFFLOAD_COMPRESS_LLVM and ("compress", rocm) not in self.noted:
            self.noted.add(("compress", rocm))
            self.notes[
                f"offload_compress: true: clang's --offload-compress needs LLVM {_OFFLOAD_COMPRESS_LLVM} or "
                f"later; {where} has LLVM {llvm}, whose clang refuses it (unsupported option "
                "'--offload-compress'): the build fails at its first HIP compile"
            ] = None

    def globs(self, rocm: str) -> tuple[str, ...]:
        globs = self.glob_cache.get(rocm)
        if globs is None:
            sets = self.recipe.exclude_sets
            if self.recipe.rocm_pip is not None and "rocm" not in sets:
                sets = (*sets, "rocm")  # ROCm from pip: the SDK's SONAMEs stay out of the wheel
            found = rocm_data.exclude_globs(sets, rocm)
            globs = tuple(sorted(set(found) | set(self.recipe.exclude_patterns)))
            self.glob_cache[rocm] = globs
        return globs

    def values(
        self, rocm: str, python: str, torch: str | None, extra: Sequence[tuple[str, str]]
    ) -> dict[str, str]:
        """The version template's values of one job (``cp``, ``rocm``, ..., the extra axes)."""
        key = (rocm, python, torch)
        values = self.values_cache.get(key)
        if values is None:
            values = ver.template_values(
                rocm=rocm, policy=self.recipe.manylinux.policy, python=python, torch=torch
            )
            self.values_cache[key] = values
        return {**values, **dict(extra)} if extra else values

    def version(self, values: Mapping[str, str]) -> str:
        key = tuple(sorted((k, v) for k, v in values.items() if k in self.used_fields))
        version = self.version_cache.get(key)
        if version is None:
            try:
                version = ver.render_version(self.base, self.recipe.version.local, values)
            except ver.VersionProblem as exc:
                raise self.recipe.error(f"version.local: {exc}", ("version", "local")) from None
            self.version_cache[key] = version
        return version

    def index_url(self, rocm: str, pin_index: int, pin: TorchPin) -> str | None:
        """The torch index of ``pin`` for ``rocm``: the explicit one (noted when the data says it
        serves another pair) or the one the data knows; none is a recipe error. None with
        ``pip_config: true``: pip's configuration serves that torch."""
        if pin.pip_config:
            return None
        release = self.releases[rocm]
        index_url = pin.index_url or release.torch_index_for(pin.version)
        if index_url is None:
            raise self.recipe.error(
                f"torch[{pin_index}] has no index_url, and buildkit's ROCm data knows no index "
                f"serving torch {pin.series} for ROCm {rocm}",
                ("torch", pin_index),
                hint=missing_index_hint(pin, release),
            )
        if pin.index_url is not None and (pin_index, rocm) not in self.noted:
            self.noted.add((pin_index, rocm))
            note = index_note(pin_index, pin, release)
            if note is not None:
                self.notes[note] = None
        return index_url

    def torch_build(self, rocm: str, pin_index: int, pin: TorchPin | None) -> tuple[str | None, str | None]:
        """The torch a job builds against and its index: its pin's, or a stable-ABI recipe's lowest
        torch (``torch==2.10.*``); (None, None) without torch."""
        stable = self.recipe.torch_stable
        if stable is not None:
            lowest = TorchPin(stable.lowest, stable.index_url, None, stable.pip_config)
            return stable.build_requirement, self.index_url(rocm, 0, lowest)
        if pin is None:
            return None, None
        return pin.requirement, self.index_url(rocm, pin_index, pin)

    def job(
        self, jid: str, combo: _Combo, extra: Sequence[tuple[str, str]], serves: tuple[str, ...] = ()
    ) -> Job:
        python, rocm, torch = combo["python"], combo["rocm"], combo["torch"]
        assert python is not None and rocm is not None
        pin_index, pin = self.pins[torch] if torch is not None else (-1, None)
        archs = self.archs(rocm)
        self.note_unverified(rocm, pin)
        globs = self.globs(rocm)
        values = self.values(rocm, python, torch, extra)
        version = self.version(values)
        requirement, index_url = self.torch_build(rocm, pin_index, pin)
        recipe = self.recipe
        stable = recipe.torch_stable
        job_env = {**recipe.env, **dict(extra), **self.arch_env[rocm]}
        hooks = recipe.hooks
        cmake = self.arch_cmake[rocm]
        defines = tuple((k, (v,)) for k, v in cmake.items() if k.startswith(CMAKE_DEFINE))
        if defines:  # the arch list as scikit-build-core's cmake.define.* config settings
            hooks = dataclasses.replace(hooks, config_settings=(*hooks.config_settings, *defines))
        dash_d = [f"{k}={v}" for k, v in cmake.items() if not k.startswith(CMAKE_DEFINE)]
        if dash_d:  # and as -D definitions appended to CMAKE_ARGS (read by scikit-build-core, many setup.py)
            job_env["CMAKE_ARGS"] = " ".join(filter(None, (job_env.get("CMAKE_ARGS", ""), *dash_d)))
        if recipe.offload_compress:
            job_env.update(offload_compress_env(job_env))
            self.note_offload_compress(rocm)
        if recipe.host_isa is not None:  # the compiler launcher holds it (building/hip_launcher.sh)
            job_env.update(recipe.host_isa.environment())
        if stable is not None:
            job_env.update(_torch_stable_env(job_env, stable))
        translated = _cmake_build_type(job_env)
        if translated is not None:
            job_env["SKBUILD_CMAKE_BUILD_TYPE"] = translated
            self.notes[
                f"CMAKE_ARGS sets -DCMAKE_BUILD_TYPE={translated}, which scikit-build-core ignores "
                '("Unsupported CMAKE_ARGS ignored"): the build also sets SKBUILD_CMAKE_BUILD_TYPE='
                f"{translated} (its cmake.build-type); other backends read CMAKE_ARGS"
            ] = None
        return Job(
            id=jid,
            python=python,
            cp_tag=values["cp"],
            rocm=rocm,
            torch=torch,
            torch_requirement=requirement,
            torch_index_url=index_url,
            archs=archs,
            version=version,
            policy=recipe.manylinux.policy,
            platform_tag=f"{recipe.manylinux.policy}_x86_64",
            ceilings=self.ceilings,
            exclude_globs=globs,
            env=dict(sorted(job_env.items())),
            toolchain=self.toolchains[rocm][0],
            image_profile=recipe.image.label,
            image=recipe.image,
            hooks=hooks,
            axes=dict(extra),
            ceilings_from_images=recipe.manylinux.from_images,
            regression_baseline=recipe.gate.no_regression_against,
            sysroot=recipe.manylinux.sysroot,
            wheel_tag=recipe.wheel.tag,
            serves=serves or (python,),
            rocm_pip=recipe.rocm_pip,
            torch_stable=stable,
        )

    def check_rules_used(self) -> None:
        """An exclude rule that matched no combination is a mistake in the recipe."""
        for n, hits in enumerate(self.rule_hits):
            if hits == 0:
                rule = self.recipe.matrix.exclude[n]
                shown = ", ".join(f"{a}={v}" for a, v in rule.values)
                raise self.recipe.error(
                    f"matrix.exclude[{rule.index}] ({shown}) matches no combination",
                    ("matrix", "exclude", rule.index),
                    hint="zipped axes only combine as paired; check the values",
                )


def _cell_jobs(run: _Expansion, extra_names: Sequence[str]) -> tuple[list[Job], list[Skipped]]:
    """The jobs of a Python-independent wheel (``wheel: {abi: py3-none}`` or ``abi3``): one per
    (ROCm, torch, extra axes) cell, built with the lowest CPython the cell serves and serving every
    Python of the cell that no exclude rule or torch pin leaves out. A combination left out is
    skipped under its per-Python id (``cp310-rocm7.2``), with the reason."""
    recipe = run.recipe
    prefix = recipe.wheel.id_prefix
    cells: dict[tuple[str | None, ...], list[_Combo]] = {}
    skipped: list[Skipped] = []
    for combo in _combinations(recipe):
        key = (combo["rocm"], combo["torch"], *(combo[n] for n in extra_names))
        reason = run.skip_reason(combo)
        if reason is not None:
            extra = [(n, str(combo[n])) for n in extra_names]
            python, rocm = combo["python"], combo["rocm"]
            assert python is not None and rocm is not None
            cell_id = job_id(python, rocm, combo["torch"], extra, prefix=prefix)
            skipped.append(
                Skipped(
                    job_id(python, rocm, combo["torch"], extra), f"{reason} ({cell_id} does not serve it)"
                )
            )
            cells.setdefault(key, [])
            continue
        cells.setdefault(key, []).append(combo)
    jobs: list[Job] = []
    for served in cells.values():
        if not served:
            continue
        pythons = sorted({str(c["python"]) for c in served}, key=Version)
        first = next(c for c in served if c["python"] == pythons[0])
        extra = [(n, str(first[n])) for n in extra_names]
        jid = run.new_id(first, extra, prefix=prefix)
        jobs.append(run.job(jid, first, extra, tuple(pythons)))
    return jobs, skipped


def _cmake_build_type(env: Mapping[str, str]) -> str | None:
    """The build type a ``-DCMAKE_BUILD_TYPE[:STRING]=X`` in ``CMAKE_ARGS`` asks for (the last one), when
    ``SKBUILD_CMAKE_BUILD_TYPE`` does not say already: scikit-build-core drops that definition from
    CMAKE_ARGS with a warning in the job log only and builds Release, so the plan translates it."""
    if "SKBUILD_CMAKE_BUILD_TYPE" in env:
        return None
    found = None
    for word in shlex.split(env.get("CMAKE_ARGS", "")):
        name, sep, value = word.removeprefix("-D").partition("=")
        if word.startswith("-D") and sep and name.split(":", 1)[0] == "CMAKE_BUILD_TYPE" and value:
            found = value
    return found


def expand(
    recipe: Recipe,
    env: Mapping[str, str] | None = None,
    *,
    cli_archs: str | None = None,
    enumerator: Callable[[], list[str]] | None = None,
    ceilings_reader: CeilingsReader | None = None,
) -> Plan:
    """Expand ``recipe`` into a :class:`~buildkit.plan.models.Plan`.

    ``env`` (default ``os.environ``) feeds ``archs: {from: env}``; ``cli_archs`` and ``enumerator``
    go to :func:`buildkit.plan.archs.resolve`; ``ceilings_reader``: :mod:`buildkit.plan.from_image`.
    """
    base = _base_version(recipe)
    releases = _releases(recipe)
    toolchains = _toolchains(recipe, releases)
    ceilings, plan_notes = image_ceilings(recipe, ceilings_reader)
    run = _Expansion(
        recipe=recipe,
        environ=os.environ if env is None else env,
        cli_archs=cli_archs,
        enumerator=enumerator,
        base=base,
        releases=releases,
        toolchains=toolchains,
        ceilings=ceilings,
        notes=dict.fromkeys(plan_notes),
    )
    jobs: list[Job] = []
    skipped: list[Skipped] = []
    extra_names = [n for n, _ in recipe.matrix.axes]
    if recipe.wheel.per_python:
        for combo in _combinations(recipe):
            extra = [(n, str(combo[n])) for n in extra_names]
            jid = run.new_id(combo, extra)
            reason = run.skip_reason(combo)
            if reason is not None:
                skipped.append(Skipped(jid, reason))
            else:
                jobs.append(run.job(jid, combo, extra))
    else:
        jobs, skipped = _cell_jobs(run, extra_names)
    run.check_rules_used()
    # what the image cannot build and wheels of one file name: every problem at once, before any build
    problems = [*feasibility.image_problems(recipe), *feasibility.same_name_problems(recipe, jobs)]
    if problems:
        raise RecipeError.combine(problems)
    note = feasibility.exclude_note(recipe)
    if note is not None:
        run.notes[note] = None
    return Plan(recipe=recipe, jobs=tuple(jobs), skipped=tuple(skipped), notes=tuple(run.notes))
