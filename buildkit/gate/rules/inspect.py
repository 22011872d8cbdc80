"""The ``inspect:<kind>`` rules: what the streaming inspection noticed without being unable to read
the wheel (:class:`~buildkit.inspect.models.Oddity`), judged. A member named like a shared library
that is not ELF is an error where the installed wheel imports or loads it
(:func:`buildkit.gate.loading.not_elf_load`), else a warning; every other kind is a warning."""

from __future__ import annotations

from collections.abc import Iterator

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.loading import not_elf_load
from buildkit.gate.rule import Rule

INSPECT_NOT_ELF_LIBRARY = Rule(
    "inspect:not-elf-library",
    ("error", "warning"),
    checks=(
        "A member named like a shared library (`*.so`, `*.so.N`) whose first bytes are not ELF. "
        "Error where the installed wheel loads it: an extension module name in an importable "
        "folder, a file in a `*.libs/` folder, or a file ld.so opens for a DT_NEEDED. Warning "
        "elsewhere (`.dist-info`, `.data/{data,headers,scripts}`, an unneeded `libfoo.so.N`, a "
        "plain `libfoo.so` under `include`/`lib`/`lib64`, typically a linker script)."
    ),
    prevents=(
        "A truncated, corrupted or placeholder library: `import` or ld.so fails with `invalid ELF header`."
    ),
)

INSPECT_CODE_OBJECT_MISMATCH = Rule(
    "inspect:code-object-mismatch",
    ("warning",),
    checks=(
        "In a `.hip_fatbin` offload bundle, the code object's own header names the same target as"
        " its bundle entry id (`hipv4-amdgcn-amd-amdhsa--gfx90a` holding gfx90a code)."
    ),
    prevents=(
        "A mislabelled bundle entry: the runtime selects code by entry id, so the GPU named there"
        " gets code for another processor, and `gfx-arch` (which reads entry ids) can be "
        "satisfied by a target that is not really present."
    ),
)

INSPECT_OTHER = Rule(
    "inspect:other",
    ("warning",),
    checks="Any other oddity the inspection reports (a kind this gate has no rule of its own for).",
    prevents="Nothing known: the oddity is shown so that a person looks at it.",
)
RULES = (INSPECT_NOT_ELF_LIBRARY, INSPECT_CODE_OBJECT_MISMATCH, INSPECT_OTHER)
_BY_KIND = {r.id.removeprefix("inspect:"): r for r in RULES}


def check(facts: Facts) -> Iterator[Finding]:
    for odd in facts.report.findings:
        rule = _BY_KIND.get(odd.kind)
        if rule is None:
            yield INSPECT_OTHER.warning(f"{odd.kind}: {odd.message}", file=odd.member)
        elif rule is not INSPECT_NOT_ELF_LIBRARY:
            yield rule.warning(odd.message, file=odd.member)
        else:
            load = not_elf_load(odd.member, facts.report.elves, facts.resolution)
            if load is None:
                message = (
                    f"{odd.message}; nothing imports or loads it from there (a linker script or a data file?)"
                )
                yield rule.warning(message, file=odd.member)
            else:
                yield rule.error(f"{odd.message}: {load}, which fails", file=odd.member)
