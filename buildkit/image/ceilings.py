"""Symbol-version ceilings read from a runtime image: what the image's libc / libm / libstdc++ /
libgcc_s *define* (``.gnu.version_d``, :mod:`buildkit.inspect.verdef`), the highest version of each
prefix, and the newest manylinux policy (:mod:`buildkit.policy`) whose ceilings all fit.

Nothing from the image is run (:mod:`buildkit.image.libraries`). Results are cached by image id in
``$XDG_CACHE_HOME/rocm-buildkit/ceilings/<id>.json``; the cache holds only what was read, the policy
match is recomputed from the installed auditwheel on every call. A library that *is* there but
cannot be read is a :class:`~buildkit.errors.UsageError` (exit 2), as a missing libc is: leaving it
out would make the image look *more* permissive than it is. Nothing is cached then.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
from docker.client import DockerClient

from buildkit.docker_engine import connect
from buildkit.errors import DockerUnavailable, UsageError
from buildkit.fsutil import atomic_write, cache_home
from buildkit.image.libraries import LibraryVersions, check_libraries, read_libraries
from buildkit.policy import CEILING_PREFIXES, CEILING_PROVIDERS, Policy, policies, version_tuple
from buildkit.records import to_data

SCHEMA_VERSION = 1
CACHE_SCHEMA = 3  # 3: readings with an unreadable library are refused, never cached

# docker's image Architecture -> (auditwheel arch, Debian multiarch triplet)
_ARCHES: dict[str, tuple[str, str]] = {
    "amd64": ("x86_64", "x86_64-linux-gnu"),
    "arm64": ("aarch64", "aarch64-linux-gnu"),
    "ppc64le": ("ppc64le", "powerpc64le-linux-gnu"),
    "s390x": ("s390x", "s390x-linux-gnu"),
}

_MANYLINUX_GLIBC = re.compile(r"^manylinux_(\d+)_(\d+)$")


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class PolicyMatch:
    """The newest manylinux policy whose ceilings the image meets.

    ``policy`` is ``None`` when not even the oldest policy fits. ``absent`` lists the prefixes the
    image does not define at all (no libstdc++: ``("GLIBCXX", "CXXABI")``): the match holds only for
    wheels that need nothing from those libraries. ``newer`` is the next newer policy and
    ``newer_unmet`` what keeps the image from it (``("GLIBC 2.37 > 2.36",)``).
    """

    policy: Policy | None
    absent: tuple[str, ...]
    newer: Policy | None
    newer_unmet: tuple[str, ...]

    def describe(self) -> str:
        if self.policy is None:
            text = "no manylinux policy: the image is older than the oldest policy"
        else:
            text = self.policy.tag
        if self.newer is not None and self.newer_unmet:
            text += f" (not {self.newer.name}: needs {', '.join(self.newer_unmet)})"
        elif self.newer is None and self.policy is not None:
            text += " (the newest policy auditwheel knows)"
        if self.absent:
            libs = sorted({CEILING_PROVIDERS.get(p, p) for p in self.absent})
            text += (
                f"; {'/'.join(self.absent)} absent: only for wheels that need nothing from "
                f"{', '.join(libs)} (or bundle it)"
            )
        return text

    def to_json(self) -> dict[str, Any]:
        # hand-written, no JsonShape (buildkit/records.py): describe() is computed
        return {
            "policy": None if self.policy is None else self.policy.name,
            "tag": None if self.policy is None else self.policy.tag,
            "absent": list(self.absent),
            "newer": None if self.newer is None else self.newer.name,
            "newer_unmet": list(self.newer_unmet),
            "description": self.describe(),
        }


@dataclass(frozen=True)
class ImageCeilings:
    """What one image's libraries define. ``image`` as asked, ``image_id`` the engine's id."""

    image: str
    image_id: str
    arch: str
    libraries: tuple[LibraryVersions, ...]
    cached: bool = False

    @property
    def ceilings(self) -> dict[str, str]:
        """Per ceiling prefix (GLIBC, GLIBCXX, CXXABI, GCC) the highest version any library defines."""
        best: dict[str, str] = {}
        for lib in self.libraries:
            for prefix, version in lib.maxima().items():
                if prefix not in CEILING_PREFIXES:
                    continue
                cur = best.get(prefix)
                if cur is None or (version_tuple(version) or ()) > (version_tuple(cur) or ()):
                    best[prefix] = version
        return {p: best[p] for p in CEILING_PREFIXES if p in best}

    @property
    def absent(self) -> tuple[str, ...]:
        have = self.ceilings
        return tuple(p for p in CEILING_PREFIXES if p not in have)

    def library(self, soname: str) -> LibraryVersions | None:
        return next((lib for lib in self.libraries if lib.soname == soname), None)

    @property
    def glibc_release(self) -> str | None:
        libc = self.library("libc.so.6")
        return None if libc is None else libc.release

    def policy_match(self) -> PolicyMatch:
        return match_policy(self.ceilings, self.arch, self.glibc_release)

    def to_json(self) -> dict[str, Any]:
        # hand-written, no JsonShape (buildkit/records.py): policy_match() is computed
        return {
            "image": self.image,
            "image_id": self.image_id,
            "arch": self.arch,
            "glibc_release": self.glibc_release,
            "ceilings": self.ceilings,
            "absent": list(self.absent),
            "policy": self.policy_match().to_json(),
            "libraries": to_data(self.libraries),
            "cached": self.cached,
        }


# --------------------------------------------------------------------------- policy match
def policy_glibc(policy: Policy) -> str | None:
    """The glibc release a policy's name promises (``manylinux_2_37`` -> ``"2.37"``)."""
    m = _MANYLINUX_GLIBC.match(policy.name)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def _unmet(policy: Policy, ceilings: Mapping[str, str], glibc_release: str | None) -> list[str]:
    out = []
    # pip installs manylinux_2_X only where glibc >= 2.X, even when 2.X added no symbol version
    # (2.37 did not: manylinux_2_37's GLIBC ceiling is 2.36)
    promised = policy_glibc(policy)
    release = glibc_release or ceilings.get("GLIBC")
    if promised and release and (version_tuple(release) or ()) < (version_tuple(promised) or ()):
        out.append(f"glibc release {promised} > {release}")
    for prefix, needed in policy.ceilings().items():
        have = ceilings.get(prefix)
        if have is None:
            continue  # absent prefixes are reported separately
        if (version_tuple(have) or ()) < (version_tuple(needed) or ()):
            out.append(f"{prefix} {needed} > {have}")
    return out


def match_policy(
    ceilings: Mapping[str, str], arch: str = "x86_64", glibc_release: str | None = None
) -> PolicyMatch:
    """The newest manylinux policy (auditwheel's data) every present ceiling of which is met and
    whose name's glibc (``manylinux_2_37`` -> 2.37) is not newer than ``glibc_release`` (default:
    the GLIBC ceiling)."""
    candidates = [p for p in policies(arch) if p.name != "linux"]  # best (oldest) first
    absent = tuple(p for p in CEILING_PREFIXES if p not in ceilings)
    newer: Policy | None = None
    for policy in reversed(candidates):  # newest first
        unmet = _unmet(policy, ceilings, glibc_release)
        if not unmet:
            newer_unmet = tuple(_unmet(newer, ceilings, glibc_release)) if newer is not None else ()
            return PolicyMatch(policy, absent, newer, newer_unmet)
        newer = policy
    oldest = candidates[0]
    return PolicyMatch(None, absent, oldest, tuple(_unmet(oldest, ceilings, glibc_release)))


def minimum_ceilings(readings: Sequence[ImageCeilings]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Per prefix the lowest ceiling across ``readings`` (the images a wheel must run in all of).

    Returns ``(ceilings, absent)``: a prefix some image does not define at all is left out of
    ``ceilings`` and listed in ``absent`` (prefix -> images lacking it): no version of it is safe.
    """
    ceilings: dict[str, str] = {}
    absent: dict[str, list[str]] = {}
    for prefix in CEILING_PREFIXES:
        values = []
        for reading in readings:
            value = reading.ceilings.get(prefix)
            if value is None:
                absent.setdefault(prefix, []).append(reading.image)
            else:
                values.append(value)
        if values and prefix not in absent:
            ceilings[prefix] = min(values, key=lambda v: version_tuple(v) or ())
    return ceilings, absent


# --------------------------------------------------------------------------- reading an image
def cache_dir() -> Path:
    return cache_home() / "ceilings"


def check_image_reference(image: str) -> None:
    """Refuse what cannot be an image reference before asking the engine (UsageError, exit 2)."""
    if not image.strip():
        raise UsageError("empty image reference: give an image name (debian:trixie-slim) or id")
    if image != image.strip() or any(c.isspace() or not c.isprintable() for c in image):
        raise UsageError(f"invalid image reference {image!r}: it contains blanks or control characters")


def _image(client: DockerClient, image: str) -> Any:
    check_image_reference(image)
    try:
        return client.images.get(image)
    except docker.errors.NullResource:
        raise UsageError("empty image reference: give an image name or id") from None
    except docker.errors.ImageNotFound:
        raise DockerUnavailable(
            f"image {image!r} is not in the Docker engine's local images\n"
            "  hint: `docker pull` it (or `buildkit image seed` for the Debian bases); "
            "`docker images` lists what is there"
        ) from None
    except docker.errors.APIError as exc:
        if exc.status_code == 400:  # the engine parses the reference: "invalid reference format"
            raise UsageError(f"invalid image reference {image!r}: {exc.explanation or exc}") from None
        raise DockerUnavailable(f"the Docker engine could not look up image {image!r}: {exc}") from None


def _load_cache(path: Path) -> tuple[str, tuple[LibraryVersions, ...]] | None:
    try:
        raw = json.loads(path.read_text("utf-8"))
        if raw.get("cache_schema") != CACHE_SCHEMA:
            return None
        libs = tuple(LibraryVersions.from_json(lib) for lib in raw["libraries"])
        return str(raw["arch"]), libs
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store_cache(path: Path, image_id: str, arch: str, libs: Iterable[LibraryVersions]) -> None:
    payload = {
        "cache_schema": CACHE_SCHEMA,
        "image_id": image_id,
        "arch": arch,
        "libraries": to_data(libs),
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(payload, indent=1, sort_keys=True) + "\n")
    except OSError:
        pass  # a read-only home is no reason to fail: the next call reads the image again


def read_image_ceilings(
    image: str,
    *,
    client: DockerClient | None = None,
    use_cache: bool = True,
    cache: Path | None = None,
) -> ImageCeilings:
    """Read the libraries of ``image`` (a local image name or id) and their version definitions;
    :class:`DockerUnavailable` (exit 8) when no engine answers or the image is not local."""
    if client is None:
        client = connect()
    img = _image(client, image)
    image_id = str(img.id)
    docker_arch = str(img.attrs.get("Architecture") or "amd64")
    arch, triplet = _ARCHES.get(docker_arch, (docker_arch, f"{docker_arch}-linux-gnu"))
    cache_file = (cache or cache_dir()) / f"{image_id.split(':')[-1]}.json"
    if use_cache:
        hit = _load_cache(cache_file)
        if hit is not None:
            check_libraries(image, triplet, hit[1])
            return ImageCeilings(image, image_id, hit[0], hit[1], cached=True)
    libs = read_libraries(client, image_id, triplet)
    check_libraries(image, triplet, libs)
    _store_cache(cache_file, image_id, arch, libs)
    return ImageCeilings(image, image_id, arch, libs)


def ceilings_from_images(images: Sequence[str], *, client: DockerClient | None = None) -> dict[str, str]:
    """The recipe's ``ceilings: {from_image: [...]}``: :func:`minimum_ceilings` of ``images``' readings."""
    if not images:
        raise UsageError("ceilings from_image needs at least one image")
    if client is None:
        client = connect()
    readings = [read_image_ceilings(image, client=client) for image in images]
    return minimum_ceilings(readings)[0]


# --------------------------------------------------------------------------- output
def report_json(readings: Sequence[ImageCeilings]) -> dict[str, Any]:
    """The ``buildkit ceilings --json`` document (``schema_version`` 1)."""
    ceilings, absent = minimum_ceilings(readings)
    arch = readings[0].arch if readings else "x86_64"
    releases = [r.glibc_release for r in readings]
    release = None
    if readings and all(releases):
        release = min((r for r in releases if r), key=lambda v: version_tuple(v) or ())
    return {
        "schema_version": SCHEMA_VERSION,
        "images": [r.to_json() for r in readings],
        "minimum": {
            "ceilings": ceilings,
            "absent": absent,
            "policy": match_policy(ceilings, arch, release).to_json(),
        },
    }


def render_human(readings: Sequence[ImageCeilings]) -> str:
    lines: list[str] = []
    for r in readings:
        short = r.image_id.split(":")[-1][:12]
        note = ", cached" if r.cached else ""
        lines.append(f"{r.image}  (image {short}, {r.arch}, glibc {r.glibc_release or '?'}{note})")
        have = r.ceilings
        for prefix in CEILING_PREFIXES:
            provider = CEILING_PROVIDERS[prefix]
            lib = r.library(provider)
            value = have.get(prefix)
            if value is None:
                why = lib.problem if lib is not None and lib.problem else f"no {provider} in the image"
                lines.append(f"  {prefix:<8} absent    ({why})")
                continue
            where = ""
            if lib is not None and lib.path is not None:
                where = " -> ".join([*lib.chain, lib.path])
            lines.append(f"  {prefix:<8} {value:<9} {where}")
        for lib in r.libraries:
            if lib.problem and lib.soname not in CEILING_PROVIDERS.values():
                lines.append(f"  note: {lib.soname}: {lib.problem}")
        lines.append(f"  policy   {r.policy_match().describe()}")
    if len(readings) > 1:
        doc = report_json(readings)["minimum"]
        values = ", ".join(f"{p} {v}" for p, v in doc["ceilings"].items())
        lines.append(f"minimum over {len(readings)} images: {values or '-'}")
        for prefix, images in doc["absent"].items():
            lines.append(f"  {prefix} absent in {', '.join(images)}")
        lines.append(f"  policy   {doc['policy']['description']}")
    return "\n".join(lines)
