"""The plan's data: :class:`Job`, :class:`Skipped`, :class:`Plan`, and the job selection every
command that takes a job id shares (:meth:`Plan.job`: one error, one message).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from buildkit.errors import ArchesDropped, UnknownJob
from buildkit.plan.archs import ArchSet, Decision
from buildkit.recipe import Recipe, RocmPip, TorchStable
from buildkit.recipe.sections.hooks import Hooks
from buildkit.recipe.sections.image import ImageSpec
from buildkit.records import Key, json_shape, to_data

_SURROGATE = re.compile(r"[\ud800-\udfff]")


# every field in field order, but: the archs' PYTORCH_ROCM_ARCH beside them, the ceilings' images and
# baseline beside them; the keys only some jobs have (sysroot, ROCm from pip, torch's stable ABI,
# wheel_tag and serves of a Python-independent job) left out otherwise, so that the JSON of the other
# jobs (their manifests, their inputs keys) stays what it was (the plan's JSON gives all jobs those two)
@json_shape(
    fields={
        "archs": ("archs", Key("pytorch_rocm_arch", "archs", convert=ArchSet.pytorch_rocm_arch)),
        "ceilings": ("ceilings", "ceilings_from_images", "regression_baseline"),
        "ceilings_from_images": (),
        "regression_baseline": (),
        "sysroot": Key("sysroot", omit="empty"),
        "wheel_tag": (),
        "serves": (),
        "rocm_pip": Key("rocm_pip", "rocm_pip_requirements", omit="none"),
        "torch_stable": (
            Key(
                "torch_stable",
                omit="none",
                convert=lambda s: {"from": s.lowest, "requirement": s.requirement},
            ),
            Key("wheel_tag", omit="none"),
            Key("serves", "served", omit="none"),
        ),
    }
)
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
    #: the distribution's ROCm packaging the job builds with (the recipe's archs.toolchain), or None
    toolchain: str | None
    image_profile: str  # the image's label: a profile name, dockerfile:<path> or ref:<image>
    #: the recipe's image: profile, own Dockerfile or ref, with extra packages and build args
    image: ImageSpec
    #: the recipe's build hooks and options (before_all, config_settings, build_frontend, ...)
    hooks: Hooks
    axes: Mapping[str, str] = field(default_factory=dict)  # extra matrix axes of this job
    #: runtime images (as the recipe names them) whose libraries lowered ``ceilings``
    ceilings_from_images: tuple[str, ...] = ()
    #: the recipe's ``gate.no_regression_against``: PEP 503 index of the released wheels, or None
    regression_baseline: str | None = None
    #: the compatibility sysroot host code compiles against (the recipe's ``manylinux.sysroot``)
    sysroot: str | None = None
    #: the interpreter-abi tag of a Python-independent wheel (``py3-none``, ``cp312-abi3``: the
    #: recipe's ``wheel:``), None for a wheel of ``python`` alone (``cp312-cp312``)
    wheel_tag: str | None = None
    #: every CPython the job's wheel serves, lowest first: ``(python,)`` for a per-Python wheel; for a
    #: Python-independent one each Python of its cell (``python`` is the lowest, the one it builds with)
    serves: tuple[str, ...] = ()
    #: the recipe's ``rocm_pip:`` (ROCm from pip, the release this job's ``rocm``); None: the system's
    rocm_pip: RocmPip | None = None
    #: the recipe's ``torch: {abi: stable, ...}``: ``torch_requirement`` is then the torch the build
    #: installs (the lowest served), the wheel requiring ``torch_stable.requirement``; None: not one
    torch_stable: TorchStable | None = None

    @property
    def rocm_pip_requirement(self) -> str | None:
        """What the wheel declares with ROCm from pip: ``rocm[libraries]==7.2.*``; None without."""
        return self.rocm_pip.requirement(self.rocm) if self.rocm_pip is not None else None

    @property
    def rocm_pip_build_requirement(self) -> str | None:
        """What its build installs: ``rocm[devel,device-gfx942,libraries]==7.2.*`` (a device extra
        per processor of the job's targets); None without ROCm from pip."""
        if self.rocm_pip is None:
            return None
        processors = sorted({str(t).split(":")[0] for t in self.archs.kept})
        return self.rocm_pip.build_requirement(self.rocm, processors)

    @property
    def target_ids(self) -> tuple[str, ...]:
        """The GPU targets the job compiles for, as text (``gfx90a:xnack-``)."""
        return tuple(str(t) for t in self.archs.kept)

    @property
    def pythons(self) -> tuple[str, ...]:
        """The CPythons this job's wheel serves (``serves``, or the job's own Python)."""
        return self.serves or (self.python,)

    @property
    def rocm_pip_requirements(self) -> dict[str, str | None] | None:
        """What the wheel declares and its build installs with ROCm from pip; None without."""
        if self.rocm_pip is None:
            return None
        return {
            "requirement": self.rocm_pip_requirement,
            "build_requirement": self.rocm_pip_build_requirement,
        }

    @property
    def served(self) -> tuple[str, ...] | None:
        """:attr:`pythons` of a Python-independent job (``wheel_tag``); None for a per-Python one."""
        return self.pythons if self.wheel_tag is not None else None


@json_shape()
@dataclass(frozen=True)
class Skipped:
    id: str
    reason: str


@dataclass(frozen=True)
class Plan:
    recipe: Recipe
    jobs: tuple[Job, ...]
    skipped: tuple[Skipped, ...]
    notes: tuple[str, ...] = ()  # warnings about the plan as a whole (e.g. an image lacking libstdc++)

    def job(self, job_id: str) -> Job:
        """The job ``job_id``; :class:`~buildkit.errors.UnknownJob` (exit 2) naming the known ids."""
        for j in self.jobs:
            if j.id == job_id:
                return j
        known = (
            "known: " + ", ".join(j.id for j in self.jobs)
            if self.jobs
            else "the plan has no jobs (every combination was skipped)"
        )
        raise UnknownJob(
            f"{self.recipe.display_path}: no job {job_id!r} in the plan of {self.recipe.name}; {known}"
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

    def to_json(self) -> dict[str, Any]:
        # hand-written, no JsonShape (buildkit/records.py): the recipe summarised
        r = self.recipe
        return {
            "recipe": {
                "name": r.name,
                # relative: output must not depend on where the checkout lives
                "file": printable(r.path.name),
                "sha256": r.sha256,
                "source": {k: v for k, v in vars(r.source).items() if v is not None},
            },
            "jobs": [{"wheel_tag": None, "serves": list(j.pythons), **to_data(j)} for j in self.jobs],
            "skipped": to_data(self.skipped),
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


def printable(text: str) -> str:
    """``text`` that encodes as UTF-8: a byte a file name smuggled in (``\\xff``, decoded by
    Python as the lone surrogate U+DCFF) is shown as ``\\xff``, any other lone surrogate as
    ``\\udXXX``. Valid text is returned unchanged."""
    return _SURROGATE.sub(_escape_surrogate, text)


def _escape_surrogate(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"
