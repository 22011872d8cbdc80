"""One judgement of a wheel opens its file once (:func:`buildkit.judge.judge_wheel`), whatever the
configuration asks to read besides the inspection, and ``buildkit check`` judges without the build
stage. The opens are counted with an audit hook (PEP 578): every ``open``/``io.open``/``os.open`` of
the wheel's path, by any reader on any thread, raises the ``open`` event."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from buildkit.gate.config import GateConfig, JobIdentity
from buildkit.gate.torchabi import TorchExports, TorchLibrary
from buildkit.inspect import inspect_wheel
from buildkit.inspect.symtab import wheel_symbol_tables
from buildkit.judge import judge_wheel, judge_wheels
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_zip import write_wheel

_COUNTING: list[tuple[str, list[str]]] = []
_HOOKED: list[bool] = []


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not _COUNTING or not args or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    target, seen = _COUNTING[-1]
    if os.path.abspath(os.fsdecode(args[0])) == target:
        seen.append(event)


@contextmanager
def counting_opens(path: Path) -> Iterator[list[str]]:
    """The opens of ``path`` while the block runs (an audit hook cannot be removed: it is added once
    and counts only inside this block)."""
    if not _HOOKED:
        sys.addaudithook(_hook)
        _HOOKED.append(True)
    seen: list[str] = []
    _COUNTING.append((os.path.abspath(path), seen))
    try:
        yield seen
    finally:
        _COUNTING.pop()


#: an extension module needing a symbol from torch's libc10 and one a helper library of the wheel exports
EXT = "void c10_use(void); void helper_export(void); void run(void) { c10_use(); helper_export(); }\n"
HELPER = "void helper_export(void) {}\n"
C10 = "void c10_use(void) {}\n"


@pytest.fixture
def torch_wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``demo-1.0-py3-none-linux_x86_64.whl``: ``libext.so`` DT_NEEDs ``libc10.so`` (a stub built
    here, found through gcc's LIBRARY_PATH) and needs a symbol ``libhelper.so`` exports."""
    if not have_gcc():
        pytest.skip("needs gcc")
    stubs = tmp_path / "stubs"
    build_shared_library(stubs / "libc10.so", C10, soname="libc10.so")
    monkeypatch.setenv("LIBRARY_PATH", str(stubs))
    ext = build_shared_library(tmp_path / "libext.so", EXT, soname="libext.so", libs=("c10",))
    helper = build_shared_library(tmp_path / "libhelper.so", HELPER, soname="libhelper.so")
    members = {
        "demo/__init__.py": b"",
        "demo/libext.so": ext.read_bytes(),
        "demo/libhelper.so": helper.read_bytes(),
    }
    return write_wheel(tmp_path / "demo-1.0-py3-none-linux_x86_64.whl", members)


def _config() -> GateConfig:
    """Every reader a judgement has: the torch's needs (torch-abi and torch-stable-abi) and the
    host symbols of a py3-none claim."""
    identity = JobIdentity(
        job="py3-rocm5.7", version="1.0", python="cp311", platform_tag="linux_x86_64", wheel_tag="py3-none"
    )
    return GateConfig(identity=identity, torch_stable="2.10", exclude_globs=("libc10.so",))


def _torch() -> TorchExports:
    c10 = TorchLibrary("libc10.so", "libc10.so", (), frozenset({"c10_use"}))
    return TorchExports("torch-x.whl", "wheel", "2.10.0", (c10,), filename="torch-x.whl")


def test_a_judgement_with_every_reader_opens_the_wheel_once(torch_wheel: Path) -> None:
    with counting_opens(torch_wheel) as opens:
        report, verdict = judge_wheel(torch_wheel, _config(), torch=_torch())
    assert len(opens) == 1, f"{torch_wheel.name} opened {len(opens)} times in one judgement"
    # every reader did read: the torch's needs (both passes: the linking member, the helper's exports)
    assert verdict.torch_abi is not None and verdict.torch_abi.linking == ("demo/libext.so",)
    assert verdict.torch_abi.found == 1 and not verdict.torch_abi.missing
    assert verdict.torch_stable is not None
    assert report.filename == torch_wheel.name and len(report.elves) == 2


def test_the_counter_sees_a_second_reader(torch_wheel: Path) -> None:
    """What the test above guards against: readers each opening the path (as check, build and publish
    did before buildkit.judge) count once each."""
    with counting_opens(torch_wheel) as opens:
        report = inspect_wheel(torch_wheel)
        wheel_symbol_tables(torch_wheel, {e.member for e in report.elves}.__contains__)
    assert len(opens) >= 2


def test_many_wheels_are_each_opened_once_and_a_plain_one_too(tmp_path: Path) -> None:
    wheels = [
        write_wheel(tmp_path / f"demo{i}-1.0-py3-none-any.whl", {f"demo{i}/__init__.py": b""}) for i in (1, 2)
    ]
    for wheel in wheels:
        with counting_opens(wheel) as opens:
            (verdict,), failures = judge_wheels([wheel], GateConfig())
        assert (len(opens), failures, verdict.wheel) == (1, [], wheel.name)


SCRIPT = """
import json, sys
from buildkit.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith("buildkit"))), file=sys.stderr)
"""


def test_buildkit_check_loads_no_module_of_the_build_stage(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/__init__.py": b""})
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, "check", "--json", str(wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    loaded = json.loads(proc.stderr.strip().splitlines()[-1])
    assert '"schema": "rocm-buildkit/check-report"' in proc.stdout, proc.stderr
    assert "buildkit.judge.wheel" in loaded  # the wheel was judged in this process
    assert [m for m in loaded if m == "buildkit.building" or m.startswith("buildkit.building.")] == []
