"""What buildkit's ROCm data says about a recipe's torch pins and their download.pytorch.org indexes:
the hint of a pin no known index serves, and the note of an explicit ``index_url`` the data knows
but does not list as serving that torch for that ROCm release."""

from __future__ import annotations

from collections.abc import Sequence

from buildkit import rocm as rocm_data
from buildkit.recipe import TorchPin


def _join(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _same_url(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def _serving(torch: str) -> str:
    """Which releases' download.pytorch.org index serves torch ``torch``, per buildkit's data."""
    series = ".".join(torch.split(".")[:2])
    found = [(r.version, r.torch_index_for(torch)) for r in rocm_data.releases()]
    shown = [f"{version} ({url})" for version, url in found if url is not None]
    if not shown:
        return f"no download.pytorch.org index in buildkit's ROCm data serves torch {series}"
    return f"torch {series} is on the index of ROCm {_join(shown)}"


def _torch_facts(torch: str, release: rocm_data.RocmRelease) -> str:
    """What buildkit's ROCm data says about torch ``torch`` ("2.9") and ``release``'s index: the
    releases whose download.pytorch.org index serves that torch, and what the release's serves."""
    urls = [i.url for i in release.torch_indexes]
    if urls:
        own = (
            f"ROCm {release.version}'s index ({', '.join(urls)}) serves torch {_join(release.torch_versions)}"
        )
    else:
        own = f"buildkit's ROCm data knows no download.pytorch.org index for ROCm {release.version}"
    return f"{_serving(torch)}; {own}"


def missing_index_hint(pin: TorchPin, release: rocm_data.RocmRelease) -> str:
    return (
        f"{_torch_facts(pin.version, release)}: pin one of those pairs, or set index_url only to an "
        f"index known to serve torch {pin.series} built for ROCm {release.version}"
    )


def index_note(index: int, pin: TorchPin, release: rocm_data.RocmRelease) -> str | None:
    """A note when the explicit ``index_url`` is an index buildkit's data knows, and the data does
    not list it as serving this torch for this release (None: listed, or an index it does not know)."""
    url = pin.index_url
    assert url is not None
    listed = [(r.version, i) for r in rocm_data.releases() for i in r.torch_indexes if _same_url(i.url, url)]
    if not listed:
        return None
    if any(v == release.version and pin.series in i.torch for v, i in listed):
        return None
    there = "; ".join(f"ROCm {v} with torch {_join(i.torch)}" for v, i in listed)
    return (
        f"torch[{index}] {pin.series} on ROCm {release.version}: index_url {url} is, in buildkit's ROCm "
        f"data, the index of {there}, not one serving torch {pin.series} for ROCm {release.version}; "
        f"{_serving(pin.version)}"
    )
