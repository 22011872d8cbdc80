"""The wheel gate: a :class:`WheelReport` and a :class:`GateConfig` in, a :class:`Verdict` out.

One function, :func:`evaluate`, serves ``build``, ``check``, CI and ``publish``. It never reads
the wheel itself: everything comes from the streaming inspection (:mod:`buildkit.inspect`) and from
what its caller read (:mod:`buildkit.judge`: the names of the symbols behind a ``ceiling`` error
through an injected reader, asked only then).
It gathers the wheel's facts (:func:`buildkit.gate.facts.gather`), runs every rule family of the
registry in order (:data:`buildkit.gate.rules.FAMILIES`) and folds both into the verdict.

The verdict (the best manylinux or musllinux tag the wheel is consistent with) follows auditwheel's
rules, read from its installed policy files (:mod:`buildkit.policy`): the host ELFs' architecture and
libc as auditwheel maps them (:mod:`buildkit.gate.facts`; a host ELF of an unknown machine is an
``elf-machine`` error, never "pure"; musl has no symbol versions, so a musl wheel gets the newest
musllinux policy its libraries allow, as ``auditwheel show`` gives on a host without musl); the *symbol
policy*, the best policy allowing every versioned requirement of every host ELF, grafted libraries
included, non-numeric versions (``GLIBC_ABI_DT_RELR``) counting; the *library policy*, the best under
which every DT_NEEDED is whitelisted, grafted or excluded (terms of docs/GATE-RULES.md; an excluded
library's own requirements cannot be seen); the overall tag is the worst of these and the ABI rules'
one. With a configured policy every symbol version it does not allow is a ``ceiling`` error; the file
name's tags are checked the same way by ``platform-tag``.

Differences from ``auditwheel show`` (tested in tests/agreement; the ABI rules' own are in
:mod:`buildkit.gate.rules.abi`): exclusion rules; auditwheel also reads the symbol versions of
non-whitelisted libraries it finds on the *host* (this gate never looks at the host); auditwheel's
resolver searches an extension's RUNPATH for the libraries its dependencies need too, ld.so (and
this gate) does not; auditwheel ignores host ELFs of another architecture or libc with a warning,
this gate fails them; the armv7l hard-float/EABI check is not made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from buildkit.gate.config import GateConfig
from buildkit.gate.facts import Needers, gather
from buildkit.gate.rules import AFTER_GATE, run, waive
from buildkit.gate.rules.abi import abi_policies
from buildkit.gate.verdict import Integrity, Verdict
from buildkit.inspect.models import WheelReport

if TYPE_CHECKING:
    from buildkit.gate.pyabi import PythonAbiResult
    from buildkit.gate.torchabi import TorchAbiResult
    from buildkit.gate.torchshim import StableAbiResult
    from buildkit.inspect.isa import ElfIsa


def evaluate(
    report: WheelReport,
    config: GateConfig,
    *,
    torch_abi: TorchAbiResult | None = None,
    python_abi: PythonAbiResult | None = None,
    torch_stable: StableAbiResult | None = None,
    host_isa: tuple[ElfIsa, ...] | None = None,
    needers: Needers | None = None,
) -> Verdict:
    """Apply every gate rule to one inspected wheel, then the configuration's waivers (those of the
    rules judged here: a ``regression`` waiver is left to ``build``, which runs that rule). The
    keyword arguments are what :mod:`buildkit.judge` read beside the inspection
    (:class:`~buildkit.gate.facts.Facts` says each; None: not read). A configuration with an unsound
    value is a UsageError (:meth:`GateConfig.validated`)."""
    facts = gather(report, config.validated(), torch_abi=torch_abi, python_abi=python_abi,
                   torch_stable=torch_stable, host_isa=host_isa, needers=needers)  # fmt: skip
    judged_here = [w for w in config.waivers if w.rule not in AFTER_GATE]
    recipe = config.identity.recipe if config.identity is not None else None
    findings = waive(run(facts), judged_here, recipe=recipe)
    overall = None
    if facts.judged and facts.arch is not None and facts.sym is not None and facts.lib is not None:
        # the worst of the symbol, library and ABI policies: auditwheel's overall_tag
        abi = abi_policies(facts.host, facts.arch, facts.pols)
        overall = min(facts.sym, facts.lib, abi.overall, key=lambda p: p.priority)
    return Verdict(
        wheel=report.filename,
        size=report.size,
        sha256=report.sha256,
        config=config,
        pure=not report.elves,
        arch=facts.arch,
        overall_policy=overall,
        sym_policy=facts.sym,
        lib_policy=facts.lib,
        file_tags=facts.file_tags,
        symbols=facts.symbols,
        libraries=facts.libraries,
        gfx=facts.gfx,
        findings=tuple(findings),
        integrity=Integrity(
            record_entries=len(report.record),
            files=len(report.files) or sum(not m.endswith("/") for m in report.members),
            hashes_verified=report.record_verified,
        ),
        target_policy=facts.target,
        libc=facts.libc,
        torch_abi=torch_abi,
        device=facts.device,
        torch_stable=torch_stable,
    )
