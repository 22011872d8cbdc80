"""What the gate enforces: a :class:`GateConfig` from flags, a plan job or a recipe job, and the
identity (:class:`JobIdentity`) a job's wheel must carry."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from buildkit import rocm as rocmdata  # its release data loads only when a pin asks for it
from buildkit.errors import UsageError
from buildkit.gate import options
from buildkit.gate.options import MERGES, GateOption, job_values
from buildkit.gate.sdk import RocmFromPip
from buildkit.gatespec import Required, Waiver
from buildkit.policy import (
    CEILING_PREFIXES,
    split_policy_name,
    version_tuple,
)
from buildkit.records import Key, json_shape, shape_of, to_data
from buildkit.targets import parse_target_id
from buildkit.units import MiB

if TYPE_CHECKING:
    from buildkit.plan.models import Job
    from buildkit.recipe import Recipe


DEFAULT_SIZE_WARN = 100 * MiB  # PyPI's default per-file limit
#: the default of the mapping fields: one shared object, so read-only
_NO_MAPPING: Mapping[str, str] = MappingProxyType({})


# per-Python jobs' identity leaves wheel_tag out (their inputs key stays what it was)
@json_shape("name", "version", Key("python_tag", "python"), "platform_tag", Key("wheel_tag", omit="none"))
class JobIdentity(NamedTuple):
    """Which wheel a plan job makes: the ``job-identity`` rule holds the wheel's file name to it.

    Set by :meth:`GateConfig.from_job` (``name`` and the recipe fields None: no recipe at hand) and
    :meth:`GateConfig.from_job` with the job's recipe; never by the command line's options alone."""

    job: str  # "cp312-rocm7.2-torch2.10"
    version: str  # the plan's version, "0.1.12.post2+rocm7.2.manylinux.2.28"
    python: str  # the job's CPython tag, "cp312"
    platform_tag: str  # the job policy's tag, "manylinux_2_28_x86_64"
    name: str | None = None  # the recipe's distribution name, "amd-aiter"
    recipe: str | None = None  # the recipe file as given
    #: the recipe's build digest (``Recipe.build_sha256``: less ``publish:`` and ``smoke:``, which cannot
    #: change what the gate holds a wheel to)
    recipe_sha256: str | None = None
    #: a Python-independent wheel's interpreter-abi tag (the recipe's ``wheel:``): ``py3-none`` or
    #: ``cp312-abi3``, the only tag the wheel may carry, its claim checked on the host code; None:
    #: the wheel serves ``python`` alone
    wheel_tag: str | None = None

    @classmethod
    def of(cls, job: Job, recipe: Recipe | None = None) -> JobIdentity:
        return cls(
            job=job.id,
            version=job.version,
            python=job.cp_tag,
            platform_tag=job.platform_tag,
            name=recipe.name if recipe is not None else None,
            recipe=recipe.display_path if recipe is not None else None,
            recipe_sha256=recipe.build_sha256 if recipe is not None else None,
            wheel_tag=job.wheel_tag,
        )


def _globs(required: tuple[Required, ...]) -> list[str]:
    return [r.glob for r in required]


def _annotation(cls: type, name: str) -> str:
    """A field's annotation as written (a NamedTuple keeps it as a ForwardRef)."""
    found = cls.__annotations__[name]
    return str(getattr(found, "__forward_arg__", found))


#: the fields :meth:`GateConfig.from_json` reads itself (records of their own)
_READ_HERE = ("identity", "waivers", "required", "rocm_pip")
#: how :meth:`GateConfig.from_json` reads a field back, by its annotation (a number of bytes is
#: checked after); the fields of other types it reads itself
_READERS: dict[str, Callable[[Any], Any]] = {
    "str | None": lambda value: value,
    "int | None": lambda value: value,
    "bool": bool,
    "tuple[str, ...]": lambda value: tuple(str(v) for v in value or ()),
    "Mapping[str, str]": lambda value: {str(k): str(v) for k, v in (value or {}).items()},
}


# --------------------------------------------------------------------------- configuration
# every field, in field order (a new field is in the JSON by being declared): the identity with the
# job, recipe and sha256 it names first, the required globs without where they were given, rocm_pip
# only when set
@json_shape(
    fields={
        "identity": (
            *(Key(name, f"identity.{name}") for name in ("job", "recipe", "recipe_sha256")),
            "identity",
        ),
        "required": Key("required", convert=_globs),
        "rocm_pip": Key("rocm_pip", omit="none"),
        "torch_stable": Key("torch_stable", omit="none"),
        "torch_below": Key("torch_below", omit="none"),
        # off by default: absent, so the JSON (and build's gate key) of a configuration without them
        # is what it was before they existed
        "isa_report": Key("isa_report", omit="default"),
        "isa_strict": Key("isa_strict", omit="default"),
        "isa_baseline": Key("isa_baseline", omit="none"),
    }
)
class GateConfig(NamedTuple):
    """What the gate enforces. Build it directly (then :meth:`validated`), from the command line's
    options (:func:`~buildkit.gate.options.apply_options` over the defaults), a plan Job
    (:meth:`from_job`), with its recipe as ``build`` does.

    ``policy`` None: the tags in the wheel's file name are still checked against the symbols, and the
    ceilings default to the strictest manylinux tag the file name claims (none if it claims none).
    ``identity`` (from a job only): the wheel must be that job's (name, version, Python and platform
    tags: the ``job-identity`` rule).

    A NamedTuple (``check``'s start-up cannot afford a dataclass): the values are checked by
    :meth:`validated`, which the ``from_*`` constructors and :func:`~buildkit.gate.evaluate.evaluate`
    call, so a configuration built directly is refused when it is used.

    The fields' order is their JSON's (a new field goes last), and a field of a plain type
    (:data:`_READERS`) is read back by :meth:`from_json` by that type: a new setting is a field here
    and its option a row of :mod:`buildkit.gate.options`.
    """

    policy: str | None = None
    ceilings: Mapping[str, str] = _NO_MAPPING  # prefix -> max version; overrides policy's
    exclude_globs: tuple[str, ...] = ()
    archs: tuple[str, ...] = ()  # requested target ids ("gfx90a", "gfx90a:xnack-")
    match_features: bool = False  # compare target-id features too, not only the processor
    torch: str | None = None  # "2.10": METADATA must require a torch compatible with 2.10 only
    size_warn: int | None = DEFAULT_SIZE_WARN
    size_limit: int | None = None
    rocm: str | None = None  # the pinned ROCm release: HIP objects must link its runtime SONAMEs
    rocm_sonames: Mapping[str, str] = _NO_MAPPING  # "libamdhip64" -> "libamdhip64.so.7"
    #: the ROCm packaging the wheel was built with (toolchains.yaml, "debian-trixie"): its SONAMEs are
    #: the expected ones; None: AMD's release ``rocm``
    toolchain: str | None = None
    identity: JobIdentity | None = None  # the job whose wheel this must be (job-identity rule)
    #: the recipe's ``gate.waive``: findings they match are accepted (shown, not failing); each must
    #: match one (``waiver-unused``)
    waivers: tuple[Waiver, ...] = ()
    #: wheel members the build must produce (fnmatch globs; the recipe's ``gate.require``, or
    #: ``check --require``), each with where it was given ("gate.require[0] (recipe.yaml:40:9)")
    required: tuple[Required, ...] = ()
    #: the torch the ``torch-abi`` rule checks the wheel's symbols against: a torch wheel's path, an
    #: installed torch folder or a runtime image (``check --torch-abi``); None: the rule does not run.
    #: ``build`` sets it for a hermetic torch job: the torch wheel of its lock, the one it built against
    torch_abi: str | None = None
    #: the most device code one gfx target may take in the wheel's members (``size-per-target``)
    size_per_target: int | None = None
    #: the gfx processor a device wheel of ``buildkit split`` is for (``"gfx942"``): every member but
    #: its metadata must be a code object of that processor (the ``device-wheel`` rule); None: not one
    device_target: str | None = None
    #: ROCm from pip (the recipe's ``rocm: {from: pip}``): the pinned SDK release's wheels and the
    #: other releases known, gathered outside the gate (``rocm-pip-*`` rules); None: ROCm is the system's
    rocm_pip: RocmFromPip | None = None
    #: a wheel on the libtorch stable ABI (the recipe's ``torch: {abi: stable, from: "2.10"}``): the
    #: lowest torch it declares; it may need from torch only the stable C shim, each function in that
    #: torch (``torch-stable-abi``), and METADATA requires torch>= it (``torch-pin``). None: not one
    torch_stable: str | None = None
    #: with ``torch_stable``, the upper bound the recipe asks for (``below: "3.0"``: ``torch<3.0``);
    #: None: METADATA bounds torch from below only
    torch_below: str | None = None
    #: the ``host-isa`` rule: report the x86-64 levels of each host ELF's instructions (a warning per
    #: ELF above ``isa_baseline``); ``isa_strict`` refuses them (and implies the report)
    isa_report: bool = False
    isa_strict: bool = False
    #: the x86-64 level the host code may use (the recipe's ``host_isa.level``); None: the policy's
    #: baseline, x86-64 (v1) for every manylinux and musllinux policy
    isa_baseline: str | None = None

    @property
    def isa_scan(self) -> bool:
        """The wheel's host code must be disassembled for the ``host-isa`` rule."""
        return self.isa_report or self.isa_strict

    def validated(self) -> GateConfig:
        """This configuration, once its values are known to be sound; else a UsageError naming the
        bad one (an unknown policy or ceiling prefix, a ceiling or torch pin that is no version, a
        size limit that is not positive)."""
        if self.policy is not None:
            # any architecture: the policy is resolved for the wheel's own (evaluate); a name that is
            # no manylinux/musllinux policy raises UsageError naming the known ones
            split_policy_name(self.policy)
        for prefix, value in self.ceilings.items():
            if prefix not in CEILING_PREFIXES:
                raise UsageError(f"unknown ceiling {prefix!r}; known: {', '.join(CEILING_PREFIXES)}")
            if version_tuple(value) is None:
                raise UsageError(f"ceiling {prefix}={value!r} is not a dotted version such as 2.28")
        for what, given in (("torch pin", self.torch), ("stable-ABI torch", self.torch_stable)):
            parts = (given or "0.0").split(".")
            if len(parts) != 2 or not all(p.isdigit() for p in parts):
                raise UsageError(f"{what} {given!r} must be MAJOR.MINOR, e.g. 2.10")
        if self.torch_stable is not None:
            # the recipe section's floor, only for a stable-ABI wheel (the recipe package is heavy)
            from buildkit.recipe.sections.torch import STABLE_FLOOR

            if (version_tuple(self.torch_stable) or ()) < (version_tuple(STABLE_FLOOR) or ()):
                raise UsageError(
                    f"stable-ABI torch {self.torch_stable}: torch versions its stable C shim from "
                    f"{STABLE_FLOOR} on, so the lowest torch a stable-ABI wheel may declare is {STABLE_FLOOR}"
                )
            if self.torch is not None:
                raise UsageError("a wheel is pinned to one torch (torch) or on its stable ABI, not both")
        if self.torch_below is not None and (
            self.torch_stable is None or version_tuple(self.torch_below) is None
        ):
            raise UsageError(f"torch_below {self.torch_below!r}: a version, with torch_stable only")
        if self.size_limit is not None and self.size_limit <= 0:
            raise UsageError("size limit must be positive")
        if self.size_per_target is not None and self.size_per_target <= 0:
            raise UsageError("the size limit per gfx target must be positive")
        if self.isa_baseline not in (None, "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"):
            raise UsageError(
                f"x86-64 level {self.isa_baseline!r}: give x86-64, x86-64-v2, x86-64-v3 or x86-64-v4"
            )
        if self.device_target is not None:
            target = parse_target_id(self.device_target)  # ArchError naming an unknown processor
            if target.features or str(target) != self.device_target:
                raise UsageError(
                    f"device target {self.device_target!r}: give a processor alone, e.g. {target.name}"
                )
        return self

    @classmethod
    def from_job(cls, job: Job, recipe: Recipe | None = None) -> GateConfig:
        """A plan job's configuration; with its recipe, what ``build`` gates the job's wheel with (and
        ``check --recipe R --job ID``, the options given then applied by
        :func:`~buildkit.gate.options.apply_options`). Every option's field is read where its row of
        :data:`~buildkit.gate.options.OPTIONS` says (:func:`~buildkit.gate.options.job_values`);
        computed here, as no option gives them: the runtime SONAMEs of the job's ROCm (a lookup in
        the release data), the job's identity (with the recipe's name, file and sha256) and the
        recipe's waivers."""
        return cls(
            **job_values(job, recipe),
            rocm_sonames=rocmdata.expected_sonames(job.rocm, toolchain=job.toolchain),
            identity=JobIdentity.of(job, recipe),
            waivers=() if recipe is None else recipe.gate.waive,
        ).validated()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GateConfig:
        """The configuration :func:`~buildkit.records.to_data` (or ``build``'s ``gate_key``, which leaves
        out the recipe's path) gave, validated; a field of the wrong shape is a UsageError naming it.
        ``required`` globs come back with ``where`` "the manifest". The inverse of
        :func:`~buildkit.records.to_data` for every field the gate reads."""
        # the readers first: a field of a type without one is a bug here, not a bad document
        read = {name: _READERS[_annotation(cls, name)] for name in cls._fields if name not in _READ_HERE}
        try:
            identity = None
            if isinstance(data.get("identity"), Mapping):
                ident = data["identity"]
                identity = JobIdentity(
                    job=str(data["job"]),
                    version=str(ident["version"]),
                    python=str(ident["python_tag"]),
                    platform_tag=str(ident["platform_tag"]),
                    name=None if ident.get("name") is None else str(ident["name"]),
                    recipe=None if data.get("recipe") is None else str(data["recipe"]),
                    recipe_sha256=None if data.get("recipe_sha256") is None else str(data["recipe_sha256"]),
                    wheel_tag=None if ident.get("wheel_tag") is None else str(ident["wheel_tag"]),
                )
            waivers = tuple(
                Waiver(
                    rule=str(w["rule"]),
                    reason=str(w["reason"]),
                    library=w.get("library"),
                    file=w.get("file"),
                    place=int(str(w.get("at", "gate.waive[0]")).rpartition("[")[2].rstrip("]") or 0),
                    line=w.get("line"),
                    column=w.get("column"),
                )
                for w in data.get("waivers") or ()
            )
            own: dict[str, Any] = {
                "identity": identity,
                "waivers": waivers,
                "required": tuple(Required(str(g), "the manifest") for g in data.get("required") or ()),
                "rocm_pip": RocmFromPip.from_json(data["rocm_pip"]) if data.get("rocm_pip") else None,
            }
            config = cls(
                **{name: own[name] if name in own else read[name](data.get(name)) for name in cls._fields}
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"not a gate configuration: {exc.__class__.__name__}: {exc}") from None
        for name in (n for n in cls._fields if _annotation(cls, n) == "int | None"):
            value = getattr(config, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise UsageError(f"not a gate configuration: {name} is {value!r}, not a number of bytes")
        return config.validated()


#: the last field :class:`GateConfig` had when builds first recorded this key: a field declared after
#: it is in the key only when set (not None), so that a new setting leaves the keys of the builds made
#: before it, and their up-to-date wheels, valid (GateConfig's fields are declared in order, a new
#: one last)
KEYED_UP_TO = "required"
#: the fields in the key only when set
SINCE_KEYED: tuple[str, ...] = GateConfig._fields[GateConfig._fields.index(KEYED_UP_TO) + 1 :]


def gate_key(config: GateConfig) -> dict[str, Any]:
    """The gate configuration as plain JSON data (keys sorted): part of ``build``'s inputs key
    (:func:`~buildkit.building.key.inputs_key`) and what a manifest records for ``publish`` to compare,
    without the recipe's path as typed: its sha256 stays, so the same rules give the same key from
    any folder; a field declared after :data:`KEYED_UP_TO` only when it is set."""
    data: dict[str, Any] = json.loads(json.dumps(to_data(config), sort_keys=True, default=str))
    data.pop("recipe", None)
    for added in SINCE_KEYED:  # keys of builds before the field existed stay valid
        if data.get(added) is None:
            data.pop(added, None)
    return data


# --------------------------------------------------------------------------- documentation
def json_name(row: GateOption) -> str:
    """The key of ``row``'s value in the configuration's JSON (``ceilings.GLIBC``)."""
    shape = shape_of(GateConfig)
    assert shape is not None
    (key,) = [k for k in shape.keys(GateConfig) if (k.attr or k.name) == row.field]
    return key.name if row.key is None else f"{key.name}.{row.key}"


def options_table() -> str:
    """The Markdown table of ``docs/GATE-RULES.md``: one row per option, in table order."""
    rows = [
        "| option | recipe | JSON | with a recipe | what it does |",
        "|--------|--------|------|---------------|--------------|",
    ]
    for row in options.OPTIONS:  # read when called: a test adds a row
        notes = [", ".join(row.choices)] if row.choices else []
        notes += ["repeatable"] if row.kind == "multiple" else []
        flag = f"`{row.flag}`" + (f" ({'; '.join(notes)})" if notes else "")
        recipe = f"`{row.recipe}`" if row.recipe else "-"
        what = row.help.replace("|", "\\|")
        rows.append(f"| {flag} | {recipe} | `{json_name(row)}` | {MERGES[row.merge]} | {what} |")
    return "\n".join(rows) + "\n"
