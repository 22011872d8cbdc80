"""Device code per GPU target: how many bytes each gfx target costs, in which member, and whether each
offload bundle is compressed (clang's ``--offload-compress``: a ``CCOB`` bundle) or plain
(``__CLANG_OFFLOAD_BUNDLE__``).

Two figures per (member, target): ``bytes``, the code objects' own size (inflated, for a CCOB), and
``stored``, what they take in the member (a CCOB's compressed bytes are shared among its entries in
proportion to their sizes). Standalone code objects (``.co``, ``.hsaco``) count their file size as
both. The wheel's zip compresses members again: a target's share of the wheel file is about its
``stored`` bytes times the member's zip ratio, which :func:`device_code` does not guess.

A plain bundle's ``estimate`` is what zstd makes of its code objects (a sample of the first 64 KiB of
each, compressed at the level :data:`buildkit.inspect.offload.ESTIMATE_LEVEL`): the saving of
``--offload-compress`` is about ``stored - estimate``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from buildkit.inspect.models import WheelReport
from buildkit.records import Key, json_shape, to_data
from buildkit.rocm import processor_sort_key


@json_shape()
class TargetSize(NamedTuple):
    """The device code of one gfx target (the processor, features merged) in one member."""

    file: str
    target: str  # "gfx90a"
    bytes: int
    stored: int


@json_shape("file", Key("index", "number"), "compression", "bytes", "stored", "estimate", "saving")
class BundleSize(NamedTuple):
    """One offload bundle of a member's ``.hip_fatbin``: plain (``compression`` None) or a CCOB."""

    file: str
    number: int  # 0, 1, ... in the member's .hip_fatbin
    compression: str | None  # None | "zlib" | "zstd"
    bytes: int  # its device code objects' own size
    stored: int  # what they take in the member
    estimate: int | None  # plain: zstd's size of its code objects (estimated); None: not known

    @property
    def saving(self) -> int:
        """What compressing this bundle would save in the member (0 when compressed or unknown)."""
        if self.compression is not None or self.estimate is None:
            return 0
        return max(0, self.stored - self.estimate)


class DeviceCode(NamedTuple):
    members: tuple[TargetSize, ...] = ()
    bundles: tuple[BundleSize, ...] = ()

    def per_target(self) -> dict[str, tuple[int, int]]:
        """gfx target -> (bytes, stored) over every member."""
        out: dict[str, tuple[int, int]] = {}
        for m in self.members:
            size, stored = out.get(m.target, (0, 0))
            out[m.target] = (size + m.bytes, stored + m.stored)
        return out

    def to_json(self) -> dict[str, Any]:
        # hand-written: "targets" is computed (each target's totals over the members, in processor
        # order), no attribute of the record
        totals = self.per_target()
        return {
            "targets": [
                {"target": t, "bytes": totals[t][0], "stored": totals[t][1]}
                for t in sorted(totals, key=processor_sort_key)
            ],
            "members": to_data(self.members),
            "bundles": to_data(self.bundles),
        }


def device_code(report: WheelReport) -> DeviceCode:
    """The device code of ``report``'s HIP objects and standalone code objects."""
    members: dict[tuple[str, str], tuple[int, int]] = {}
    bundles: list[BundleSize] = []
    for elf in report.elves:
        per_bundle: dict[int, list[Any]] = {}
        for entry in elf.offload_targets:
            if entry.gfx is None:
                continue
            stored = entry.size if entry.stored is None else entry.stored
            size, kept = members.get((elf.member, entry.gfx), (0, 0))
            members[(elf.member, entry.gfx)] = (size + entry.size, kept + stored)
            b = per_bundle.setdefault(entry.bundle, [entry.compression, 0, 0, 0, True])
            b[1] += entry.size
            b[2] += stored
            if entry.compressed_estimate is None:
                b[4] = False
            else:
                b[3] += entry.compressed_estimate
        for index in sorted(per_bundle):
            compression, size, stored, estimate, known = per_bundle[index]
            plain_estimate = estimate if compression is None and known else None
            bundles.append(BundleSize(elf.member, index, compression, size, stored, plain_estimate))
    sizes: Mapping[str, int] = {f.name: f.size for f in report.files}
    for co in report.code_objects:
        size = sizes.get(co.member, 0)
        old, kept = members.get((co.member, co.gfx), (0, 0))
        members[(co.member, co.gfx)] = (old + size, kept + size)
    rows = tuple(TargetSize(f, t, b, s) for (f, t), (b, s) in sorted(members.items()))
    return DeviceCode(rows, tuple(bundles))
