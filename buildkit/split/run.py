"""``buildkit split``: one wheel in, a host wheel and one device wheel per gfx processor out, each gated.

The input is gated first with the configuration given (a refused wheel, or one whose files are not
the ones its RECORD lists, is not split: ``GateFailed``). Each output is then gated
(:func:`output_config`):

* the host wheel with the configuration given: it lost only standalone code objects, so the rules
  it passed still apply, except the two that speak of the whole of the device code: ``gfx-arch``
  keeps the requested archs only when the host still has HIP objects (their offload bundles must
  carry them all), and ``required-member`` globs are judged on the input wheel (they may name code
  objects now in a device wheel), and so is the torch ABI (the caller judges the input with it);
* each device wheel with the same configuration for its own name and ``device_target`` set: the
  ``device-wheel`` rule then requires every member but its metadata to be a code object of its
  processor (``gfx-arch`` is left to that rule).

The outputs are moved into ``out`` only together, once every one passed (the device wheels first, the
host last, so that no host in ``out`` names a device wheel that is not there yet); else all of them,
with their reports, go to ``<out>/.refused/split-<input stem>/``. The staging folder is removed
whatever happens (an error, Ctrl-C)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

from packaging.utils import parse_wheel_filename

from buildkit.errors import GateFailed, SplitRefused, UsageError
from buildkit.fsutil import sync_folder
from buildkit.gate.config import GateConfig
from buildkit.gate.report import render_all, render_human, to_json
from buildkit.gate.verdict import Verdict
from buildkit.inspect.models import WheelReport
from buildkit.judge import judge_wheel
from buildkit.manifest import REFUSED_DIR
from buildkit.records import Key, json_shape, to_data
from buildkit.split.classify import Bundled, Layout, Placed, classify
from buildkit.split.metadata import (
    Headers,
    device_distribution,
    device_metadata,
    device_wheel_file,
    filename_part,
    host_metadata,
    license_files,
)
from buildkit.split.writer import SIGNATURES, Copied, write_wheel

SCHEMA = "rocm-buildkit/split"
SCHEMA_VERSION = 1
TEXT_SUFFIX = ".check.txt"
JSON_SUFFIX = ".check.json"

Echo = Callable[[str], None]


@json_shape(
    *("role", "target", "distribution", Key("wheel", "path.name"), Key("path", convert=str), "size"),
    *(Key("sha256", "verdict.sha256"), "files", "code_objects", "code_object_bytes"),
    Key("passed", "verdict.passed"),
    Key("errors", "verdict.errors", convert=len),
    Key("warnings", "verdict.warnings", convert=len),
)
class Output(NamedTuple):
    """One wheel the split wrote, and its gate's verdict."""

    role: Literal["host", "device"]
    target: str | None  # the processor of a device wheel
    distribution: str
    path: Path  # in ``out`` when the split passed, else in its refused folder
    size: int  # the wheel file's bytes
    files: int
    code_objects: int
    code_object_bytes: int  # their inflated size
    verdict: Verdict

    @property
    def extra(self) -> str | None:
        return self.target


class SplitResult(NamedTuple):
    source: Path
    source_size: int
    outputs: tuple[Output, ...]  # the host first, then the device wheels by processor
    bundles: tuple[Bundled, ...]  # host ELFs whose device code stays in the host wheel
    by_header: int  # code objects whose path names no processor: placed by their ELF header alone
    refused: Path | None  # where the outputs are kept when one failed its gate
    timings: Mapping[str, float]

    @property
    def passed(self) -> bool:
        return self.refused is None

    @property
    def host(self) -> Output:
        return self.outputs[0]

    @property
    def devices(self) -> tuple[Output, ...]:
        return self.outputs[1:]

    def to_json(self) -> dict[str, Any]:
        # hand-written, no JsonShape (buildkit/records.py): the document's constants and groups
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "wheel": self.source.name,
            "size": self.source_size,
            "passed": self.passed,
            "refused": None if self.refused is None else str(self.refused),
            "outputs": to_data(self.outputs),
            "placed_by_header": self.by_header,
            "bundles": [
                {"file": b.member, "targets": list(b.targets), "bytes": b.bytes, "split": False}
                for b in self.bundles
            ],
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
        }


def output_config(base: GateConfig, *, target: str | None, bundles: bool) -> GateConfig:
    """The configuration an output is gated with (the module docstring says why each change): the host
    (``target`` None; ``bundles``: it still has HIP objects with offload bundles) or the device wheel of
    ``target``, whose job identity, if any, names the device distribution."""
    changes: dict[str, Any] = {"required": (), "torch_abi": None}
    identity = base.identity
    if target is not None:
        changes["device_target"] = target
        changes["archs"] = ()
        if identity is not None and identity.name is not None:
            changes["identity"] = identity._replace(name=device_distribution(identity.name, target))
    elif not bundles:
        changes["archs"] = ()
    return base._replace(**changes).validated()


class _Planned(NamedTuple):
    role: Literal["host", "device"]
    target: str | None
    distribution: str
    filename: str
    dist_info: str
    copied: tuple[Copied, ...]
    generated: Mapping[str, bytes]
    code_objects: int
    code_object_bytes: int


def _plan(report: WheelReport, layout: Layout, zf: zipfile.ZipFile) -> list[_Planned]:
    """What each output wheel holds: the host first, then a device wheel per processor."""
    name, version, build, _tags = parse_wheel_filename(report.filename)
    dist_info = report.dist_info_dir
    if dist_info is None:  # inspect_wheel refuses a wheel without one: a bug if it happens
        raise SplitRefused(f"{report.filename}: no .dist-info folder holding WHEEL")
    infos = {i.filename: i for i in zf.infolist()}
    metadata = zf.read(f"{dist_info}/METADATA").decode("utf-8")
    project = _metadata_name(metadata) or str(name)
    skip = {f"{dist_info}/{n}" for n in ("METADATA", "RECORD", *SIGNATURES)}
    host_meta = host_metadata(metadata, project, str(version), layout.targets)
    co_count = sum(len(p) for p in layout.devices.values())
    host = _Planned(
        *("host", None, project, report.filename, dist_info),
        tuple(Copied(m, infos[m]) for m in layout.host if m not in skip),
        {f"{dist_info}/METADATA": host_meta.encode("utf-8")},
        len(report.code_objects) - co_count,
        0,
    )
    sizes = {f.name: f.size for f in report.files}
    in_dist_info = {
        m[len(dist_info) + 1 :]: sizes.get(m, 0) for m in report.members if m.startswith(dist_info + "/")
    }
    stem = report.filename[: -len(".whl")]
    suffix = (f"-{build[0]}{build[1]}" if build else "") + "-" + "-".join(stem.split("-")[-3:])
    device = _DevicePlan(
        project,
        str(version),
        suffix,
        dist_info,
        metadata,
        zf.read(f"{dist_info}/WHEEL").decode("utf-8"),
        license_files(metadata, in_dist_info),
        infos,
    )
    return [host, *(device.plan(target, placed) for target, placed in layout.devices.items())]


class _DevicePlan(NamedTuple):
    """What every device wheel of one input shares; :meth:`plan` gives one processor's."""

    project: str
    version: str
    suffix: str  # the file name after the version: the build tag, if any, and the input's tags
    dist_info: str  # the input's
    metadata: str  # the input's METADATA
    wheel_text: str  # the input's WHEEL
    licenses: Mapping[str, str]
    infos: Mapping[str, zipfile.ZipInfo]

    def plan(self, target: str, placed: Sequence[Placed]) -> _Planned:
        distribution = device_distribution(self.project, target)
        part = filename_part(distribution)
        device_info = f"{part}-{self.version}.dist-info"
        host_data, device_data = (
            self.dist_info[: -len(".dist-info")] + ".data/",
            f"{part}-{self.version}.data/",
        )
        copied = [
            Copied(
                device_data + p.member[len(host_data) :] if p.member.startswith(host_data) else p.member,
                self.infos[p.member],
            )
            for p in placed
        ]
        copied += [
            Copied(f"{device_info}/{path}", self.infos[f"{self.dist_info}/{path}"])
            for path in self.licenses.values()
        ]
        metadata = device_metadata(self.metadata, self.project, self.version, target, list(self.licenses))
        generated = {
            f"{device_info}/METADATA": metadata.encode(),
            f"{device_info}/WHEEL": device_wheel_file(self.wheel_text).encode(),
        }
        return _Planned(
            *("device", target, distribution, f"{part}-{self.version}{self.suffix}.whl", device_info),
            tuple(copied),
            generated,
            len(placed),
            sum(p.size for p in placed),
        )


def _metadata_name(text: str) -> str | None:
    found = Headers.parse(text).values("Name")
    return found[0] if found else None


def split_wheel(
    wheel: Path,
    out: Path,
    *,
    config: GateConfig | None = None,
    echo: Echo | None = None,
) -> SplitResult:
    """Split ``wheel`` into ``out`` (module docstring). :class:`SplitRefused` when it cannot be split,
    ``WheelReadError`` when it cannot be read; a split whose outputs fail their gate returns a result
    with ``refused`` set (the caller raises ``GateFailed``)."""
    base = config or GateConfig()
    _check_out(out, wheel)
    timings: dict[str, float] = {}
    started = time.monotonic()
    report, verdict = judge_wheel(wheel, base)
    timings["inspect"] = time.monotonic() - started
    if not verdict.passed:
        raise GateFailed(f"{wheel.name} fails the gate, so it is not split\n{render_human(verdict)}")
    layout = classify(report)
    staging = _staging(out, wheel)
    try:
        t0 = time.monotonic()
        with zipfile.ZipFile(wheel) as zf:
            planned = _plan(report, layout, zf)
            files = {
                p.filename: len(
                    write_wheel(staging / p.filename, zf, p.copied, p.generated, p.dist_info).files
                )
                for p in planned
            }
        timings["write"] = time.monotonic() - t0
        t0 = time.monotonic()
        gated = _gate(staging, planned, base, bundles=bool(layout.bundles), say=echo or (lambda _line: None))
        timings["gate"] = time.monotonic() - t0
        if all(v.passed for _p, v in gated):
            final, refused = out, None
            for p, _v in [*gated[1:], gated[0]]:  # the device wheels first: a host never names a missing one
                os.replace(staging / p.filename, out / p.filename)
            sync_folder(out)
        else:
            final = refused = _keep_refused(staging, out / REFUSED_DIR / f"split-{wheel.stem}", gated)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    timings["total"] = time.monotonic() - started
    outputs = tuple(
        Output(*p[:3], final / p.filename, v.size, files[p.filename], p.code_objects, p.code_object_bytes, v)
        for p, v in gated
    )
    by_header = sum(1 for placed in layout.devices.values() for c in placed if not c.by_path)
    return SplitResult(wheel, report.size, outputs, layout.bundles, by_header, refused, timings)


def _check_out(out: Path, wheel: Path) -> None:
    """UsageError when ``out`` is a dangling symbolic link or the input's own folder."""
    if out.is_symlink() and not os.path.exists(out):
        raise UsageError(
            f"--out {out} is a symbolic link to {os.readlink(out)}, which does not resolve (missing, or "
            "a loop); give a folder"
        )
    if out.resolve() == wheel.resolve().parent:
        raise UsageError(
            f"--out {out} is the folder of {wheel.name}: the host wheel has the input's file name and "
            "would replace it; give another folder"
        )


def _gate(
    staging: Path, planned: Sequence[_Planned], base: GateConfig, *, bundles: bool, say: Echo
) -> list[tuple[_Planned, Verdict]]:
    """Each output written in ``staging`` gated with its configuration (:func:`output_config`)."""
    gated: list[tuple[_Planned, Verdict]] = []
    for p in planned:
        cfg = output_config(base, target=p.target, bundles=bundles)
        gated.append((p, judge_wheel(staging / p.filename, cfg).verdict))
        say(f"{p.filename}: {'PASS' if gated[-1][1].passed else 'FAIL'}")
    return gated


def _staging(out: Path, wheel: Path) -> Path:
    """A new hidden folder in ``out`` (made when missing) to write the outputs in; UsageError naming
    ``out`` when it cannot be (a dangling symbolic link, a file, ``/proc/x``, no permission)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".split-{wheel.stem}-", dir=out))
    except OSError as err:
        raise UsageError(f"--out {out}: cannot write a folder there: {err.strerror or err}") from None


def _keep_refused(staging: Path, dest: Path, gated: Sequence[tuple[_Planned, Verdict]]) -> Path:
    """Every output with its reports into ``dest`` (replacing an older refusal there)."""
    for p, v in gated:
        (staging / (p.filename + TEXT_SUFFIX)).write_text(render_all([v], verbose=True), encoding="utf-8")
        (staging / (p.filename + JSON_SUFFIX)).write_text(
            json.dumps(to_json([v]), indent=2) + "\n", encoding="utf-8"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    incoming = Path(tempfile.mkdtemp(prefix=f".{dest.name}.incoming-", dir=dest.parent))
    for entry in staging.iterdir():
        os.replace(entry, incoming / entry.name)
    if dest.exists():
        shutil.rmtree(dest)
    os.replace(incoming, dest)
    sync_folder(dest.parent)
    return dest
