"""A standard SBOM of what a wheel needs but does not carry: PEP 770's ``.dist-info/sboms/``, CycloneDX
(what it lists: docs/REFERENCE.md), written into the repaired wheel (RECORD updated) before the gate.

Each component's properties are ``rocm-buildkit:soname``, ``rocm-buildkit:provided-by`` (``rocm``,
``torch`` or ``exclude-pattern``) and ``rocm-buildkit:needed-by``. The bytes are reproducible (serial
number a UUID5 of the wheel's name, version and libraries; timestamp ``SOURCE_DATE_EPOCH``); every
other member keeps its bytes, name, date and attributes (re-deflated at the same level)."""

from __future__ import annotations

import base64
import datetime
import fnmatch
import hashlib
import io
import json
import uuid
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from buildkit import __version__
from buildkit import rocm as rocm_data
from buildkit.fsutil import atomic_write
from buildkit.inspect import inspect_wheel

_SBOM_NAME = "rocm-buildkit.cdx.json"
_SPEC_VERSION = "1.6"


@dataclass(frozen=True)
class _Excluded:
    """One library the wheel needs and does not carry."""

    soname: str
    provided_by: str  # "rocm" | "torch" | "exclude-pattern"
    version: str | None
    needed_by: tuple[str, ...]


def _excluded_libraries(
    needs: Mapping[str, Sequence[str]],
    exclude_globs: Sequence[str],
    *,
    rocm: str | None,
    torch_version: str | None,
) -> list[_Excluded]:
    """From member -> DT_NEEDED, the libraries an exclude glob keeps out of the wheel, classified by
    the named set whose glob matches them (``rocm``, else ``torch``, else a recipe pattern)."""
    rocm_globs = rocm_data.exclude_globs(["rocm", "rocm-system"], rocm) if rocm else []
    torch_globs = rocm_data.exclude_globs(["torch"])
    users: dict[str, list[str]] = {}
    for member, needed in sorted(needs.items()):
        for soname in needed:
            if any(fnmatch.fnmatchcase(soname, g) for g in exclude_globs):
                users.setdefault(soname, []).append(member)
    out = []
    for soname in sorted(users):
        if any(fnmatch.fnmatchcase(soname, g) for g in rocm_globs):
            kind, version = "rocm", rocm
        elif any(fnmatch.fnmatchcase(soname, g) for g in torch_globs):
            kind, version = "torch", torch_version
        else:
            kind, version = "exclude-pattern", None
        out.append(_Excluded(soname, kind, version, tuple(users[soname])))
    return out


def _purl(lib: _Excluded) -> str | None:
    if lib.version is None:
        return None
    if lib.provided_by == "torch":
        return f"pkg:pypi/torch@{lib.version}"
    if lib.provided_by == "rocm":
        return f"pkg:generic/rocm/{lib.soname.split('.so', 1)[0]}@{lib.version}"
    return None


def document(name: str, version: str, libraries: Sequence[_Excluded], *, epoch: int) -> dict[str, Any]:
    """The CycloneDX 1.6 document (plain JSON data) of wheel ``name`` ``version`` needing ``libraries``."""
    wheel_ref = f"pkg:pypi/{name}@{version}"
    seed = json.dumps([name, version, [lib.soname for lib in libraries]])
    components = []
    for lib in libraries:
        component: dict[str, Any] = {
            "type": "library",
            "bom-ref": f"runtime:{lib.soname}",
            "name": lib.soname,
            "scope": "required",
            "description": {
                "rocm": f"ROCm {lib.version} runtime library, provided at run time (excluded at repair)",
                "torch": f"torch {lib.version} library, provided by the installed torch (excluded at repair)",
                "exclude-pattern": "provided at run time (excluded at repair by the recipe's pattern)",
            }[lib.provided_by],
            "properties": [
                {"name": "rocm-buildkit:soname", "value": lib.soname},
                {"name": "rocm-buildkit:provided-by", "value": lib.provided_by},
                {"name": "rocm-buildkit:needed-by", "value": ",".join(lib.needed_by)},
            ],
        }
        if lib.version is not None:
            component["version"] = lib.version
        purl = _purl(lib)
        if purl is not None:
            component["purl"] = purl
        components.append(component)
    stamp = datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc)
    return {
        "bomFormat": "CycloneDX",
        "specVersion": _SPEC_VERSION,
        "serialNumber": f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, wheel_ref + seed)}",
        "version": 1,
        "metadata": {
            "timestamp": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tools": {
                "components": [{"type": "application", "name": "rocm-buildkit", "version": __version__}]
            },
            "component": {
                "type": "library",
                "bom-ref": wheel_ref,
                "name": name,
                "version": version,
                "purl": wheel_ref,
            },
        },
        "components": components,
        "dependencies": [
            {"ref": wheel_ref, "dependsOn": [c["bom-ref"] for c in components]},
            *({"ref": c["bom-ref"]} for c in components),
        ],
    }


def _record_line(member: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{member},sha256={digest},{len(data)}"


def _add_member(wheel: Path, member: str, data: bytes) -> None:
    """Rewrite ``wheel`` with ``member`` (replacing one of that name) and its RECORD line, atomically;
    every other member keeps its name, bytes, date and attributes."""
    with zipfile.ZipFile(wheel) as zf:
        infos = zf.infolist()
        record = next(
            i for i in infos if i.filename.count("/") == 1 and i.filename.endswith(".dist-info/RECORD")
        )
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as new:
            for info in infos:
                if info.filename == member:
                    continue
                body = zf.read(info)
                if info is record:
                    lines = [
                        line
                        for line in body.decode("utf-8").splitlines()
                        if line and not line.startswith(f"{member},")
                    ]
                    at = next(
                        (n for n, line in enumerate(lines) if line.startswith(record.filename + ",")),
                        len(lines),
                    )
                    lines.insert(at, _record_line(member, data))
                    body = ("\n".join(lines) + "\n").encode("utf-8")
                    entry = zipfile.ZipInfo(member, date_time=info.date_time)
                    entry.external_attr = 0o644 << 16
                    entry.compress_type = zipfile.ZIP_DEFLATED
                    new.writestr(entry, data)
                new.writestr(info, body, compress_type=info.compress_type)
    atomic_write(wheel, out.getvalue())


def attach(
    wheel: Path,
    exclude_globs: Sequence[str],
    *,
    rocm: str | None,
    torch_version: str | None,
    epoch: int,
) -> list[_Excluded]:
    """Write the SBOM of ``wheel`` into it (see the module docstring); the libraries it lists."""
    report = inspect_wheel(wheel, verify_record=False)
    needs = {e.member: e.needed for e in report.elves}
    libraries = _excluded_libraries(needs, exclude_globs, rocm=rocm, torch_version=torch_version)
    data = document(report.name, report.version, libraries, epoch=epoch)
    dist_info = report.dist_info_dir or f"{report.name}-{report.version}.dist-info"
    body = (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
    _add_member(wheel, f"{dist_info}/sboms/{_SBOM_NAME}", body)
    return libraries
