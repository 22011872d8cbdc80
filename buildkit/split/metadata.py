"""The names and metadata of a split: the device wheels' distribution names, the extras the host wheel
gains, and the ``METADATA`` and ``WHEEL`` files of every output (what a user sees: docs/REFERENCE.md,
``buildkit split``).

There is no cycle: the host's own requirements never name a device wheel (only its extras do), and a
device wheel requires the host without extras. The host's ``METADATA`` is otherwise kept byte for
byte, and ``Metadata-Version`` is raised to 2.1 (the first with ``Provides-Extra``) when it is lower."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from buildkit import __version__
from buildkit.errors import SplitRefused

#: the host's header fields a device wheel carries too (the license, who made it, where it lives)
COPIED_FIELDS: tuple[str, ...] = (
    "Requires-Python",
    "Home-page",
    "Author",
    "Author-email",
    "Maintainer",
    "Maintainer-email",
    "License",
    "License-Expression",
    "License-File",
    "Project-URL",
)
_PROVIDES_EXTRA = "Provides-Extra"


def device_distribution(host: str, target: str) -> str:
    """``("amd-aiter", "gfx942")`` -> ``"amd-aiter-device-gfx942"`` (PEP 503 normalized)."""
    return canonicalize_name(f"{host}-device-{target}")


def filename_part(name: str) -> str:
    """A distribution name as a wheel's file name spells it (``amd_aiter_device_gfx942``)."""
    return re.sub(r"[-_.]+", "_", name).lower()


class Headers(NamedTuple):
    """An email-style header block split into fields, each kept as its raw lines (continuations
    included), and the rest of the file (the blank line and the description) as it was."""

    fields: tuple[tuple[str, str], ...]  # (name, raw text with its line ends)
    rest: str

    @classmethod
    def parse(cls, text: str) -> Headers:
        lines = text.splitlines(keepends=True)
        fields: list[tuple[str, str]] = []
        end = len(lines)
        for i, line in enumerate(lines):
            if line in ("\n", "\r\n", "\r"):
                end = i
                break
            if line[:1] in (" ", "\t") and fields:
                name, raw = fields[-1]
                fields[-1] = (name, raw + line)
                continue
            name = line.split(":", 1)[0].strip()
            fields.append((name, line))
        return cls(tuple(fields), "".join(lines[end:]))

    def values(self, name: str) -> list[str]:
        """The values of every field called ``name`` (case-insensitive), unfolded."""
        out = []
        for field, raw in self.fields:
            if field.lower() == name.lower():
                value = raw.split(":", 1)[1] if ":" in raw else ""
                out.append(" ".join(part.strip() for part in value.splitlines()).strip())
        return out

    def raw(self, name: str) -> list[str]:
        return [
            raw if raw.endswith(("\n", "\r")) else raw + "\n"
            for f, raw in self.fields
            if f.lower() == name.lower()
        ]

    def text(self) -> str:
        return "".join(raw for _name, raw in self.fields) + self.rest


def _metadata_version(headers: Headers) -> str:
    found = headers.values("Metadata-Version")
    return found[0] if found else "1.0"


def host_metadata(text: str, name: str, version: str, targets: Sequence[str]) -> str:
    """The host's ``METADATA`` with one extra per target (module docstring); :class:`SplitRefused`
    when the host already declares an extra of a target's name."""
    headers = Headers.parse(text)
    extras = {canonicalize_name(e) for e in headers.values(_PROVIDES_EXTRA)}
    taken = [t for t in targets if canonicalize_name(t) in extras]
    if taken:
        raise SplitRefused(
            f"{name} already declares the extra {', '.join(taken)}: the split's extras would change what "
            "installing it means; rename the project's extra first"
        )
    fields = list(headers.fields)
    current = _metadata_version(headers)
    if _older(current, "2.1"):
        fields = [
            ("Metadata-Version", "Metadata-Version: 2.1\n") if f == "Metadata-Version" else (f, r)
            for f, r in fields
        ]
    last = fields[-1][1] if fields else ""
    if last and not last.endswith(("\n", "\r")):
        fields[-1] = (fields[-1][0], last + "\n")
    for target in targets:
        device = device_distribution(name, target)
        fields.append((_PROVIDES_EXTRA, f"{_PROVIDES_EXTRA}: {target}\n"))
        fields.append(("Requires-Dist", f'Requires-Dist: {device}=={version}; extra == "{target}"\n'))
    rest = headers.rest if headers.rest else ""
    return Headers(tuple(fields), rest).text()


def device_metadata(
    host_text: str, host: str, version: str, target: str, license_files: Sequence[str]
) -> str:
    """The ``METADATA`` of ``host``'s device wheel for ``target`` (module docstring). ``license_files``:
    the ``License-File`` values whose files the device wheel carries."""
    headers = Headers.parse(host_text)
    current = _metadata_version(headers)
    lines = [
        f"Metadata-Version: {'2.1' if _older(current, '2.1') else current}\n",
        f"Name: {device_distribution(host, target)}\n",
        f"Version: {version}\n",
        f"Summary: the {target} GPU code objects of {host} {version}, split from its wheel by "
        f"rocm-buildkit: install {host}[{target}]\n",
    ]
    for field in COPIED_FIELDS:
        if field == "License-File":
            lines += [f"License-File: {value}\n" for value in headers.values(field) if value in license_files]
        else:
            lines += headers.raw(field)
    lines.append(f"Requires-Dist: {canonicalize_name(host)}=={version}\n")
    return "".join(lines)


def device_wheel_file(host_wheel: str) -> str:
    """The device wheel's ``WHEEL``: the host's ``Root-Is-Purelib`` (so that its files install into the
    same folder as the host's), tags and build tag, and this generator."""
    headers = Headers.parse(host_wheel)
    lines = ["Wheel-Version: 1.0\n", f"Generator: rocm-buildkit {__version__} (split)\n"]
    purelib = headers.values("Root-Is-Purelib")
    lines.append(f"Root-Is-Purelib: {purelib[0] if purelib else 'false'}\n")
    lines += [f"Tag: {tag}\n" for tag in headers.values("Tag")]
    lines += [f"Build: {build}\n" for build in headers.values("Build")]
    return "".join(lines)


def license_files(headers_text: str, dist_info_files: Mapping[str, int]) -> dict[str, str]:
    """The host's ``License-File`` values whose file its ``.dist-info`` holds (``LICENSE`` or, from
    metadata 2.4, ``licenses/LICENSE``): value -> the path inside the ``.dist-info``."""
    found: dict[str, str] = {}
    for value in Headers.parse(headers_text).values("License-File"):
        for candidate in (f"licenses/{value}", value):
            if candidate in dist_info_files:
                found[value] = candidate
                break
    return found


def _older(version: str, than: str) -> bool:
    try:
        return Version(version) < Version(than)
    except InvalidVersion:
        return False
