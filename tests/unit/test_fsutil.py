"""``fsutil.atomic_write``: all or nothing, synced; and no module renames over a file by hand."""

from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

import pytest

from buildkit import fsutil
from buildkit.fsutil import atomic_write

ROOT = Path(__file__).resolve().parents[2]


def test_writes_text_and_bytes_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    assert atomic_write(target, "héllo\n") == target
    assert target.read_bytes() == "héllo\n".encode()
    atomic_write(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_mode_default_follows_the_umask_and_can_be_given(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "a", "x")
        atomic_write(tmp_path / "b", "x", mode=0o600)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o640  # as open() would give: not mkstemp's 0600
    assert stat.S_IMODE((tmp_path / "b").stat().st_mode) == 0o600


def test_fsyncs_the_file_and_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    atomic_write(tmp_path / "m.json", "{}")
    assert len(synced) == 2
    assert Path(synced[0]).parent == tmp_path and Path(synced[0]).name.startswith(".m.json.")  # the temp
    assert Path(synced[1]) == tmp_path  # the folder, after the rename


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_no_temp_file_and_old_content_on_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    target = tmp_path / "m.json"
    target.write_text("old")

    def failing_fsync(fd: int) -> None:
        raise error

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(type(error)):
        atomic_write(target, "new")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


def test_no_temp_file_when_the_rename_fails(tmp_path: Path) -> None:
    (tmp_path / "m.json").mkdir()  # a folder in the way: os.replace refuses
    with pytest.raises(OSError):
        atomic_write(tmp_path / "m.json", "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


def test_a_stream_is_renamed_into_place_only_when_its_block_ends_well(tmp_path: Path) -> None:
    """``atomic_stream``: the bytes written through it replace the target at the end of the block; an
    error in the block (a hash that does not match) leaves the target as it was and no temporary file."""
    target = tmp_path / "demo.tar.gz"
    target.write_bytes(b"old")
    with pytest.raises(ValueError), fsutil.atomic_stream(target, suffix=".part") as out:
        out.write(b"half of the new")
        assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")]  # written beside it
        raise ValueError("sha256 mismatch")
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["demo.tar.gz"]
    with fsutil.atomic_stream(target, suffix=".part") as out:
        out.write(b"new ")
        out.write(b"bytes")
    assert target.read_bytes() == b"new bytes" and sorted(p.name for p in tmp_path.iterdir()) == [
        "demo.tar.gz"
    ]


def test_umask_is_read_without_changing_it() -> None:
    old = os.umask(0o077)
    try:
        assert fsutil._umask() == 0o077
        assert os.umask(0o077) == 0o077  # still what it was
    finally:
        os.umask(old)


# --------------------------------------------------------------------------- one writer
#: the os.replace calls outside fsutil, each with why it is not a single-file write
RENAMES_ALLOWED: dict[tuple[str, str], str] = {
    ("buildkit/building/output.py", "swap_in"): (
        "swaps a whole job folder into --out or a quarantine folder (and back on failure)"
    ),
    ("buildkit/building/quarantine.py", "_move"): (
        "moves a refused wheel (written by cibuildwheel, not by us) into its quarantine folder's "
        "incoming folder, which swap_in then renames into place"
    ),
    (
        "buildkit/building/quarantine.py",
        "release",
    ): "renames a superseded quarantine folder aside before removing it",
    ("buildkit/building/cache_store.py", "export_cache"): (
        "renames a whole exported tar (streamed from the engine, too big for atomic_write's bytes) and "
        "each exported volume folder into place"
    ),
    ("buildkit/building/output.py", "discard_output"): "renames a stale job folder aside before removing it",
    ("buildkit/building/staging.py", "sweep_debris"): "puts back a job folder a killed swap left aside",
    ("buildkit/publish/journal.py", "_replay"): (
        "commits a static index batch: moves the staged files (wheels copied by copy_verified, streamed, "
        "hashed and fsynced while copied; .metadata files and pages written and fsynced) into place, in "
        "the order the journal records, itself written with atomic_write first (the commit point)"
    ),
    ("buildkit/source/unpack.py", "unpack"): "renames a whole unpacked source tree into place",
    ("buildkit/split/run.py", "split_wheel"): (
        "moves the split's wheels (streamed into its staging folder inside --out and fsynced, too big "
        "for atomic_write's bytes) into --out once every one passed its gate: the device wheels first, "
        "the host last"
    ),
    ("buildkit/split/run.py", "_keep_refused"): (
        "moves a refused split's wheels and reports into an incoming folder, renamed over the older refusal"
    ),
    ("buildkit/building/requirements.py", "_virtualenv"): (
        "moves the wheels pip downloaded (into a folder of their own, inside the job's staging folder) "
        "into the staged wheelhouse once their resolution succeeded"
    ),
    ("buildkit/building/sdk_link.py", "link_wheel"): (
        "a stdlib-only script run in the build container after repair (it cannot import buildkit): the "
        "patched wheel, written beside the repaired one, renamed over it"
    ),
}


def _renames(path: Path) -> list[str]:
    """The functions of ``path`` that call ``os.replace`` (or ``os.rename``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[str] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
            call = child if isinstance(child, ast.Call) else None
            if (
                call is not None
                and isinstance(call.func, ast.Attribute)
                and call.func.attr in ("replace", "rename")
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id == "os"
            ):
                found.append(function)
            visit(child, inner)

    visit(tree, "<module>")
    return found


def test_only_fsutil_renames_over_a_file() -> None:
    seen: set[tuple[str, str]] = set()
    for path in sorted((ROOT / "buildkit").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel == "buildkit/fsutil.py":
            continue
        for function in _renames(path):
            seen.add((rel, function))
    unexplained = seen - set(RENAMES_ALLOWED)
    assert not unexplained, f"write with fsutil.atomic_write instead: {sorted(unexplained)}"
    assert set(RENAMES_ALLOWED) <= seen, f"stale allow-list entries: {sorted(set(RENAMES_ALLOWED) - seen)}"


def test_the_rename_scan_sees_a_hand_made_atomic_write(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text("import os\ndef save(p, t):\n    t.write_text('x')\n    os.replace(t, p)\n")
    assert _renames(sample) == ["save"]
