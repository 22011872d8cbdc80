"""What a smoke test runs (:func:`choose_specs`), the wheel checked before any container, and the GPU
access this machine can give."""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from packaging.utils import parse_wheel_filename

from buildkit import manifest
from buildkit.errors import UsageError, WheelReadError
from buildkit.recipe import load_recipe

GPU_LABEL = "gpu"


@dataclass(frozen=True)
class SmokeSpec:
    name: str
    image: str
    imports: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    gpu: bool = False  # the recipe's `gpu: true`; the label `gpu` means the same
    #: extra system packages over the runtime image of a profile (``rocm-buildkit/<profile>``)
    packages: tuple[str, ...] = ()
    #: the interpreter this test runs under (``python3.13``: one of the CPythons a Python-independent
    #: wheel serves); None: ``run_smoke``'s ``python``
    python: str | None = None

    @property
    def needs_gpu(self) -> bool:
        return self.gpu or GPU_LABEL in self.labels


@dataclass(frozen=True)
class GpuAccess:
    devices: tuple[str, ...]  # "/dev/kfd:/dev/kfd:rwm", ...
    groups: tuple[str, ...]  # numeric gids owning the device nodes

    def describe(self) -> str:
        paths = ", ".join(d.split(":")[0] for d in self.devices)
        return f"GPU passthrough: {paths} (groups {', '.join(self.groups) or 'none'})"


def gpu_access(dev: Path = Path("/dev")) -> GpuAccess | None:
    """The AMD GPU device nodes of this machine (``/dev/kfd`` + ``/dev/dri``), None when absent (with a
    remote engine on a GPU host, run buildkit there)."""
    kfd, dri = dev / "kfd", dev / "dri"
    if not kfd.exists() or not dri.is_dir():
        return None
    nodes = [kfd, *sorted(dri.iterdir())]
    groups = sorted({os.stat(n).st_gid for n in nodes} - {0})
    return GpuAccess(
        devices=(f"{kfd}:/dev/kfd:rwm", f"{dri}:/dev/dri:rwm"),
        groups=tuple(str(g) for g in groups),
    )


def default_imports(wheel: Path) -> tuple[str, ...]:
    """Top-level importable names of a wheel: packages, modules and extension modules at the root."""
    names: set[str] = set()
    for member in members(wheel):
        head, _, rest = member.partition("/")
        if head.endswith((".dist-info", ".data")):
            continue
        if rest == "__init__.py":
            names.add(head)
        elif not rest and (head.endswith(".py") or ".so" in head):
            names.add(head.split(".")[0])
    return tuple(sorted(n for n in names if n.isidentifier()))


def members(wheel: Path) -> list[str]:
    """The member names of ``wheel``; :class:`WheelReadError` when it is not a readable zip."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            return zf.namelist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        raise WheelReadError(f"{wheel}: not a readable wheel (zip): {exc}") from None


def specs_from_recipe(
    recipe_smoke: Iterable[Any],
    labels: Iterable[str],
    *,
    image_override: str | None = None,
    values: Mapping[str, str] | None = None,
) -> list[SmokeSpec]:
    """Recipe ``smoke:`` entries selected by label (any of them; all entries without labels given:
    none for a recipe without ``smoke:``)."""
    wanted = set(labels)
    specs = []
    for entry in recipe_smoke:
        if wanted and not wanted & set(entry.labels):
            continue
        image = image_override or fill_image(entry.image, values or {}, entry.name)
        specs.append(
            SmokeSpec(
                entry.name,
                image,
                tuple(entry.imports),
                tuple(entry.commands),
                tuple(entry.labels),
                gpu=bool(getattr(entry, "gpu", False)),
                packages=() if image_override else tuple(getattr(entry, "packages", ())),
            )
        )
    if not specs and wanted:  # a recipe without smoke entries has none to select: the caller says so
        raise UsageError(f"no smoke test of the recipe has label(s) {', '.join(sorted(wanted))}")
    return specs


def choose_specs(
    wheel: Path,
    *,
    recipe: str | None,
    labels: Iterable[str] = (),
    image: str | None = None,
    imports: Iterable[str] = (),
    commands: Iterable[str] = (),
    python: str | None = None,
) -> list[SmokeSpec]:
    """The smoke tests to run: the recipe's entries (selected by label, image placeholders filled from the
    wheel's manifest), or one ad-hoc test of ``image`` (default: import the wheel's top-level packages).
    A Python-independent wheel gets each recipe entry once per CPython it serves, unless ``python``."""
    labels, imports, commands = tuple(labels), tuple(imports), tuple(commands)
    if labels and recipe is None:
        raise UsageError("--label selects recipe entries: give --recipe")
    if recipe is not None:
        if imports or commands:
            raise UsageError("--import/--command and --recipe exclude each other")
        data = manifest_of(wheel)
        smoke = load_recipe(recipe).smoke
        pythons = served_pythons(data) if python is None else ()
        if not pythons:
            return specs_from_recipe(smoke, labels, image_override=image, values=job_values(data))
        out = []
        for version in pythons:
            values = {**job_values(data), "python": version}
            for spec in specs_from_recipe(smoke, labels, image_override=image, values=values):
                out.append(replace(spec, name=f"{spec.name} (CPython {version})", python=f"python{version}"))
        return out
    if image is None:
        raise UsageError("give --image IMAGE (or --recipe R)")
    chosen = imports if imports or commands else default_imports(wheel)
    return [SmokeSpec("cli", image, tuple(chosen), commands)]


def served_pythons(manifest_data: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The CPythons a Python-independent wheel serves (its manifest's ``job.serves``, when the job has
    a ``wheel_tag``); () for a wheel of one Python or without a manifest."""
    job = (manifest_data or {}).get("job") or {}
    if not job.get("wheel_tag"):
        return ()
    return tuple(str(v) for v in job.get("serves") or ())


def fill_image(template: str, values: Mapping[str, str], name: str) -> str:
    """``rocm/vllm:rocm{rocm}`` with the wheel's job values; an unknown placeholder is a usage error."""
    try:
        return template.format_map(dict(values))
    except (KeyError, IndexError, ValueError) as exc:
        known = ", ".join(f"{k}={v}" for k, v in sorted(values.items())) or "none (no manifest job)"
        raise UsageError(
            f"smoke test {name!r}: cannot fill the image {template!r} ({exc}); known values: {known}; "
            "pass --image"
        ) from None


def job_values(manifest_data: Mapping[str, Any] | None) -> dict[str, str]:
    job = (manifest_data or {}).get("job") or {}
    return {k: str(job[k]) for k in ("rocm", "torch", "python") if job.get(k) is not None}


def manifest_of(wheel: Path) -> dict[str, Any] | None:
    """The wheel's manifest (``buildkit build`` writes it beside the wheel); None without one."""
    return manifest.read(wheel) if manifest.manifest_path(wheel).is_file() else None


def wheel_python(wheel: Path) -> str | None:
    """``python3.14`` for a ``cp314-cp314`` wheel (the interpreter that must import it); None for a
    wheel that is not for one CPython (py3-none, abi3 serve several)."""
    parts = wheel.name.removesuffix(".whl").split("-")
    if len(parts) < 5:
        return None
    match = re.fullmatch(r"cp3(\d+)", parts[-3])
    if match is None or parts[-2] in ("none", "abi3"):
        return None
    return f"python3.{match.group(1)}"


def check_wheel(wheel: Path) -> None:
    """A wheel file name and a readable zip (WheelReadError, exit 6): checked before any container."""
    if not wheel.is_file():
        raise UsageError(f"{wheel}: no such wheel")
    try:
        parse_wheel_filename(wheel.name)
    except ValueError as exc:
        raise UsageError(f"{wheel.name}: not a wheel file name ({exc})") from None
    members(wheel)
