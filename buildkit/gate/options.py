"""The gate's options, as data: one :class:`GateOption` row per command-line option (:data:`OPTIONS`).

A row says everything about one option, once: its flag, the :class:`~buildkit.gate.config.GateConfig`
field it sets (or one entry of a mapping field), where a recipe gives the job's value, how the value
given meets the job's (the merge rule), how the text given becomes the field's value, what else it
sets, and its help. From the table come:

* the click options of the commands that take gate options (``check``; ``diff``'s run-time
  libraries): :func:`buildkit.cli.options.gate_options`;
* a recipe job's values, :func:`job_values`: each row's ``loads`` is where the planned job (or its
  recipe) holds the value its ``recipe`` key gave;
* the precedence between the command line and a recipe's job, :func:`apply_options`, by merge rule:

  - ``replace``: the value given replaces the job's;
  - ``add``: the values given are added to the job's, the job's first and none twice (an option
    never drops an exclusion or a required member the build had);
  - ``tighten``: the stricter of the two (a check is on when either turns it on, a limit the
    smaller);

  without a recipe the same rules apply to :class:`~buildkit.gate.config.GateConfig`'s defaults;
* the JSON of the configuration: each option's field is a key of GateConfig's JSON shape
  (:func:`~buildkit.gate.config.json_name`), which a new field joins by being declared;
* the options table of ``docs/GATE-RULES.md``, which ``buildkit rules`` prints
  (:func:`~buildkit.gate.config.options_table`, kept equal by ``tests/unit/test_gate_options.py``).

A new gate option is one row here (and, for a new setting, its field in GateConfig); with a recipe
key, its ``loads`` path too.

An option given empty (``--policy ""``, as an unset CI variable gives it) is not given; a size must be
a size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar

from buildkit.errors import ArchError, UsageError
from buildkit.gatespec import Required
from buildkit.targets import parse_target_id, split_arch_list
from buildkit.units import parse_size

if TYPE_CHECKING:
    from buildkit.plan.models import Job
    from buildkit.recipe import Recipe

Merge = Literal["replace", "add", "tighten"]
#: how each merge rule reads in the docs
MERGES: dict[str, str] = {
    "replace": "replaces the job's",
    "add": "added to the job's",
    "tighten": "the stricter of the two",
}
#: the named sets of SONAME globs ``--exclude-set`` takes (buildkit/rocm/libraries.yaml)
EXCLUDE_SETS = ("rocm", "rocm-system", "torch")


#: the configuration options apply to: :class:`~buildkit.gate.config.GateConfig`, not named here, as that
#: module imports this table (:func:`job_values`)
C = TypeVar("C")
Configuration = Any


class Given(NamedTuple):
    """What parsing a value may need beyond its text: the ROCm release in effect (``--rocm``,
    else the job's; None without either)."""

    rocm: str | None = None


# --------------------------------------------------------------------------- values
def parse_size_option(text: str, given: Given | None = None) -> int:
    """``"100MiB"``, ``"1.5GB"``, ``"4096"`` -> bytes (the recipe's size syntax)."""
    try:
        return parse_size(text)
    except ValueError:
        if text.strip().isdigit():
            return int(text.strip())
        raise UsageError(f"not a size: {text!r} (use e.g. 100MiB, 2GB or a number of bytes)") from None


def parse_archs(text: str | None, given: Given | None = None) -> tuple[str, ...]:
    """``"gfx908, gfx90a:xnack-"`` -> canonical target ids, each validated the way ``plan`` and
    ``archs`` do (:func:`buildkit.targets.parse_target_id`): an invalid one is ArchError (exit 4),
    not a gate failure for a target no wheel could carry. None or blank: no arch rule."""
    if text is None or not text.strip():
        return ()
    names = split_arch_list(text)
    if not names:
        raise ArchError(f"--archs {text!r} names no GPU arch (give e.g. gfx90a,gfx942)")
    return tuple(dict.fromkeys(str(parse_target_id(name)) for name in names))


def device_processor(text: str, given: Given | None = None) -> str:
    """``--device-target``: a gfx processor (``GFX942`` -> ``gfx942``), validated as ``--archs`` is
    (ArchError, exit 4, for an unknown one); target-id features are a UsageError: a device wheel holds
    every code object of its processor, whatever their xnack/sramecc modes."""
    target = parse_target_id(text)
    if target.features:
        raise UsageError(f"--device-target {text!r}: give the processor alone, e.g. {target.name}")
    return target.name


def exclude_set_globs(sets: Sequence[str], rocm: str | None) -> list[str]:
    """The SONAME globs of named exclusion sets (``rocm``, ``rocm-system``, ``torch``) for ``rocm``."""
    if not sets:
        return []
    from buildkit import rocm as rocm_data  # the ROCm data only with --exclude-set (start-up time)

    return list(rocm_data.exclude_globs(list(sets), rocm))


def _exclude_sets(sets: Sequence[str], given: Given) -> tuple[str, ...]:
    return tuple(exclude_set_globs(sets, given.rocm))


def _required(globs: Sequence[str], given: Given) -> tuple[Required, ...]:
    for glob in globs:
        if not glob.strip() or glob.startswith("/"):
            raise UsageError(f"--require {glob!r}: give a glob on wheel member paths, e.g. pkg/kernels/*.co")
    return tuple(Required(glob, "--require") for glob in dict.fromkeys(globs))


def rocm_pin(rocm: str | None, toolchain: str | None = None) -> dict[str, Any]:
    """The ``rocm``, ``toolchain`` and ``rocm_sonames`` fields of a configuration pinning release
    ``rocm`` (``"7.2"``, ``"rocm7.2"``): the runtime SONAMEs that release ships, as
    :meth:`~buildkit.gate.config.GateConfig.from_job` takes them for a job; with a ``toolchain`` (a
    distribution's ROCm packaging, ``debian-trixie``), its SONAMEs and its release. An unknown release is
    :class:`~buildkit.rocm.UnknownRelease` (exit 2), an unknown toolchain UnknownToolchain (exit 2)."""
    from buildkit import rocm as rocm_data  # the ROCm data only with a pin (start-up time)

    if toolchain is not None:
        chain = rocm_data.get_toolchain(toolchain)
        return {
            "rocm": chain.rocm,
            "toolchain": chain.id,
            "rocm_sonames": rocm_data.expected_sonames(chain.rocm, toolchain=chain.id),
        }
    assert rocm is not None
    version = rocm_data.get_release(rocm).version
    return {"rocm": version, "toolchain": None, "rocm_sonames": rocm_data.expected_sonames(version)}


def _rocm_pin(config: Configuration, flags: GateFlags) -> dict[str, Any]:
    """``--rocm``, ``--toolchain``: the pin (release, toolchain, runtime SONAMEs) replaces the job's
    whole, the toolchain's release with a toolchain."""
    return rocm_pin(flags.get("rocm") or None, flags.get("toolchain") or None)


def _torch_mode(config: Configuration, flags: GateFlags) -> dict[str, Any]:
    """``--torch-stable`` over a job pinned to one torch, ``--torch`` over a stable-ABI job: the mode
    given replaces the job's (a wheel is pinned or on the stable ABI, not both)."""
    if flags.get("torch_stable"):
        return {"torch": None}
    return {"torch_stable": None, "torch_below": None} if flags.get("torch") else {}


def _platform_tag(config: Configuration, flags: GateFlags) -> dict[str, Any]:
    """``--policy``: its platform tag is the one the job-identity rule expects."""
    if config.identity is None or config.policy is None:
        return {}
    from buildkit.policy import policy_tag

    return {"identity": config.identity._replace(platform_tag=policy_tag(config.policy))}


# --------------------------------------------------------------------------- the table
class GateOption(NamedTuple):
    """One gate option: ``flag`` (``--max-glibc``) and ``name`` (the parameter, and its key in
    :class:`GateFlags`); the :class:`~buildkit.gate.config.GateConfig` ``field`` it sets, or its ``key`` entry
    for a mapping; the ``merge`` rule; ``recipe``: where a recipe gives the job's value, in the recipe's
    syntax (None: the command line alone); ``loads``: where :func:`job_values` reads it, a dotted path from
    ``job`` (the planned :class:`~buildkit.plan.models.Job`, its values resolved) or ``recipe`` (None: another
    row loads it); ``kind``: ``text`` (one value), ``multiple`` (repeatable) or ``flag`` (on/off); ``parse``:
    the text given to the field's value (None: the text); ``then``: the fields it sets besides its own, from
    the configuration and the options given, once it applied."""

    flag: str
    name: str
    field: str
    merge: Merge
    help: str
    recipe: str | None = None
    loads: str | None = None
    key: str | None = None
    kind: Literal["text", "multiple", "flag"] = "text"
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    parse: Callable[[Any, Given], Any] | None = None
    then: Callable[[Configuration, GateFlags], dict[str, Any]] | None = None


#: every gate option, in the order the commands list them
OPTIONS: tuple[GateOption, ...] = (
    GateOption(
        "--policy",
        "policy",
        "policy",
        "replace",
        "manylinux policy to enforce, e.g. manylinux_2_28 (default: the job's, else the file name's).",
        recipe="manylinux.policy",
        loads="job.policy",
        then=_platform_tag,
    ),
    GateOption(
        "--max-glibc",
        "max_glibc",
        "ceilings",
        "replace",
        "GLIBC ceiling, e.g. 2.28 (default: the job's, else the policy's).",
        recipe="manylinux.ceilings.GLIBC",
        loads="job.ceilings.GLIBC",
        key="GLIBC",
    ),
    GateOption(
        "--max-glibcxx",
        "max_glibcxx",
        "ceilings",
        "replace",
        "GLIBCXX ceiling, e.g. 3.4.24 (overrides the job's).",
        recipe="manylinux.ceilings.GLIBCXX",
        loads="job.ceilings.GLIBCXX",
        key="GLIBCXX",
    ),
    GateOption(
        "--max-cxxabi",
        "max_cxxabi",
        "ceilings",
        "replace",
        "CXXABI ceiling, e.g. 1.3.11 (overrides the job's).",
        recipe="manylinux.ceilings.CXXABI",
        loads="job.ceilings.CXXABI",
        key="CXXABI",
    ),
    GateOption(
        "--max-gcc",
        "max_gcc",
        "ceilings",
        "replace",
        "GCC (libgcc_s) ceiling, e.g. 7.0.0 (overrides the job's).",
        recipe="manylinux.ceilings.GCC",
        loads="job.ceilings.GCC",
        key="GCC",
    ),
    GateOption(
        "--exclude",
        "exclude",
        "exclude_globs",
        "add",
        "SONAME glob provided at run time, e.g. 'librocblas.so*'; with --recipe, added to the job's.",
        recipe="repair.exclude.patterns",
        loads="job.exclude_globs",
        kind="multiple",
    ),
    GateOption(
        "--exclude-set",
        "exclude_sets",
        "exclude_globs",
        "add",
        "Named exclusion set; with --recipe, added to the job's globs.",
        recipe="repair.exclude.sets",  # in the job's exclude_globs, expanded: --exclude's row loads them
        kind="multiple",
        choices=EXCLUDE_SETS,
        parse=_exclude_sets,
    ),
    GateOption(
        "--rocm",
        "rocm",
        "rocm",
        "replace",
        "ROCm release the wheel is for, e.g. 7.2 (replaces the job's): HIP objects must link its runtime "
        "SONAMEs (libamdhip64.so.7 for 7.x), and --exclude-set rocm expands to its libraries.",
        recipe="rocm",
        loads="job.rocm",
        then=_rocm_pin,
    ),
    GateOption(
        "--toolchain",
        "toolchain",
        "toolchain",
        "replace",
        "A distribution's ROCm packaging the wheel was built with, e.g. debian-trixie (replaces the "
        "job's): HIP objects must link its SONAMEs (libhipblas.so.0), and its release is the pinned one.",
        recipe="archs.toolchain",
        loads="job.toolchain",
        then=_rocm_pin,
    ),
    GateOption(
        "--archs",
        "archs",
        "archs",
        "replace",
        "Comma-separated gfx target ids every HIP object must carry (replaces the job's).",
        recipe="archs",
        loads="job.target_ids",
        parse=parse_archs,
    ),
    GateOption(
        "--match-features",
        "match_features",
        "match_features",
        "tighten",
        "Compare target-id features (xnack-, sramecc+) too.",
        kind="flag",
    ),
    GateOption(
        "--torch",
        "torch",
        "torch",
        "replace",
        "torch MAJOR.MINOR the wheel was built against, e.g. 2.10 (overrides the job's).",
        recipe="torch[].version",
        loads="job.torch",
        then=_torch_mode,
    ),
    GateOption(
        "--torch-stable",
        "torch_stable",
        "torch_stable",
        "replace",
        "The wheel is on the libtorch stable ABI and serves every torch from this MAJOR.MINOR on (2.10 "
        "at least): it may need only torch's stable C shim, each function in that torch "
        "(torch-stable-abi), and METADATA must require torch>= it (torch-pin); replaces a job's torch pin.",
        recipe="torch.from",
        loads="job.torch_stable.lowest",
        then=_torch_mode,
    ),
    GateOption(
        "--torch-below",
        "torch_below",
        "torch_below",
        "replace",
        "With --torch-stable: the upper bound METADATA may give torch (torch<VERSION); without, none.",
        recipe="torch.below",
        loads="job.torch_stable.below",
    ),
    GateOption(
        "--torch-abi",
        "torch_abi",
        "torch_abi",
        "replace",
        "Check every symbol the wheel needs from torch against this torch: a torch wheel (streamed, its "
        "exports cached per sha256), an installed torch folder, or a runtime image (the torch its Python "
        "finds, read in a throwaway container). A missing symbol fails the torch-abi rule, named demangled "
        "with the member needing it and why (a _GLIBCXX_USE_CXX11_ABI mismatch, another signature, ...).",
        metavar="PATH|IMAGE",
    ),
    GateOption(
        "--size-warn",
        "size_warn",
        "size_warn",
        "replace",
        "Warn above this size (default: the recipe's size_budget.warn, else 100MiB).",
        recipe="size_budget.warn",
        loads="recipe.size_budget.warn",
        parse=parse_size_option,
    ),
    GateOption(
        "--size-limit",
        "size_limit",
        "size_limit",
        "replace",
        "Fail above this size (default: the recipe's size_budget.limit).",
        recipe="size_budget.limit",
        loads="recipe.size_budget.limit",
        parse=parse_size_option,
    ),
    GateOption(
        "--size-per-target",
        "size_per_target",
        "size_per_target",
        "replace",
        "Fail when one gfx target's device code takes more than this in the wheel's members (default: "
        "the recipe's size_budget.per_target).",
        recipe="size_budget.per_target",
        loads="recipe.size_budget.per_target",
        parse=parse_size_option,
    ),
    GateOption(
        "--require",
        "required",
        "required",
        "add",
        "A wheel member the build must have produced (fnmatch glob on member paths, `*` crosses '/'; "
        "repeatable; added to the recipe's gate.require): no match fails the wheel (required-member).",
        recipe="gate.require",
        loads="recipe.gate.require",
        kind="multiple",
        metavar="GLOB",
        parse=_required,
    ),
    GateOption(
        "--device-target",
        "device_target",
        "device_target",
        "replace",
        "The wheel is a device wheel of `buildkit split` for this gfx processor, e.g. gfx942: every "
        "member but its metadata must be a code object of it (device-wheel).",
        metavar="GFX",
        parse=device_processor,
    ),
    GateOption(
        "--isa-report",
        "isa_report",
        "isa_report",
        "tighten",
        "Disassemble each x86_64 host ELF (capstone) and report the x86-64 levels its instructions use "
        "(host-isa: a warning per ELF above the baseline, naming an instruction and its symbol; it does "
        "not fail: runtime-dispatched code holds AVX-512 behind cpuid checks). Off by default: seconds "
        "on wheels with much vector code.",
        recipe="host_isa.report",
        loads="recipe.host_isa.report",
        kind="flag",
    ),
    GateOption(
        "--isa-strict",
        "isa_strict",
        "isa_strict",
        "tighten",
        "Refuse a host ELF holding an instruction above the baseline (host-isa error naming the ELF, "
        "the instruction and its symbol), for projects without runtime dispatch; implies --isa-report.",
        recipe="host_isa.strict",
        loads="recipe.host_isa.strict",
        kind="flag",
    ),
    GateOption(
        "--isa-baseline",
        "isa_baseline",
        "isa_baseline",
        "replace",
        "The x86-64 level host code may use: x86-64 (default: the manylinux baseline), x86-64-v2, "
        "x86-64-v3 or x86-64-v4 (replaces the job's).",
        recipe="host_isa.level",
        loads="recipe.host_isa.level",
        choices=("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"),
    ),
)


def option(name: str) -> GateOption:
    """The row of option ``name`` (a KeyError naming the known ones)."""
    for row in OPTIONS:
        if row.name == name:
            return row
    raise KeyError(f"no gate option {name!r}; known: {', '.join(r.name for r in OPTIONS)}")


class GateFlags(Mapping[str, Any]):
    """The gate options given on a command line, by name (a :class:`GateOption`'s ``name``): the
    text, the texts of a repeatable option, True for an on/off one. One not given (None, no value,
    off) is absent. An unknown name is a TypeError, as for a function's keyword."""

    __slots__ = ("_given",)

    def __init__(self, **given: Any) -> None:
        known = {row.name for row in OPTIONS}
        unknown = sorted(set(given) - known)
        if unknown:
            raise TypeError(f"unknown gate option(s): {', '.join(unknown)}")
        self._given = {k: v for k, v in given.items() if v is not None and v != () and v is not False}

    def __getitem__(self, name: str) -> Any:
        return self._given[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._given)

    def __len__(self) -> int:
        return len(self._given)

    def __repr__(self) -> str:
        return f"GateFlags({', '.join(f'{k}={v!r}' for k, v in self._given.items())})"


# --------------------------------------------------------------------------- precedence
def _empty(value: Any) -> bool:
    return value is None or value == "" or value == () or value == []


def merge(rule: Merge, current: Any, value: Any) -> Any:
    """``value`` given for a field holding ``current``, by ``rule`` (the module docstring says how)."""
    if rule == "replace":
        return value
    if rule == "add":
        return tuple(dict.fromkeys([*current, *value]))
    if current is None:
        return value
    if isinstance(current, bool):
        return current or value
    return min(current, value)


def apply_options(base: C, flags: GateFlags) -> C:
    """``base`` (a recipe job's configuration, or the defaults of :class:`~buildkit.gate.config.GateConfig`)
    with the options ``flags`` applied row by row, in table order, by each row's merge rule; then what the
    applied rows set besides (``then``, each once), validated."""
    config: Configuration = base
    given = Given(rocm=flags.get("rocm") or config.rocm)
    changes: dict[str, Any] = {}
    then: list[Callable[[Configuration, GateFlags], dict[str, Any]]] = []
    for row in OPTIONS:
        if row.name not in flags:
            continue
        raw = flags[row.name]
        value = raw if row.parse is None else row.parse(raw, given)
        if _empty(value):
            continue
        current = changes.get(row.field, getattr(base, row.field))
        if row.key is None:
            changes[row.field] = merge(row.merge, current, value)
        else:
            changes[row.field] = {**current, row.key: merge(row.merge, current.get(row.key), value)}
        if row.then is not None and row.then not in then:
            then.append(row.then)
    config = config._replace(**changes)
    for consequence in then:
        config = config._replace(**consequence(config, flags))
    done: C = config.validated()
    return done


def _resolve(path: str, sources: Mapping[str, object]) -> Any:
    """The value at dotted ``path`` (``job.ceilings.GLIBC``) in ``sources``, a step an attribute or a
    mapping's key; None as soon as one step is None or absent."""
    head, *steps = path.split(".")
    value: Any = sources[head]
    for step in steps:
        if value is None:
            return None
        value = value.get(step) if isinstance(value, Mapping) else getattr(value, step)
    return value


def job_values(job: Job, recipe: Recipe | None = None) -> dict[str, Any]:
    """The :class:`~buildkit.gate.config.GateConfig` fields a plan ``job`` (and its ``recipe``; None: the
    job's alone) sets: each row's value read where its ``loads`` says; a value not given (None) leaves the
    field's default. A mapping field's entries come sorted by key, as the plan orders the ceilings."""
    sources = {"job": job, "recipe": recipe}
    values: dict[str, Any] = {}
    for row in OPTIONS:
        value = None if row.loads is None else _resolve(row.loads, sources)
        if value is None:
            continue
        if row.key is None:
            values[row.field] = value
        else:
            values[row.field] = dict(sorted({**values.get(row.field, {}), row.key: value}.items()))
    return values
