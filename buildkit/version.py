"""Wheel versions: a PEP 440 base version plus a local label rendered from a template.

``render_version("0.1.12.post2", "rocm{rocm}.manylinux.{policy}", values)`` gives
``0.1.12.post2+rocm7.2.manylinux.2.28`` once normalised by :class:`packaging.version.Version`.
Functions here raise :class:`VersionProblem` (a ``ValueError``); the recipe layer adds the
file position and turns it into a :class:`~buildkit.errors.RecipeError`.
"""

from __future__ import annotations

import re
import string
import subprocess
from collections.abc import Mapping
from pathlib import Path

from packaging.version import InvalidVersion, Version

#: Placeholders every local-label template may use (matrix axis names are allowed too).
PLACEHOLDERS: tuple[str, ...] = (
    "rocm",
    "rocm_nodot",
    "policy",
    "policy_tag",
    "torch",
    "torch_nodot",
    "python",
    "cp",
)
DEFAULT_TAG_PATTERN = r"^v?(?P<version>.+)$"
_LOCAL_SEGMENTS = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*$", re.IGNORECASE)
_LITERAL_OK = re.compile(r"^[A-Za-z0-9._-]*$")

PYPI_LOCAL_REASON = (
    "PyPI refuses versions with a PEP 440 local label ('+...'); publish such wheels to a PEP 503 "
    "index of your own (publish.index or publish.directory), or drop version.local"
)


class VersionProblem(ValueError):
    """A version, tag or template that cannot give a valid PEP 440 version."""


def template_fields(template: str) -> list[str]:
    """Placeholder names used by ``template`` in order; raises on malformed braces."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise VersionProblem(f"bad local-label template {template!r}: {exc}") from None
    names: list[str] = []
    for literal, name, spec, conversion in parsed:
        if not _LITERAL_OK.match(literal):
            bad = sorted({c for c in literal if not re.match(r"[A-Za-z0-9._-]", c)})
            raise VersionProblem(
                f"local-label template {template!r} has characters a PEP 440 local label cannot hold: "
                + " ".join(repr(c) for c in bad)
            )
        if name is None:
            continue
        if spec or conversion or not name.isidentifier():
            raise VersionProblem(f"local-label template {template!r}: use plain {{name}} placeholders")
        names.append(name)
    return names


def policy_label(policy: str) -> str:
    """``manylinux_2_28`` -> ``2.28`` (the form used in local labels)."""
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)", policy)
    if not m:
        raise VersionProblem(f"cannot render policy {policy!r} as a label: expected manylinux_X_Y")
    return f"{m.group(1)}.{m.group(2)}"


def series(version: str) -> str:
    """``2.10.0`` -> ``2.10`` (major.minor)."""
    return ".".join(version.split(".")[:2])


def nodot(version: str) -> str:
    """``2.10`` -> ``210``."""
    return version.replace(".", "")


def template_values(
    *,
    rocm: str,
    policy: str,
    python: str,
    torch: str | None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The placeholder values of one job."""
    values = {
        "rocm": rocm,
        "rocm_nodot": nodot(rocm),
        "policy": policy_label(policy),
        "policy_tag": policy,
        "python": python,
        "cp": "cp" + nodot(python),
    }
    if torch is not None:
        values["torch"] = series(torch)
        values["torch_nodot"] = nodot(series(torch))
    if extra:
        values.update(extra)
    return values


def check_base(base: str) -> str:
    """Normalise a base version; it must be valid PEP 440 and carry no local label."""
    try:
        v = Version(base)
    except InvalidVersion:
        raise VersionProblem(f"{base!r} is not a PEP 440 version (e.g. 0.1.12 or 0.1.12.post2)") from None
    if v.local is not None:
        raise VersionProblem(f"base version {base!r} already has a local label; put it in version.local")
    return str(v)


def render_version(base: str, template: str | None, values: Mapping[str, str]) -> str:
    """``base`` + the rendered local label, normalised (``Version`` lower-cases, ``-``/``_`` -> ``.``)."""
    base_norm = check_base(base)
    if not template:
        return base_norm
    try:
        label = template.format_map(dict(values))
    except KeyError as exc:
        raise VersionProblem(
            f"local-label template {template!r} uses {{{exc.args[0]}}}, unknown here"
        ) from None
    if not _LOCAL_SEGMENTS.match(label):
        raise VersionProblem(
            f"local label {label!r} (from {template!r}) is not a PEP 440 local label: "
            "letters and digits separated by single '.', '-' or '_'"
        )
    try:
        return str(Version(f"{base_norm}+{label}"))
    except InvalidVersion:
        raise VersionProblem(f"{base_norm}+{label} is not a PEP 440 version") from None


def base_from_tag(tag: str, pattern: str = DEFAULT_TAG_PATTERN, distance: int = 0) -> str:
    """The base version named by a git ``tag`` (``v0.1.12`` -> ``0.1.12``).

    ``distance`` commits after the tag give ``<tag>.post<distance>``: a build of an untagged
    commit is not the tagged release, so it never reuses the release's version.
    """
    m = re.search(pattern, tag)
    if not m:
        raise VersionProblem(f"git tag {tag!r} does not match version.tag_pattern {pattern!r}")
    text = m.groupdict().get("version") or m.group(0)
    base = check_base(text)
    if distance:
        v = Version(base)
        if v.is_devrelease or v.is_postrelease:
            raise VersionProblem(
                f"HEAD is {distance} commit(s) after tag {tag!r}, whose version {base} is already a "
                "post/dev release; tag the commit you build"
            )
        base = str(Version(f"{base}.post{distance}"))
    return base


def describe_tag(path: Path) -> tuple[str, int]:
    """``(nearest tag, commits since it)`` of the git checkout at ``path`` (``git describe``)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "describe", "--tags", "--long", "--abbrev=12"],
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except FileNotFoundError:
        raise VersionProblem("git is not installed") from None
    except subprocess.CalledProcessError as exc:
        why = (exc.stderr or "").strip().splitlines()
        raise VersionProblem(
            f"no tag found in {path} ({why[-1] if why else 'git describe failed'})"
        ) from None
    m = re.fullmatch(r"(?P<tag>.+)-(?P<n>\d+)-g[0-9a-f]+", out)
    if not m:
        raise VersionProblem(f"unexpected `git describe` output {out!r}")
    return m.group("tag"), int(m.group("n"))
