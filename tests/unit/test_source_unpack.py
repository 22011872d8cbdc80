"""Unpacking source archives without trusting them (buildkit/source/unpack.py): hostile tar and zip
archives built here, each refused with the member named and nothing left behind; good ones unpacked
with their single top folder stripped."""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from buildkit.source import unpack as unpack_mod
from buildkit.source.unpack import UnsafeArchive, unpack

Entry = tarfile.TarInfo


def _file(name: str, data: bytes = b"x", mode: int = 0o644) -> tuple[Entry, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = 1_600_000_000
    return info, data


def _special(name: str, kind: bytes, link: str = "") -> tuple[Entry, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info, b""


def _tar(path: Path, entries: list[tuple[Entry, bytes]], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode, format=tarfile.PAX_FORMAT) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def _zip(path: Path, entries: list[tuple[str, bytes, int]]) -> Path:
    """``(name, data, unix mode with file type)`` members."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 2, 3, 4, 6))
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return path


def _refused(tmp_path: Path, archive: Path, member: str | None, reason: str) -> UnsafeArchive:
    """unpack refuses ``archive`` naming ``member``, and leaves nothing: no dest, no temporary folder."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    before = sorted(os.listdir(out))
    with pytest.raises(UnsafeArchive) as info:
        unpack(archive, out / "src")
    err = info.value
    assert err.member == member, str(err)
    assert reason in str(err)
    assert str(err).startswith(f"{archive.name}: ")
    if member is not None:
        assert repr(member) in str(err)
    assert sorted(os.listdir(out)) == before  # nothing half-written, no .src.unpack-* folder
    return err


# ---------------------------------------------------------------- good archives


def test_sdist_layout_is_unpacked_with_its_top_folder_stripped(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "demo-1.0.tar.gz",
        [
            _file("demo-1.0/setup.py", b"from setuptools import setup\n"),
            _file("demo-1.0/bin/run", b"#!/bin/sh\n", mode=0o4775),
            _file("demo-1.0/pkg/__init__.py", b"__version__ = '1.0'\n"),
            _special("demo-1.0/pkg/alias.py", tarfile.SYMTYPE, "__init__.py"),
            _special("demo-1.0/copy.py", tarfile.LNKTYPE, "demo-1.0/setup.py"),
        ],
    )
    dest = unpack(archive, tmp_path / "src")
    assert dest == tmp_path / "src"
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == [
        "bin",
        "bin/run",
        "copy.py",
        "pkg",
        "pkg/__init__.py",
        "pkg/alias.py",
        "setup.py",
    ]
    assert (dest / "pkg" / "alias.py").is_symlink()
    assert (dest / "pkg" / "alias.py").read_text() == "__version__ = '1.0'\n"
    assert (dest / "copy.py").read_bytes() == b"from setuptools import setup\n"
    assert not (dest / "copy.py").is_symlink()
    assert stat.S_IMODE((dest / "bin" / "run").stat().st_mode) == 0o755  # no setuid, exec kept
    assert stat.S_IMODE((dest / "setup.py").stat().st_mode) == 0o644
    assert (dest / "setup.py").stat().st_mtime == 1_600_000_000
    assert sorted(os.listdir(tmp_path)) == ["demo-1.0.tar.gz", "src"]


def test_several_top_level_entries_are_kept_as_they_are(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "a.tar", [_file("a/x"), _file("b")], mode="w")
    dest = unpack(archive, tmp_path / "src")
    assert sorted(os.listdir(dest)) == ["a", "b"]


@pytest.mark.parametrize("mode", ["w:bz2", "w:xz", "w"])
def test_other_compressions(tmp_path: Path, mode: str) -> None:
    archive = _tar(tmp_path / "x.tar.any", [_file("p-1/setup.py", b"ok")], mode=mode)
    assert (unpack(archive, tmp_path / "src") / "setup.py").read_bytes() == b"ok"


def test_zip_with_an_executable_and_an_inner_link(tmp_path: Path) -> None:
    archive = _zip(
        tmp_path / "p.zip",
        [
            ("p-1/", b"", stat.S_IFDIR | 0o755),
            ("p-1/run.sh", b"echo\n", stat.S_IFREG | 0o755),
            ("p-1/setup.py", b"setup()\n", stat.S_IFREG | 0o644),
            ("p-1/link.py", b"setup.py", stat.S_IFLNK | 0o777),
        ],
    )
    dest = unpack(archive, tmp_path / "src")
    assert (dest / "setup.py").read_bytes() == b"setup()\n"
    assert os.access(dest / "run.sh", os.X_OK)
    assert os.readlink(dest / "link.py") == "setup.py"


def test_dest_must_not_exist(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "a.tar.gz", [_file("a/x")])
    (tmp_path / "src").mkdir()
    with pytest.raises(FileExistsError):
        unpack(archive, tmp_path / "src")


# ---------------------------------------------------------------- hostile tar archives

HOSTILE_TARS: dict[str, tuple[list[tuple[Entry, bytes]], str, str]] = {
    # case: (entries, the member named, the reason)
    "absolute": ([_file("p/ok"), _file("/etc/evil")], "/etc/evil", "has an absolute name"),
    "parent": ([_file("../evil")], "../evil", "has a '..' component"),
    "inner parent": ([_file("p/a/../../../evil")], "p/a/../../../evil", "has a '..' component"),
    "symlink out": (
        [_file("p/ok"), _special("p/etc", tarfile.SYMTYPE, "../../etc")],
        "p/etc",
        "is a symbolic link to '../../etc', which leaves the tree",
    ),
    "absolute symlink": (
        [_special("p/passwd", tarfile.SYMTYPE, "/etc/passwd")],
        "p/passwd",
        "outside the tree",
    ),
    # x/a -> b/../.. stays inside when written; x/b -> .. (inside too) makes it leave the tree
    "symlink out through a later link": (
        [
            _special("x/a", tarfile.SYMTYPE, "b/../.."),
            _special("x/b", tarfile.SYMTYPE, ".."),
        ],
        "x/a",
        "which leaves the tree",
    ),
    "symlink loop": (
        [_special("p/a", tarfile.SYMTYPE, "b"), _special("p/b", tarfile.SYMTYPE, "a")],
        "p/a",
        "a chain of links that never ends",
    ),
    "written through a symlink": (
        [_special("p/d", tarfile.SYMTYPE, "."), _file("p/d/x")],
        "p/d/x",
        "lies below the symbolic link 'p/d'",
    ),
    "hardlink out": (
        [_file("p/ok"), _special("p/passwd", tarfile.LNKTYPE, "/etc/passwd")],
        "p/passwd",
        "is a hard link to '/etc/passwd', outside the tree",
    ),
    "hardlink up": (
        [_special("p/h", tarfile.LNKTYPE, "../outside")],
        "p/h",
        "outside the tree",
    ),
    "hardlink to nothing before it": (
        [_special("p/h", tarfile.LNKTYPE, "p/later"), _file("p/later")],
        "p/h",
        "not a file extracted before it",
    ),
    "character device": ([_special("p/null", tarfile.CHRTYPE)], "p/null", "is a character device"),
    "block device": ([_special("p/sda", tarfile.BLKTYPE)], "p/sda", "is a block device"),
    "fifo": ([_special("p/pipe", tarfile.FIFOTYPE)], "p/pipe", "is a FIFO"),
    "duplicate": ([_file("p/a", b"1"), _file("p/a", b"2")], "p/a", "is in the archive twice"),
    "file over a folder": (
        [_file("p/a/x"), _file("p/a")],
        "p/a",
        "is a file, and the archive has 'p/a' as a folder",
    ),
    "below a file": ([_file("p/a"), _file("p/a/x")], "p/a/x", "lies below 'p/a', which the archive has"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_TARS))
def test_hostile_tar_is_refused_and_leaves_nothing(tmp_path: Path, case: str) -> None:
    entries, member, reason = HOSTILE_TARS[case]
    archive = _tar(tmp_path / "hostile.tar.gz", entries)
    _refused(tmp_path, archive, member, reason)
    assert not (tmp_path / "evil").exists() and not (tmp_path / "outside").exists()


def test_too_many_members(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unpack_mod, "MAX_MEMBERS", 10)
    archive = _tar(tmp_path / "many.tar.gz", [_file(f"p/f{i:02}") for i in range(11)])
    _refused(tmp_path, archive, "p/f10", "more than 10 members")
    ten = _tar(tmp_path / "ten.tar.gz", [_file(f"p/f{i:02}") for i in range(10)])
    assert len(os.listdir(unpack(ten, tmp_path / "ok"))) == 10


def test_too_much_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unpack_mod, "MAX_TOTAL_BYTES", 1000)
    archive = _tar(tmp_path / "big.tar.gz", [_file("p/a", b"a" * 600), _file("p/b", b"b" * 600)])
    _refused(tmp_path, archive, "p/b", "over 1000 bytes uncompressed")


def test_the_default_bounds() -> None:
    assert unpack_mod.MAX_MEMBERS == 200_000
    assert unpack_mod.MAX_TOTAL_BYTES == 4 * 2**30


def test_a_declared_huge_member_is_refused_before_reading(tmp_path: Path) -> None:
    """A header claiming 5 GiB: refused from the header, not after writing 4 GiB."""
    archive = tmp_path / "liar.tar"
    info = tarfile.TarInfo("p/huge")
    info.size = 5 * 2**30
    header = info.tobuf(format=tarfile.GNU_FORMAT)
    archive.write_bytes(header + b"\0" * 1024)
    _refused(tmp_path, archive, "p/huge", "uncompressed")


def test_corrupt_and_foreign_files(tmp_path: Path) -> None:
    good = _tar(tmp_path / "g.tar.gz", [_file("p/" + str(i), os.urandom(20000)) for i in range(20)])
    truncated = tmp_path / "t.tar.gz"
    truncated.write_bytes(good.read_bytes()[:-3000])
    _refused(tmp_path, truncated, "p/19", "cannot be read: unexpected end of data")  # the member cut short
    garbage = tmp_path / "g2.tar.gz"
    garbage.write_bytes(b"\x1f\x8b" + os.urandom(4000))
    _refused(tmp_path, garbage, None, "cannot be read as a tar archive")
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    _refused(tmp_path, text, None, "not a tar.gz, tar.bz2, tar.xz or zip archive")


# ---------------------------------------------------------------- hostile zip archives

HOSTILE_ZIPS: dict[str, tuple[list[tuple[str, bytes, int]], str, str]] = {
    "parent": ([("p/ok", b"", 0o100644), ("p/../../evil", b"x", 0o100644)], "p/../../evil", "'..'"),
    "absolute": ([("/tmp/evil", b"x", 0o100644)], "/tmp/evil", "has an absolute name"),
    "symlink out": ([("p/l", b"../../etc", 0o120777)], "p/l", "which leaves the tree"),
    "fifo": ([("p/f", b"", stat.S_IFIFO | 0o644)], "p/f", "is a special file"),
    "duplicate": ([("p/a", b"1", 0o100644), ("p/a", b"2", 0o100644)], "p/a", "is in the archive twice"),
    "backslash": ([("p\\..\\..\\evil", b"x", 0o100644)], "p\\..\\..\\evil", "backslash"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_ZIPS))
def test_hostile_zip_is_refused_and_leaves_nothing(tmp_path: Path, case: str) -> None:
    entries, member, reason = HOSTILE_ZIPS[case]
    with pytest.warns(UserWarning) if case == "duplicate" else contextlib.nullcontext():
        archive = _zip(tmp_path / "hostile.zip", entries)
    _refused(tmp_path, archive, member, reason)


def test_zip_with_too_many_members(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unpack_mod, "MAX_MEMBERS", 5)
    archive = _zip(tmp_path / "many.zip", [(f"p/{i}", b"", 0o100644) for i in range(6)])
    _refused(tmp_path, archive, None, "has 6 members, more than 5")


def test_zip_that_lies_about_its_size(tmp_path: Path) -> None:
    """The headers say 1 byte, the data inflates to 100 000: no more than the declared byte is read,
    whose CRC then fails: refused at the member, nothing kept."""
    archive = _zip(tmp_path / "lie.zip", [("p/bomb", b"\0" * 100_000, 0o100644)])
    raw = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as zf:
        info = zf.getinfo("p/bomb")
    central = raw.rfind(b"PK\x01\x02")
    raw[central + 24 : central + 28] = (1).to_bytes(4, "little")  # uncompressed size
    local = info.header_offset
    raw[local + 22 : local + 26] = (1).to_bytes(4, "little")
    archive.write_bytes(bytes(raw))
    _refused(tmp_path, archive, "p/bomb", "cannot be read: Bad CRC-32")
