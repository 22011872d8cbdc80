"""Build plans: a recipe expanded into jobs (python x rocm x torch x extra axes, zip and exclude).

:func:`expand` gives a :class:`Plan` whose jobs have stable ids (``cp312-rocm7.2-torch2.10``;
``cp313-rocm5.7`` without torch), resolved archs, the builder image profile, the wheel version,
the symbol-version ceilings, the repair exclude globs and the build environment. Combinations left
out are kept in :attr:`Plan.skipped` with the reason. The renderers (:func:`render_table`,
:func:`render_json`, :func:`render_github`) give byte-identical output for identical inputs:
sorted keys, no timestamps, no absolute paths.

``manylinux.ceilings.from_image`` is read here, not when the recipe is loaded: each image's
libraries are read by the caller's ``ceilings_reader`` (the commands pass
:func:`buildkit.image.ceilings.ceilings_from_images`: a created-never-started container, cached by image
id) and every job's ceilings become ``tighten(policy and explicit ceilings, minimum across the
images)``. The ceilings are facts of the image ids, so the output stays byte-identical; each job
names the images in ``ceilings_from_images``.
A prefix some image does not define at all (no libstdc++ there) is not tightened, and the plan
carries a note saying so (:attr:`Plan.notes`, shown by the table and the JSON).

Other notes (warnings about the plan; ``buildkit plan`` also prints them on stderr): every arch
dropped for a ROCm release (``--strict`` turns a drop into exit 5, :func:`check_strict`), an arch
environment variable set to another list but ignored, a pinned release whose data is marked
``unverified:`` in buildkit/rocm/releases.yaml, and an explicit ``torch[].index_url`` that the data
knows but does not list as serving that torch for that ROCm release.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from buildkit import rocm as rocm_data
from buildkit import version as ver
from buildkit.errors import ArchesDropped, BuildkitError, DockerUnavailable, RecipeError, UsageError
from buildkit.plan import archs as archs_mod
from buildkit.plan.archs import ArchSet, Decision
from buildkit.policy import CEILING_PREFIXES, version_tuple
from buildkit.recipe import Recipe, TorchPin

#: GitHub Actions refuses a matrix of more than 256 jobs.
GITHUB_MAX_JOBS = 256
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._]+")
_FROM_IMAGE = ("manylinux", "ceilings", "from_image")
_SURROGATE = re.compile(r"[\ud800-\udfff]")

#: Reads the ceilings of runtime images: ``reader(["debian:bookworm-slim"]) -> {"GLIBC": "2.36", ...}``
#: (a prefix the image does not define is left out). The commands pass
#: buildkit.image.ceilings.ceilings_from_images.
CeilingsReader = Callable[[Sequence[str]], Mapping[str, str]]


@dataclass(frozen=True)
class Job:
    id: str
    python: str
    cp_tag: str
    rocm: str
    torch: str | None  # series, "2.10"
    torch_requirement: str | None  # "torch==2.10.*"
    torch_index_url: str | None
    archs: ArchSet
    version: str
    policy: str
    platform_tag: str  # "manylinux_2_28_x86_64"
    ceilings: Mapping[str, str]
    exclude_globs: tuple[str, ...]
    env: Mapping[str, str]
    image_profile: str
    axes: Mapping[str, str] = field(default_factory=dict)  # extra matrix axes of this job
    #: runtime images (as the recipe names them) whose libraries lowered ``ceilings``
    ceilings_from_images: tuple[str, ...] = ()
    #: the recipe's ``gate.no_regression_against``: PEP 503 index of the released wheels, or None
    regression_baseline: str | None = None

    def to_json(self, archs_json: dict[str, Any] | None = None) -> dict[str, Any]:
        """The job as JSON data; ``archs_json`` lets a plan share one ArchSet's JSON between jobs."""
        return {
            "id": self.id,
            "python": self.python,
            "cp_tag": self.cp_tag,
            "rocm": self.rocm,
            "torch": self.torch,
            "torch_requirement": self.torch_requirement,
            "torch_index_url": self.torch_index_url,
            "archs": self.archs.to_json() if archs_json is None else archs_json,
            "pytorch_rocm_arch": self.archs.pytorch_rocm_arch(),
            "version": self.version,
            "policy": self.policy,
            "platform_tag": self.platform_tag,
            "ceilings": dict(self.ceilings),
            "ceilings_from_images": list(self.ceilings_from_images),
            "regression_baseline": self.regression_baseline,
            "exclude_globs": list(self.exclude_globs),
            "env": dict(self.env),
            "image_profile": self.image_profile,
            "axes": dict(self.axes),
        }


@dataclass(frozen=True)
class Skipped:
    id: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "reason": self.reason}


@dataclass(frozen=True)
class Plan:
    recipe: Recipe
    jobs: tuple[Job, ...]
    skipped: tuple[Skipped, ...]
    notes: tuple[str, ...] = ()  # warnings about the plan as a whole (e.g. an image lacking libstdc++)

    def job(self, job_id: str) -> Job:
        for j in self.jobs:
            if j.id == job_id:
                return j
        raise RecipeError(
            f"no job {job_id!r} in the plan of {self.recipe.name}",
            file=self.recipe.display_path,
            hint=(
                "known: " + ", ".join(j.id for j in self.jobs)
                if self.jobs
                else "the plan has no jobs (every combination was skipped)"
            ),
        )

    def dropped_archs(self, job_ids: Collection[str] = ()) -> tuple[tuple[str, Decision], ...]:
        """``(rocm, decision)`` for every requested arch dropped, once per ROCm release; only the
        releases of ``job_ids`` when given."""
        seen: set[str] = set()
        out: list[tuple[str, Decision]] = []
        for j in self.jobs:
            if (job_ids and j.id not in job_ids) or j.rocm in seen:
                continue
            seen.add(j.rocm)
            out.extend((j.rocm, d) for d in j.archs.dropped)
        return tuple(out)

    @staticmethod
    def _archs_json(job: Job, memo: dict[int, dict[str, Any]]) -> dict[str, Any]:
        key = id(job.archs)
        if key not in memo:
            memo[key] = job.archs.to_json()
        return memo[key]

    def to_json(self) -> dict[str, Any]:
        r = self.recipe
        memo: dict[int, dict[str, Any]] = {}
        return {
            "recipe": {
                "name": r.name,
                # relative: output must not depend on where the checkout lives
                "file": printable(r.path.name),
                "sha256": r.sha256,
                "source": {k: v for k, v in vars(r.source).items() if v is not None},
            },
            "jobs": [j.to_json(self._archs_json(j, memo)) for j in self.jobs],
            "skipped": [s.to_json() for s in self.skipped],
            "notes": list(self.notes),
        }


def check_strict(plan: Plan, job_ids: Collection[str] = ()) -> None:
    """``--strict``: raise :class:`ArchesDropped` (exit 5) naming every arch the plan dropped."""
    dropped = plan.dropped_archs(job_ids)
    if dropped:
        n = len(dropped)
        raise ArchesDropped(
            f"--strict: {n} requested arch{'s' if n != 1 else ''} dropped: "
            + "; ".join(f"ROCm {rocm}: {d}" for rocm, d in dropped)
        )


# --------------------------------------------------------------------------------------------
# expansion


def job_id(python: str, rocm: str, torch: str | None, axes: Sequence[tuple[str, str]] = ()) -> str:
    """``cp312-rocm7.2-torch2.10`` (+ ``-prebuild_kernels1`` per extra axis)."""
    out = f"cp{ver.nodot(python)}-rocm{rocm}"
    if torch is not None:
        out += f"-torch{torch}"
    for name, value in axes:
        out += "-" + _ID_UNSAFE.sub("_", f"{name.lower()}{value}")
    return out


def _combinations(recipe: Recipe) -> Iterator[dict[str, str | None]]:
    """Every combination of axis values: zipped axes move together, the rest form a product."""
    axes: list[tuple[str, tuple[str | None, ...]]] = [
        ("python", recipe.python),
        ("rocm", recipe.rocm),
        ("torch", tuple(t.series for t in recipe.torch) or (None,)),
        *recipe.matrix.axes,
    ]
    zipped = set(recipe.matrix.zip)
    groups: list[list[dict[str, str | None]]] = []
    zip_group: list[dict[str, str | None]] | None = None
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
        combo: dict[str, str | None] = {}
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


def _read_image(recipe: Recipe, index: int, image: str, reader: CeilingsReader) -> dict[str, str]:
    """One image's ceilings via ``reader``; failures name the recipe position of the image."""
    at = (*_FROM_IMAGE, index)
    try:
        got = reader([image])
    except DockerUnavailable as exc:
        pos = recipe.spans.value(at)
        where = f"{recipe.display_path}:{pos[0]}:{pos[1]}: " if pos else f"{recipe.display_path}: "
        raise DockerUnavailable(f"{where}manylinux.ceilings.from_image: {exc}") from None
    except UsageError as exc:
        raise recipe.error(f"manylinux.ceilings.from_image: {exc}", at) from None
    return {p: str(got[p]) for p in CEILING_PREFIXES if got.get(p) is not None}


def _engine_reader() -> CeilingsReader:
    """The reader used when :func:`expand`'s caller passed none: ceilings read on the Docker engine.

    Callers own the choice of reader: the ``plan``, ``build`` and ``verify`` commands pass
    :func:`buildkit.image.ceilings.ceilings_from_images` themselves, tests pass recorded readers. This
    fallback remains for callers that take no reader (``buildkit.gate.check.find_job``, behind
    ``check --recipe --job``). It imports the Docker-facing module only here, when a recipe names
    ``from_image`` images and no reader was given, never when plan is imported: expanding a recipe
    without ``from_image`` never loads the Docker SDK.
    """
    from buildkit.image.ceilings import ceilings_from_images

    return ceilings_from_images


def image_ceilings(
    recipe: Recipe, reader: CeilingsReader | None = None
) -> tuple[dict[str, str], tuple[str, ...]]:
    """``(ceilings, notes)``: the recipe's ceilings tightened by ``manylinux.ceilings.from_image``.

    Per prefix the minimum across the images, then the lower of that and the policy's (or the
    recipe's explicit) ceiling, as :func:`buildkit.image.ceilings.tighten`. A prefix some image does not
    define is left to the recipe's ceiling, as :func:`buildkit.image.ceilings.minimum_ceilings` does, and a
    note names the image. Without ``from_image``: the recipe's ceilings, no note, Docker untouched.
    """
    m = recipe.manylinux
    if not m.from_images:
        return dict(m.ceilings), ()
    from buildkit.image.ceilings import PROVIDERS, tighten

    read = reader if reader is not None else _engine_reader()
    readings = [(image, _read_image(recipe, i, image, read)) for i, image in enumerate(m.from_images)]
    absent = {p for _image, got in readings for p in CEILING_PREFIXES if p not in got}
    minimum: dict[str, str] = {}
    for prefix in CEILING_PREFIXES:
        values = [got[prefix] for _image, got in readings if prefix in got]
        if values and prefix not in absent:
            minimum[prefix] = min(values, key=lambda v: version_tuple(v) or ())
    ceilings = dict(sorted(tighten(m.ceilings, minimum).items()))
    notes = []
    for image, got in readings:
        missing = [p for p in CEILING_PREFIXES if p not in got]
        if not missing:
            continue
        libs = ", ".join(sorted({PROVIDERS.get(p, p) for p in missing}))
        kept = ", ".join(f"{p} {ceilings[p]}" for p in missing if p in ceilings) or "none"
        notes.append(
            f"manylinux.ceilings.from_image: {image} defines no {'/'.join(missing)} (no {libs} there): "
            f"a wheel needing {libs} will not load in it unless it bundles it; those ceilings stay "
            f"{m.policy}'s or the recipe's ({kept})"
        )
    return ceilings, tuple(notes)


def _join(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _same_url(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def _serving(torch: str) -> str:
    """Which releases' download.pytorch.org index serves torch ``torch``, per buildkit's data."""
    series = ".".join(torch.split(".")[:2])
    found = [(r.version, r.torch_index_for(torch)) for r in rocm_data.releases()]
    shown = [f"{version} ({url})" for version, url in found if url is not None]
    if not shown:
        return f"no download.pytorch.org index in buildkit's ROCm data serves torch {series}"
    return f"torch {series} is on the index of ROCm {_join(shown)}"


def _torch_facts(torch: str, release: rocm_data.RocmRelease) -> str:
    """What buildkit's ROCm data says about torch ``torch`` ("2.9") and ``release``'s index: the
    releases whose download.pytorch.org index serves that torch, and what the release's serves."""
    urls = [i.url for i in release.torch_indexes]
    if urls:
        own = (
            f"ROCm {release.version}'s index ({', '.join(urls)}) serves torch {_join(release.torch_versions)}"
        )
    else:
        own = f"buildkit's ROCm data knows no download.pytorch.org index for ROCm {release.version}"
    return f"{_serving(torch)}; {own}"


def _missing_index_hint(pin: TorchPin, release: rocm_data.RocmRelease) -> str:
    return (
        f"{_torch_facts(pin.version, release)}: pin one of those pairs, or set index_url only to an "
        f"index known to serve torch {pin.series} built for ROCm {release.version}"
    )


def _index_note(index: int, pin: TorchPin, release: rocm_data.RocmRelease) -> str | None:
    """A note when the explicit ``index_url`` is an index buildkit's data knows, and the data does
    not list it as serving this torch for this release (None: listed, or an index it does not know)."""
    url = pin.index_url
    assert url is not None
    listed = [(r.version, i) for r in rocm_data.releases() for i in r.torch_indexes if _same_url(i.url, url)]
    if not listed:
        return None
    if any(v == release.version and pin.series in i.torch for v, i in listed):
        return None
    there = "; ".join(f"ROCm {v} with torch {_join(i.torch)}" for v, i in listed)
    return (
        f"torch[{index}] {pin.series} on ROCm {release.version}: index_url {url} is, in buildkit's ROCm "
        f"data, the index of {there}, not one serving torch {pin.series} for ROCm {release.version}; "
        f"{_serving(pin.version)}"
    )


def _arch_notes(rocm: str, archs: ArchSet) -> list[str]:
    return [f"ROCm {rocm}: {d}" for d in archs.dropped] + list(archs.warnings)


def expand(
    recipe: Recipe,
    env: Mapping[str, str] | None = None,
    *,
    cli_archs: str | None = None,
    enumerator: Callable[[], list[str]] | None = None,
    ceilings_reader: CeilingsReader | None = None,
) -> Plan:
    """Expand ``recipe`` into a :class:`Plan`.

    ``env`` (default ``os.environ``) feeds ``archs: {from: env}``; ``cli_archs`` and ``enumerator``
    are passed to :func:`buildkit.plan.archs.resolve`. ``ceilings_reader`` reads the ceilings of the
    recipe's ``manylinux.ceilings.from_image`` images, one image per call; it is not called when the
    recipe names no image. Callers that can reach the engine pass
    :func:`buildkit.image.ceilings.ceilings_from_images` (DockerUnavailable, exit 8, when the engine is down
    or an image is missing); without one, the same reader is imported lazily (:func:`_engine_reader`).
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    base = _base_version(recipe)
    releases = {}
    for i, rel in enumerate(recipe.rocm):
        try:
            releases[rel] = rocm_data.get_release(rel)
        except BuildkitError as exc:
            raise recipe.error(f"rocm[{i}]: {exc}", ("rocm", i)) from None
    toolchain_archs: tuple[str, ...] | None = None
    toolchain_id = recipe.archs.toolchain
    if recipe.archs.toolchain is not None:
        try:
            toolchain = rocm_data.get_toolchain(recipe.archs.toolchain)
        except BuildkitError as exc:
            raise recipe.error(f"archs.toolchain: {exc}", ("archs", "toolchain")) from None
        for i, rel in enumerate(recipe.rocm):
            if releases[rel].version != rocm_data.get_release(toolchain.rocm).version:
                raise recipe.error(
                    f"rocm[{i}]: toolchain {toolchain.id} packages ROCm {toolchain.rocm}, not {rel}",
                    ("rocm", i),
                    hint="a distribution toolchain builds against its own ROCm only",
                )
        toolchain_archs = toolchain.archs
    pins: dict[str, tuple[int, TorchPin]] = {t.series: (i, t) for i, t in enumerate(recipe.torch)}
    policy = recipe.manylinux.policy
    platform_tag = f"{policy}_x86_64"
    ceilings, plan_notes = image_ceilings(recipe, ceilings_reader)

    arch_cache: dict[str, ArchSet] = {}
    arch_env: dict[str, dict[str, str]] = {}
    values_cache: dict[tuple[str, str, str | None], dict[str, str]] = {}
    glob_cache: dict[str, tuple[str, ...]] = {}
    version_cache: dict[tuple[tuple[str, str], ...], str] = {}
    used_fields = set(ver.template_fields(recipe.version.local))
    rule_hits = [0] * len(recipe.matrix.exclude)
    jobs: list[Job] = []
    skipped: list[Skipped] = []
    notes: dict[str, None] = dict.fromkeys(plan_notes)  # insertion-ordered, without duplicates
    noted: set[tuple[int | str, str]] = set()  # (torch index or "unverified", rocm) already looked at
    seen_ids: set[str] = set()
    extra_names = [n for n, _ in recipe.matrix.axes]

    for combo in _combinations(recipe):
        python = combo["python"]
        rocm = combo["rocm"]
        assert python is not None and rocm is not None
        torch = combo["torch"]
        extra = [(n, str(combo[n])) for n in extra_names]
        jid = job_id(python, rocm, torch, extra)
        if jid in seen_ids:
            raise recipe.error(
                f"two combinations share the job id {jid!r}",
                ("matrix",),
                hint="give matrix.axes values that differ in letters or digits",
            )
        seen_ids.add(jid)

        reason = None
        for n, rule in enumerate(recipe.matrix.exclude):
            if all(combo.get(axis) == value for axis, value in rule.values):
                rule_hits[n] += 1
                if reason is None:
                    why = f": {rule.reason}" if rule.reason else ""
                    reason = f"excluded by matrix.exclude[{rule.index}]{why}"
        pin_index, pin = pins[torch] if torch is not None else (-1, None)
        if (
            reason is None
            and pin is not None
            and pin.python is not None
            and not pin.python.contains(Version(python))
        ):
            reason = (
                f"torch {pin.series} ships no wheels for Python {python} "
                f"(torch[{pin_index}].python is {str(pin.python)!r})"
            )
        if reason is not None:
            skipped.append(Skipped(jid, reason))
            continue

        archs = arch_cache.get(rocm)
        if archs is None:
            archs = archs_mod.resolve(
                rocm=rocm,
                cli_archs=cli_archs,
                recipe_archs=recipe.archs.list,
                allow=recipe.archs.allow,
                env=environ,
                enumerator=enumerator,
                toolchain_archs=toolchain_archs,
                toolchain=toolchain_id,
            )
            arch_cache[rocm] = archs
            arch_env[rocm] = {"PYTORCH_ROCM_ARCH": archs.pytorch_rocm_arch(), "GPU_ARCHS": archs.gpu_archs()}
            notes.update(dict.fromkeys(_arch_notes(rocm, archs)))
        # the release's data is used for its arch list (no toolchain) or its torch index
        if (toolchain_archs is None or pin is not None) and ("unverified", rocm) not in noted:
            noted.add(("unverified", rocm))
            notes.update(
                dict.fromkeys(
                    f"ROCm {rocm}: buildkit's data for this release is marked unverified: {text}"
                    for text in releases[rocm].unverified
                )
            )

        globs = glob_cache.get(rocm)
        if globs is None:
            found = rocm_data.exclude_globs(recipe.exclude_sets, rocm)
            globs = tuple(sorted(set(found) | set(recipe.exclude_patterns)))
            glob_cache[rocm] = globs

        values_key = (rocm, python, torch)
        values = values_cache.get(values_key)
        if values is None:
            values = ver.template_values(rocm=rocm, policy=policy, python=python, torch=torch)
            values_cache[values_key] = values
        if extra:
            values = {**values, **dict(extra)}
        key = tuple(sorted((k, v) for k, v in values.items() if k in used_fields))
        version = version_cache.get(key)
        if version is None:
            try:
                version = ver.render_version(base, recipe.version.local, values)
            except ver.VersionProblem as exc:
                raise recipe.error(f"version.local: {exc}", ("version", "local")) from None
            version_cache[key] = version

        index_url = None
        if pin is not None:
            index_url = pin.index_url or releases[rocm].torch_index_for(pin.version)
            if index_url is None:
                raise recipe.error(
                    f"torch[{pin_index}] has no index_url, and buildkit's ROCm data knows no index "
                    f"serving torch {pin.series} for ROCm {rocm}",
                    ("torch", pin_index),
                    hint=_missing_index_hint(pin, releases[rocm]),
                )
            if pin.index_url is not None and (pin_index, rocm) not in noted:
                noted.add((pin_index, rocm))
                note = _index_note(pin_index, pin, releases[rocm])
                if note is not None:
                    notes[note] = None

        job_env = {**recipe.env, **dict(extra), **arch_env[rocm]}
        jobs.append(
            Job(
                id=jid,
                python=python,
                cp_tag=values["cp"],
                rocm=rocm,
                torch=torch,
                torch_requirement=pin.requirement if pin is not None else None,
                torch_index_url=index_url,
                archs=archs,
                version=version,
                policy=policy,
                platform_tag=platform_tag,
                ceilings=ceilings,
                exclude_globs=globs,
                env=dict(sorted(job_env.items())),
                image_profile=recipe.image,
                axes=dict(extra),
                ceilings_from_images=recipe.manylinux.from_images,
                regression_baseline=recipe.gate.no_regression_against,
            )
        )

    for n, hits in enumerate(rule_hits):
        if hits == 0:
            rule = recipe.matrix.exclude[n]
            shown = ", ".join(f"{a}={v}" for a, v in rule.values)
            raise recipe.error(
                f"matrix.exclude[{rule.index}] ({shown}) matches no combination",
                ("matrix", "exclude", rule.index),
                hint="zipped axes only combine as paired; check the values",
            )
    return Plan(recipe=recipe, jobs=tuple(jobs), skipped=tuple(skipped), notes=tuple(notes))


# --------------------------------------------------------------------------------------------
# rendering


def printable(text: str) -> str:
    """``text`` that encodes as UTF-8: a byte a file name smuggled in (``\\xff``, decoded by
    Python as the lone surrogate U+DCFF) is shown as ``\\xff``, any other lone surrogate as
    ``\\udXXX``. Valid text is returned unchanged."""
    return _SURROGATE.sub(_escape_surrogate, text)


def _escape_surrogate(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def _dumps(obj: Any, *, compact: bool = False) -> str:
    """Sorted-key JSON, non-ASCII kept as UTF-8; a lone surrogate (which has no UTF-8 encoding)
    becomes its JSON escape ``\\udcff``, so the output is always valid UTF-8."""
    if compact:
        text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    else:
        text = json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    # surrogates only occur inside JSON strings, where \uXXXX is a valid escape
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def render_json(plan: Plan) -> str:
    """The plan as JSON: sorted keys, one job (or skipped combination) per line.

    One compact line per job keeps large plans fast to write (the C encoder) and diffs readable.
    """
    data = plan.to_json()
    parts = []
    for key in sorted(data):
        value = data[key]
        if isinstance(value, list) and value:
            body = ",\n".join("  " + _dumps(item, compact=True) for item in value)
            parts.append(f"{json.dumps(key)}: [\n{body}\n]")
        else:
            parts.append(f"{json.dumps(key)}: {_dumps(value, compact=True)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def github_entry(job: Job) -> dict[str, Any]:
    """One ``strategy.matrix.include`` entry: flat strings a workflow step can use directly."""
    return {
        "id": job.id,
        "python": job.python,
        "cp_tag": job.cp_tag,
        "rocm": job.rocm,
        "torch": job.torch or "",
        "torch_index_url": job.torch_index_url or "",
        "version": job.version,
        "policy": job.policy,
        "image_profile": job.image_profile,
        "pytorch_rocm_arch": job.archs.pytorch_rocm_arch(),
    }


def github_matrix(plan: Plan, shard_size: int = GITHUB_MAX_JOBS) -> dict[str, Any]:
    """``{"shards": [{"include": [...]}, ...], "shard_count": n, "job_count": m}``; each shard is a
    valid ``strategy.matrix`` of at most ``shard_size`` (<= 256) jobs."""
    if not 1 <= shard_size <= GITHUB_MAX_JOBS:
        raise ValueError(f"shard size must be within 1..{GITHUB_MAX_JOBS}")
    entries = [github_entry(j) for j in plan.jobs]
    shards = [{"include": entries[i : i + shard_size]} for i in range(0, len(entries), shard_size)]
    return {"job_count": len(entries), "shard_count": len(shards), "shards": shards}


def render_github(plan: Plan, shard_size: int = GITHUB_MAX_JOBS) -> str:
    """Compact one-line JSON, ready for ``echo "matrix=$(...)" >> "$GITHUB_OUTPUT"``."""
    return _dumps(github_matrix(plan, shard_size), compact=True) + "\n"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def render_table(plan: Plan) -> str:
    r = plan.recipe
    lines = [
        f"recipe {printable(r.path.name)} ({r.name}, sha256 {r.sha256[:12]}): "
        f"{len(plan.jobs)} job{'s' if len(plan.jobs) != 1 else ''}, {len(plan.skipped)} skipped",
        "",
    ]
    if plan.jobs:
        rows = [["JOB", "PYTHON", "ROCM", "TORCH", "ARCHS", "IMAGE", "VERSION"]]
        for j in plan.jobs:
            rows.append(
                [
                    j.id,
                    j.python,
                    j.rocm,
                    j.torch or "-",
                    j.archs.pytorch_rocm_arch(),
                    j.image_profile,
                    j.version,
                ]
            )
        lines += _table(rows)
    first = plan.jobs[0] if plan.jobs else None
    if first is not None:
        lines.append("")
        origin = ""
        if first.ceilings_from_images:
            origin = f" (tightened by from_image {', '.join(first.ceilings_from_images)})"
        lines.append(
            f"policy {first.policy}: ceilings "
            + ", ".join(f"{k} {v}" for k, v in sorted(first.ceilings.items()))
            + origin
        )
        if first.regression_baseline is not None:
            lines.append(f"gate: no regression against the last release in {first.regression_baseline}")
    if plan.notes:
        lines.append("")
        lines += [f"note: {n}" for n in plan.notes]
    if plan.skipped:
        lines.append("")
        lines.append("skipped:")
        lines += ["  " + line for line in _table([[s.id, s.reason] for s in plan.skipped])]
    return printable("\n".join(lines) + "\n")


RENDERERS: dict[str, Callable[[Plan], str]] = {
    "table": render_table,
    "json": render_json,
    "github": render_github,
}
