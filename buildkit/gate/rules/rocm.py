"""The ``rocm-soname`` rule: a wheel for ROCm X links X's runtime SONAMEs."""

from __future__ import annotations

from collections.abc import Iterator

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule

ROCM_SONAME = Rule(
    "rocm-soname",
    ("error",),
    checks=(
        "With a ROCm release pinned (`--rocm` or the job's), every versioned DT_NEEDED of a ROCm "
        "runtime library is the SONAME that release ships (`libamdhip64.so.7` for ROCm 7.x, not "
        "`.so.6`); with a distribution's toolchain (`archs.toolchain: debian-trixie`, `--toolchain`), "
        "the SONAME of that packaging (Debian's `libhipblas.so.0`)."
    ),
    prevents=(
        "A wheel labelled for ROCm X but built against another release: `libamdhip64.so.6: cannot"
        " open shared object file` on a ROCm X system, or it loads a mismatched runtime."
    ),
)

RULES = (ROCM_SONAME,)


def check(facts: Facts) -> Iterator[Finding]:
    """``libamdhip64.so.6`` in a ROCm 7.2 job means it was compiled against another ROCm than its
    label says (and fails to load, or loads the wrong one)."""
    config = facts.config
    if not config.rocm_sonames:
        return
    for elf in facts.host:
        for needed in elf.needed:
            base, sep, _major = needed.partition(".so.")
            expected = config.rocm_sonames.get(base)
            if sep and expected is not None and needed != expected:
                ships = f"ROCm {config.rocm}" + (
                    f" as {config.toolchain} packages it" if config.toolchain else ""
                )
                yield ROCM_SONAME.error(
                    f"{elf.member} needs {needed}, but {ships} ships {expected}: it was "
                    f"built against another ROCm release or packaging than {config.rocm}",
                    file=elf.member,
                    library=needed,
                )
