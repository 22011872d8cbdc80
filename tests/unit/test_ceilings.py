"""buildkit.image.ceilings without an engine: version definitions of the host's real libraries (checked
against binutils' ``readelf -V``), symlink resolution, the policy match on auditwheel's data, the
minimum across images, the cache. The engine part is in tests/docker/test_ceilings_docker.py."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from buildkit.errors import UsageError
from buildkit.image.ceilings import (
    CACHE_SCHEMA,
    ImageCeilings,
    _load_cache,
    _store_cache,
    check_image_reference,
    match_policy,
    minimum_ceilings,
    policy_glibc,
)
from buildkit.image.libraries import _GLIBC_BANNER, LibraryVersions, _resolve_link, check_libraries
from buildkit.inspect.verdef import version_definitions
from buildkit.policy import get_policy, policies, tighten, version_tuple

HOST_LIBS = Path("/lib/x86_64-linux-gnu")
needs_host_libs = pytest.mark.skipif(
    not (HOST_LIBS / "libc.so.6").exists() or shutil.which("readelf") is None,
    reason="needs an x86_64 glibc host with binutils",
)


def readelf_definitions(path: Path) -> set[str]:
    """Independent reading: the non-BASE ``Name:`` rows of readelf's .gnu.version_d listing."""
    text = subprocess.run(
        ["readelf", "-V", "-W", str(path)], check=True, capture_output=True, text=True
    ).stdout
    section = text.split("Version definition section", 1)[1].split("Version needs section", 1)[0]
    return {m[1] for m in re.finditer(r"Flags: (?!BASE)\S+\s+Index: \d+\s+Cnt: \d+\s+Name: (\S+)", section)}


def top(definitions: set[str], prefix: str) -> str:
    versions = [d.split("_", 1)[1] for d in definitions if d.startswith(prefix + "_")]
    return max((v for v in versions if version_tuple(v)), key=lambda v: version_tuple(v) or ())


@needs_host_libs
@pytest.mark.parametrize("name", ["libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1"])
def test_version_definitions_match_readelf(name: str) -> None:
    path = (HOST_LIBS / name).resolve()
    machine, names = version_definitions(path.read_bytes())
    assert machine == "x86_64"
    expected = readelf_definitions(path)
    assert set(names) == expected and len(names) > 5
    assert name.split(".")[0] not in "".join(names)  # the BASE entry (the file's own name) is left out


@needs_host_libs
def test_library_maxima_and_glibc_banner() -> None:
    data = (HOST_LIBS / "libstdc++.so.6").resolve().read_bytes()
    lib = LibraryVersions("libstdc++.so.6", "/x", definitions=version_definitions(data)[1])
    expected = readelf_definitions((HOST_LIBS / "libstdc++.so.6").resolve())
    assert lib.maxima()["GLIBCXX"] == top(expected, "GLIBCXX")
    assert lib.maxima()["CXXABI"] == top(expected, "CXXABI")  # CXXABI_TM_1 is not a version
    ldd = subprocess.run(["ldd", "--version"], capture_output=True, text=True, check=True).stdout
    release = re.search(r"(\d+\.\d+)\s*$", ldd.splitlines()[0])
    assert release is not None
    banner = _GLIBC_BANNER.search((HOST_LIBS / "libc.so.6").read_bytes())
    assert banner is not None and banner.group(1).decode() == release.group(1)


def test_not_elf_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not a readable ELF"):
        version_definitions(b"/* GNU ld script */ GROUP ( libc.so.6 )")


@pytest.mark.parametrize(
    ("path", "target", "expected"),
    [
        (
            "/lib/x86_64-linux-gnu/libstdc++.so.6",
            "libstdc++.so.6.0.30",
            "/lib/x86_64-linux-gnu/libstdc++.so.6.0.30",
        ),
        ("/usr/lib64/ld.so", "../lib/x86_64-linux-gnu/ld.so", "/usr/lib/x86_64-linux-gnu/ld.so"),
        ("/usr/lib/libm.so.6", "/opt/real/libm.so.6", "/opt/real/libm.so.6"),
        ("/lib/libx.so", "../../../../etc/libx.so", "/etc/libx.so"),  # never above the image root
        ("/lib/liby.so", "//usr/./lib/liby.so.1", "/usr/lib/liby.so.1"),
    ],
)
def test_resolve_link_stays_in_the_image(path: str, target: str, expected: str) -> None:
    assert _resolve_link(path, target) == expected


def _reading(image: str, ceilings: dict[str, str], release: str | None = None) -> ImageCeilings:
    libs = []
    for soname, prefixes in (
        ("libc.so.6", ("GLIBC",)),
        ("libstdc++.so.6", ("GLIBCXX", "CXXABI")),
        ("libgcc_s.so.1", ("GCC",)),
    ):
        names = tuple(f"{p}_{ceilings[p]}" for p in prefixes if p in ceilings)
        if names:
            extra = ("GLIBC_PRIVATE", "GLIBC_2.2.5") if soname == "libc.so.6" else ("CXXABI_TM_1",)
            libs.append(LibraryVersions(soname, f"/lib/{soname}", definitions=names + extra, release=release))
        else:
            libs.append(LibraryVersions(soname, None))
    return ImageCeilings(image, f"sha256:{image}", "x86_64", tuple(libs))


def test_policy_match_uses_auditwheel_data_and_the_glibc_release() -> None:
    m228 = get_policy("manylinux_2_28")
    r = _reading("a", m228.ceilings(), release="2.28")
    assert r.ceilings == m228.ceilings() and r.absent == ()
    match = r.policy_match()
    assert match.policy is not None and match.policy.name == "manylinux_2_28"
    assert match.newer is not None and match.newer.name == "manylinux_2_31" and match.newer_unmet
    # a policy whose symbol ceilings equal an older one's still promises its own glibc release
    same = [p for p in policies() if p.name != "linux" and policy_glibc(p) is not None]
    pairs = [(a, b) for a, b in zip(same[1:], same, strict=False) if a.ceilings() == b.ceilings()]
    assert pairs, "auditwheel's data has policies with equal ceilings (e.g. 2_36/2_37)"
    newer, older = pairs[0]  # (manylinux_2_37, manylinux_2_36): glibc 2.37 added no symbol version
    at_older = match_policy(older.ceilings(), "x86_64", policy_glibc(older))
    at_newer = match_policy(older.ceilings(), "x86_64", policy_glibc(newer))
    assert at_older.policy == older and at_older.newer == newer
    assert at_older.newer_unmet == (f"glibc release {policy_glibc(newer)} > {policy_glibc(older)}",)
    assert at_newer.policy == newer


def test_policy_match_without_libstdcxx_and_too_old() -> None:
    c = {"GLIBC": "2.28", "GCC": "7.0.0"}
    r = _reading("nocxx", c, release="2.28")
    assert r.absent == ("GLIBCXX", "CXXABI")
    match = r.policy_match()
    assert match.policy is not None and match.policy.name == "manylinux_2_28"
    assert "GLIBCXX/CXXABI absent" in match.describe() and "libstdc++.so.6" in match.describe()
    assert match.to_json()["absent"] == ["GLIBCXX", "CXXABI"]
    old = match_policy({"GLIBC": "2.3"}, "x86_64")
    assert old.policy is None and "older than the oldest" in old.describe()


def test_minimum_across_images_and_absent_prefixes() -> None:
    a = _reading("a", {"GLIBC": "2.36", "GLIBCXX": "3.4.30", "CXXABI": "1.3.13", "GCC": "12.0.0"})
    b = _reading("b", {"GLIBC": "2.41", "GLIBCXX": "3.4.33", "CXXABI": "1.3.15", "GCC": "14.0.0"})
    c = _reading("c", {"GLIBC": "2.9", "GCC": "4.8.0"})
    assert minimum_ceilings([a, b]) == (
        {"GLIBC": "2.36", "GLIBCXX": "3.4.30", "CXXABI": "1.3.13", "GCC": "12.0.0"},
        {},
    )
    ceilings, absent = minimum_ceilings([b, c])
    assert ceilings == {"GLIBC": "2.9", "GCC": "4.8.0"}  # 2.9 < 2.41 numerically, not as text
    assert absent == {"GLIBCXX": ["c"], "CXXABI": ["c"]}
    policy = get_policy("manylinux_2_28").ceilings()
    assert tighten(policy, a.ceilings) == policy
    assert (
        tighten(policy, c.ceilings)["GLIBC"] == "2.9" and tighten(policy, c.ceilings)["GLIBCXX"] == "3.4.24"
    )


def test_cache_round_trip_and_schema(tmp_path: Path) -> None:
    r = _reading("a", {"GLIBC": "2.36", "GCC": "12.0.0"}, release="2.36")
    path = tmp_path / "c" / "abc.json"
    _store_cache(path, r.image_id, r.arch, r.libraries)
    hit = _load_cache(path)
    assert hit == ("x86_64", r.libraries)
    # schema 2 (before unreadable libraries were refused) may hold a reading with a broken libc
    path.write_text(path.read_text().replace(f'"cache_schema": {CACHE_SCHEMA}', '"cache_schema": 2'))
    assert CACHE_SCHEMA > 2 and _load_cache(path) is None
    path.write_text("{not json")
    assert _load_cache(path) is None


def _lib(soname: str, problem: str | None = None, path: str | None = "/lib/x/lib") -> LibraryVersions:
    return LibraryVersions(soname, path, definitions=() if problem else ("GLIBC_2.36",), problem=problem)


def test_check_libraries_refuses_a_broken_or_missing_libc_and_corrupt_others() -> None:
    ok = [_lib("libc.so.6"), _lib("libm.so.6"), _lib("libstdc++.so.6", path=None), _lib("libgcc_s.so.1")]
    check_libraries("img", "x86_64-linux-gnu", ok)  # absent libstdc++ is fine
    with pytest.raises(UsageError, match=r"has no libc\.so\.6 in /lib/x86_64-linux-gnu") as err:
        check_libraries("img", "x86_64-linux-gnu", [_lib("libc.so.6", path=None), *ok[1:]])
    assert err.value.exit_code == 2
    for index, soname in enumerate(("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1")):
        libs = list(ok)
        libs[index] = _lib(soname, problem="/lib/x/lib: not a readable ELF file: bad magic")
        with pytest.raises(UsageError, match=rf"{re.escape(soname)}: /lib/x/lib: not a readable ELF"):
            check_libraries("img", "x86_64-linux-gnu", libs)


@pytest.mark.parametrize("reference", ["", "   ", " debian:trixie-slim", "debian:trixie\n", "a\tb"])
def test_check_image_reference_refuses_empty_and_blank(reference: str) -> None:
    with pytest.raises(UsageError, match="image reference") as err:
        check_image_reference(reference)
    assert err.value.exit_code == 2


def test_check_image_reference_leaves_the_grammar_to_the_engine() -> None:
    for reference in ("debian:trixie-slim", "sha256:" + "a" * 64, "registry:5000/x/y@sha256:" + "b" * 64):
        check_image_reference(reference)
