"""The ``host-isa`` rule: the x86-64 levels of the instructions in each x86_64 host ELF, from the
disassembly a judgement passes the gate (:func:`buildkit.inspect.isa.host_isa_of`), against the
baseline (the recipe's ``host_isa.level``, ``--isa-baseline``; default the policy's: x86-64, v1, for
every manylinux and musllinux policy).

Off unless asked: disassembling costs seconds on wheels with much vector code (bench/isa_scan.py).
A warning unless strict, since runtime-dispatched code (numpy, OpenBLAS, PyTorch's CPU kernels) holds
AVX-512 behind cpuid checks. The ``x86-isa`` rule (:mod:`buildkit.gate.rules.abi`) reads only the
ELF's ISA note, which ``-march=native`` builds do not write.
"""

from __future__ import annotations

from collections.abc import Iterator

from buildkit.gate.facts import Facts
from buildkit.gate.findings import Finding
from buildkit.gate.rule import Rule
from buildkit.inspect.isa import LEVELS, level_number

HOST_ISA = Rule(
    "host-isa",
    ("warning", "error"),
    checks=(
        "Asked for (`--isa-report`, `--isa-strict`, the recipe's `host_isa.report`/`strict`): the "
        "instructions of each x86_64 host ELF, disassembled, use no x86-64 level above the baseline "
        "(`host_isa.level`, default x86-64): a warning naming the level, the counts and an instruction "
        "with its symbol; an error when strict."
    ),
    prevents=(
        "SIGILL (illegal instruction) on users' CPUs below the level the build machine had: host code "
        "built with -march=native or -mavx512f carries no ISA note, so only its instructions tell."
    ),
)

RULES = (HOST_ISA,)


def check(facts: Facts) -> Iterator[Finding]:
    config = facts.config
    if not config.isa_scan:
        return
    if facts.host_isa is None:
        yield HOST_ISA.error(
            "the host-isa report was asked for, but the wheel's host code was not disassembled: the "
            "caller of the gate passes buildkit.inspect.isa.host_isa_of(...) as evaluate(host_isa=...)"
        )
        return
    baseline = config.isa_baseline or LEVELS[0]
    allowed = level_number(baseline)
    for elf in facts.host_isa:
        if elf.level <= allowed:
            continue
        counts = ", ".join(f"{LEVELS[i + 1]}: {n}" for i, n in enumerate(elf.counts) if n)
        above = elf.above(allowed)
        example = f"; e.g. {above[0].describe()}" if above else ""
        lead = f"{elf.member} holds {elf.level_name} instructions ({counts}){example}"
        lead += f", above the baseline {baseline}"
        if config.isa_strict:
            yield HOST_ISA.error(
                f"{lead}: it dies with SIGILL on a CPU below {elf.level_name}; build it for {baseline} "
                "(the recipe's host_isa.level holds the compiler flags), or, for runtime-dispatched "
                "code, turn strict off",
                file=elf.member,
                symbol=above[0].symbol if above else None,
            )
        else:
            yield HOST_ISA.warning(
                f"{lead} (fine behind a cpuid check; --isa-strict refuses it)",
                file=elf.member,
                symbol=above[0].symbol if above else None,
            )
