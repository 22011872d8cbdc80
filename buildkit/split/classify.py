"""Which member of a wheel goes where: each standalone code object to the device wheel of the processor
its ELF header names (``e_flags``), never guessed from its name; everything else to the host wheel.

Its path is a cross-check: a directory named after a processor must name the same one, else the wheel
is refused naming the file (a kernel built for the wrong GPU sits where the loader looks for the right
one; splitting would hide it in another device wheel). A code object whose path names no processor
(aiter's Triton AOT kernels) goes by its header alone. Device code inside a host ELF's offload bundles
stays in the host wheel: see :data:`BUNDLE_REASON`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from buildkit.errors import SplitRefused
from buildkit.inspect.models import WheelReport
from buildkit.targets import known_processors

#: why device code inside a host ELF is not split, printed by ``split`` whenever a wheel has some
BUNDLE_REASON = (
    "the HIP runtime takes that code from the ELF itself: the library registers its .hip_fatbin with "
    "__hipRegisterFatBinary when it is loaded, and the runtime looks for no code object anywhere else. "
    "Moving it into a device wheel needs a runtime loader that finds device code outside the ELF "
    "(TheRock's kpack: host binaries with their device code taken out and a reference left, per-target "
    ".kpack archives found at run time), which released ROCm runtimes do not have"
)


class Placed(NamedTuple):
    """A standalone code object and the processor whose device wheel takes it."""

    member: str
    target: str  # the processor: "gfx942"
    target_id: str  # as its header says: "gfx942:sramecc+:xnack-"
    size: int  # inflated bytes
    by_path: bool  # a directory of its path names the processor too


class Bundled(NamedTuple):
    """A host ELF carrying device code in offload bundles: it stays in the host wheel."""

    member: str
    targets: tuple[str, ...]  # processors, sorted
    bytes: int  # the device code objects' own size


class Layout(NamedTuple):
    """Where each member of the wheel goes."""

    host: tuple[str, ...]  # members staying in the host wheel (archive order)
    devices: Mapping[str, tuple[Placed, ...]]  # processor -> its code objects (member order)
    bundles: tuple[Bundled, ...] = ()

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(sorted(self.devices))


def path_processors(member: str) -> tuple[str, ...]:
    """The processors the directories of ``member`` are named after (``hsa/gfx942/x.co`` -> gfx942)."""
    known = known_processors()
    return tuple(dict.fromkeys(part.lower() for part in member.split("/")[:-1] if part.lower() in known))


def classify(report: WheelReport) -> Layout:
    """The layout of ``report``'s wheel; :class:`SplitRefused` naming every code object whose path
    names another processor than its header, or whose machine LLVM does not define."""
    sizes: Mapping[str, int] = {f.name: f.size for f in report.files}
    dist_info = report.dist_info_dir
    problems: list[str] = []
    devices: dict[str, list[Placed]] = {}
    moved: set[str] = set()
    for co in report.code_objects:
        if dist_info is not None and co.member.startswith(dist_info + "/"):
            continue  # metadata is the host's, whatever it holds
        if co.gfx.startswith("unknown-"):
            problems.append(
                f"{co.member}: its ELF header names no AMDGPU processor LLVM defines (e_flags "
                f"0x{co.e_flags:x}): no device wheel can be chosen for it"
            )
            continue
        named = path_processors(co.member)
        if named and any(p != co.gfx for p in named):
            problems.append(
                f"{co.member}: its path names {', '.join(named)} but its ELF header says {co.target_id}: "
                "rebuild it for the right target, or move it where its target's files are"
            )
            continue
        placed = Placed(co.member, co.gfx, co.target_id, sizes.get(co.member, 0), bool(named))
        devices.setdefault(co.gfx, []).append(placed)
        moved.add(co.member)
    if problems:
        raise SplitRefused(
            f"{report.filename}: {len(problems)} code object(s) cannot be split:\n  " + "\n  ".join(problems)
        )
    bundles = tuple(_bundled(report))
    if not devices:
        why = f"{report.filename} has no standalone code object (.co, .hsaco: an AMDGPU ELF) to split"
        if bundles:
            carriers = ", ".join(b.member for b in bundles)
            why += f"; its device code is inside host ELFs ({carriers}), where it stays: {BUNDLE_REASON}"
        raise SplitRefused(why)
    host = tuple(m for m in report.members if m not in moved)
    return Layout(host, {t: tuple(devices[t]) for t in sorted(devices)}, bundles)


def _bundled(report: WheelReport) -> Iterable[Bundled]:
    for elf in report.elves:
        device = [e for e in elf.offload_targets if e.gfx is not None]
        if device:
            targets = tuple(sorted({e.gfx for e in device if e.gfx is not None}))
            yield Bundled(elf.member, targets, sum(e.size for e in device))
