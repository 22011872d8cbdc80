"""Base-image seeding: suite names and the host's Debian mirror (no debootstrap run here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from buildkit.errors import UsageError
from buildkit.image import seed

DEB822 = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
"""


def test_suite_of() -> None:
    assert seed.suite_of("debian:trixie-slim") == "trixie"
    assert seed.suite_of("debian:bookworm") == "bookworm"
    for bad in ("ubuntu:noble", "debian", "debian:12-slim", "quay.io/pypa/manylinux_2_28_x86_64"):
        with pytest.raises(UsageError):
            seed.suite_of(bad)


def test_parse_deb822() -> None:
    sources = seed.parse_deb822(DEB822)
    assert [s.uris for s in sources] == [
        ("http://deb.debian.org/debian",),
        ("http://deb.debian.org/debian-security",),
    ]
    assert sources[0].suites == ("bookworm", "bookworm-updates")
    assert sources[0].components == ("main",)


def test_parse_one_line() -> None:
    text = (
        "# comment\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://ftp.fr.debian.org/debian/ trixie main contrib\n"
        "deb-src http://ftp.fr.debian.org/debian trixie main\n"
    )
    sources = seed.parse_one_line(text)
    assert sources[0].types == ("deb",)
    assert sources[0].uris == ("http://ftp.fr.debian.org/debian/",)
    assert sources[0].suites == ("trixie",)
    assert sources[0].components == ("main", "contrib")
    assert sources[1].types == ("deb-src",)


def _apt_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "sources.list.d").mkdir()
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_host_mirror_deb822_skips_security_and_foreign_repos(tmp_path: Path) -> None:
    apt = _apt_dir(
        tmp_path,
        {
            "sources.list.d/a-nodesource.sources": (
                "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\nComponents: main\n"
            ),
            "sources.list.d/b-security.sources": (
                "Types: deb\nURIs: http://deb.debian.org/debian-security\n"
                "Suites: trixie-security\nComponents: main\n"
            ),
            "sources.list.d/debian.sources": DEB822,
            "sources.list.d/google.list.disabled-by-farm": "deb https://example.org/debian stable main\n",
        },
    )
    assert seed.host_mirror(apt) == "http://deb.debian.org/debian"


def test_host_mirror_one_line_style(tmp_path: Path) -> None:
    apt = _apt_dir(
        tmp_path,
        {
            "sources.list": (
                "deb-src http://mirror.example/debian trixie main\n"
                "deb http://security.debian.org/debian-security trixie-security main\n"
                "deb [trusted=yes] http://mirror.example/debian/ trixie main\n"
            )
        },
    )
    assert seed.host_mirror(apt) == "http://mirror.example/debian"


def test_host_mirror_disabled_and_missing(tmp_path: Path) -> None:
    apt = _apt_dir(
        tmp_path,
        {"sources.list.d/debian.sources": DEB822.replace("Types: deb\n", "Enabled: no\nTypes: deb\n", 1)},
    )
    assert seed.host_mirror(apt) is None
    assert seed.host_mirror(tmp_path / "nowhere") is None


def test_host_mirror_of_this_machine() -> None:
    if not Path("/etc/apt").is_dir():
        pytest.skip("not a Debian-family host")
    mirror = seed.host_mirror()
    assert mirror is None or (mirror.startswith(("http://", "https://")) and "debian" in mirror)
