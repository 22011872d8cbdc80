"""What the gate decided about one wheel: the :class:`Verdict` and the facts it carries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple

from buildkit.gate.config import GateConfig
from buildkit.gate.device import DeviceCode
from buildkit.gate.findings import Finding
from buildkit.policy import (
    CEILING_PREFIXES,
    Libc,
    Policy,
    verdict_policies,
)
from buildkit.records import Key, json_shape

if TYPE_CHECKING:
    from buildkit.gate.torchabi import TorchAbiResult
    from buildkit.gate.torchshim import StableAbiResult

LibraryStatus = Literal["whitelisted", "grafted", "excluded", "external", "dependency"]


@json_shape("library", "prefix", Key("max", "version"), "file", "files")
class SymbolMax(NamedTuple):
    """The highest version of one prefix required from one library, and the first file needing it."""

    library: str
    prefix: str
    version: str  # "GLIBC_2.34"
    file: str
    files: tuple[str, ...]  # every member requiring exactly this version


@json_shape()
class LibraryUse(NamedTuple):
    """One needed library and how the wheel gets it (whitelisted, grafted, excluded or external)."""

    library: str
    status: LibraryStatus
    needed_by: tuple[str, ...]
    detail: str | None = None  # the glob that excluded it, or the member that provides it


@json_shape()
class GfxObject(NamedTuple):
    """A member carrying GPU code (an offload bundle or a bare code object) and its gfx targets."""

    file: str
    kind: Literal["bundle", "code-object"]
    targets: tuple[str, ...]


@json_shape()
class Integrity(NamedTuple):
    """What the integrity rules (:mod:`buildkit.gate.rules.integrity`) had to work with: RECORD's entry count,
    the archive's file count, and whether every member's digest was compared with RECORD (else
    RECORD was checked for names and sizes only)."""

    record_entries: int
    files: int
    hashes_verified: bool


class Verdict(NamedTuple):
    """The gate's judgement of one wheel: its tags and policies, libraries, gfx code and findings."""

    wheel: str
    size: int
    sha256: str
    config: GateConfig
    pure: bool
    arch: str | None
    overall_policy: Policy | None  # None for a wheel with no host ELF
    sym_policy: Policy | None
    lib_policy: Policy | None
    file_tags: tuple[str, ...]
    symbols: tuple[SymbolMax, ...]
    libraries: tuple[LibraryUse, ...]
    gfx: tuple[GfxObject, ...]
    findings: tuple[Finding, ...]
    integrity: Integrity | None = None
    #: the policy whose ceilings and whitelist applied: the config's, else the file name's strictest
    #: manylinux tag (None: neither, or no host ELF)
    target_policy: Policy | None = None
    libc: Libc = "glibc"  # the host ELFs' libc (musl: judged by the musllinux policies)
    torch_abi: TorchAbiResult | None = None  # the wheel judged against a torch (``torch-abi``)
    device: DeviceCode = DeviceCode()  # device code per gfx target, per member and per bundle
    #: a stable-ABI wheel judged against its declared lowest torch (``torch-stable-abi``)
    torch_stable: StableAbiResult | None = None

    @property
    def gated_ceilings(self) -> dict[str, str]:
        """The ceilings the wheel was held to: the target policy's, each overridden by the config's."""
        base = self.target_policy.ceilings() if self.target_policy else {}
        merged = {**base, **self.config.ceilings}
        return {p: merged[p] for p in sorted(merged, key=prefix_order)}

    @property
    def passed(self) -> bool:
        """No error finding, other than those a recipe's waiver accepted."""
        return not any(f.fails for f in self.findings)

    @property
    def errors(self) -> tuple[Finding, ...]:
        """The error findings no waiver accepted (the ones that fail the wheel)."""
        return tuple(f for f in self.findings if f.fails)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        """The warning findings no waiver accepted."""
        return tuple(f for f in self.findings if f.severity == "warning" and f.waived is None)

    @property
    def waived(self) -> tuple[Finding, ...]:
        """The findings (of either severity) a waiver of the recipe accepted."""
        return tuple(f for f in self.findings if f.waived is not None)

    @property
    def overall_tag(self) -> str | None:
        return self.overall_policy.tag if self.overall_policy else None

    @property
    def sym_tag(self) -> str | None:
        return self.sym_policy.tag if self.sym_policy else None

    def external_libraries(self, policy: Policy | None = None) -> list[str]:
        """Libraries that count against ``policy`` (default: auditwheel's JSON choice, the most
        compatible policy): not whitelisted by it, not grafted, not excluded."""
        if self.arch is None or not self.libraries:
            return []
        pol = policy or verdict_policies(self.arch, self.libc)[0]
        return sorted(
            u.library
            for u in self.libraries
            if u.status in ("external", "whitelisted") and not pol.allows_library(u.library)
        )


def prefix_order(prefix: str) -> tuple[int, str]:
    known = CEILING_PREFIXES.index(prefix) if prefix in CEILING_PREFIXES else len(CEILING_PREFIXES)
    return known, prefix
