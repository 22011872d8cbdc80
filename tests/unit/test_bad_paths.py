"""Issue 38, case 6: ``cache import`` of a truncated or non-tar file, ``split --out /proc/x`` or a dangling
symbolic link ended in a traceback (exit 1: ``tarfile.ReadError``, ``FileExistsError``...). Each is now
a UsageError naming the path (exit 2), fuzzed: random bytes and every cut of a real export's tar for
``cache import``, and the ways an ``--out`` folder cannot be written for ``split``.

``cache import`` is called with a stand-in engine that fails the test when asked anything: a bad
archive must be refused before the engine is reached (a real engine is not needed to read a file).
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from buildkit.building.cache_store import Carried, export_cache, import_cache
from buildkit.cli import main
from buildkit.errors import UsageError
from tests.helpers.wheel_zip import write_wheel
from tests.unit.test_split import MEMBERS

VOLUME = "rocm-buildkit-ccache-0123456789ab"
FUZZ = settings(
    max_examples=int(os.environ.get("BUILDKIT_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


class EngineAsked(Exception):
    pass


class NoEngine:
    """Any use of the engine is a failure of the test (the archive is read before it is asked)."""

    def __getattr__(self, name: str) -> Any:
        raise EngineAsked(name)


def _export(files: dict[str, bytes]) -> bytes:
    """A tar as ``buildkit cache export`` writes it: ``<volume>/<ccache's files>``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{VOLUME}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


EXPORT = _export({"a/b/c.o": os.urandom(3000), "d/e.stderr": b"", "stats": b"x" * 700})
#: where the last member's data ends: any cut before it loses data
with tarfile.open(fileobj=io.BytesIO(EXPORT)) as _tar:
    DATA_END = max(m.offset_data + m.size for m in _tar.getmembers())


def _import(path: Path) -> Carried | UsageError:
    try:
        return import_cache(NoEngine(), path)
    except UsageError as err:
        return err


@FUZZ
@given(data=st.binary(max_size=4096))
def test_cache_import_of_random_bytes_is_refused(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "cache.tar"
    path.write_bytes(data)
    outcome = _import(path)
    if isinstance(outcome, Carried):  # only a tar with no member (zero blocks) reads as one
        assert outcome.volumes == () and not data.strip(b"\0"), outcome
    else:
        assert str(outcome).startswith(f"{path}: "), outcome


@FUZZ
@given(cut=st.integers(min_value=0, max_value=len(EXPORT) - 1))
def test_cache_import_of_a_cut_export_is_refused_unless_all_its_data_is_there(
    tmp_path: Path, cut: int
) -> None:
    path = tmp_path / "cache.tar"
    path.write_bytes(EXPORT[:cut])
    try:
        outcome = _import(path)
    except EngineAsked:  # every member is there, and the end-of-archive blocks that say so
        assert cut >= DATA_END + 2 * tarfile.BLOCKSIZE, cut
        return
    assert isinstance(outcome, UsageError), outcome
    assert "truncated" in str(outcome) or "not a tar" in str(outcome) or cut == 0, outcome


def test_cache_import_cli_says_what_is_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through the command: exit 2 and the file named, no traceback (the issue's reproduction: a
    truncated tar; the engine is only asked after the file was read)."""
    truncated = tmp_path / "cut.tar"
    truncated.write_bytes(EXPORT[: DATA_END - 100])
    not_tar = tmp_path / "notes.txt"
    not_tar.write_text("hello\n" * 200)
    dangling = tmp_path / "gone.tar"
    dangling.symlink_to(tmp_path / "nowhere.tar")
    for path, said in (
        (truncated, "truncated"),
        (not_tar, "not a tar of `buildkit cache export`"),
        (dangling, "no such file or folder (a symbolic link to"),
    ):
        with pytest.raises(UsageError) as info:
            import_cache(NoEngine(), path)
        assert said in str(info.value)


def _out_cases(tmp_path: Path) -> dict[str, Path]:
    afile = tmp_path / "a-file"
    afile.write_text("x")
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "missing" / "out")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    return {
        "proc": Path("/proc/x"),
        "proc-deep": Path("/proc/self/x/y"),
        "dangling-symlink": dangling,
        "symlink-loop": loop,
        "a-file": afile,
        "under-a-file": afile / "out",
        "dev-null": Path("/dev/null"),
    }


@pytest.mark.parametrize(
    "case", ["proc", "proc-deep", "dangling-symlink", "symlink-loop", "a-file", "under-a-file", "dev-null"]
)
def test_split_out_that_cannot_be_written_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    (tmp_path / "in").mkdir()
    wheel = write_wheel(tmp_path / "in" / "demo-1.0-py3-none-any.whl", MEMBERS, fixed_time=True)
    out = _out_cases(tmp_path)[case]
    with pytest.raises(SystemExit) as info:
        main(["split", str(wheel), "--out", str(out)])
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    assert str(out) in err and "--out" in err and "Traceback" not in err
    if case == "dangling-symlink":
        assert f"is a symbolic link to {tmp_path / 'missing' / 'out'}, which does not resolve" in err


@pytest.mark.parametrize("dest", ["/proc/x/cache.tar", "/proc/x", "dangling"])
def test_cache_export_to_a_place_that_cannot_be_written_is_a_usage_error(tmp_path: Path, dest: str) -> None:
    target = Path(dest)
    if dest == "dangling":
        target = tmp_path / "gone"
        target.symlink_to(tmp_path / "missing")
    with pytest.raises(UsageError, match="cannot write there"):
        export_cache(NoEngine(), target, [VOLUME])


@pytest.mark.parametrize("case", ["proc", "dangling-symlink", "symlink-loop", "under-a-file"])
def test_build_out_and_log_dir_that_cannot_be_written_are_refused_first(tmp_path: Path, case: str) -> None:
    """``build --log-dir /proc/x`` passed the check (root passes every access test) and the build
    died with a traceback once it opened the job's log, after its image was prepared."""
    from buildkit.building.output import check_writable

    folder = _out_cases(tmp_path)[case]
    with pytest.raises(UsageError, match=f"--log-dir {folder}: "):
        check_writable(folder, "--log-dir")
    check_writable(tmp_path / "new" / "logs", "--log-dir")  # a folder that can be made: fine
    assert not (tmp_path / "new").exists() and not list(tmp_path.glob(".buildkit-probe-*"))
