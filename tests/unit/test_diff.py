"""``buildkit diff``: release diffs of wheels built here with the host's gcc (Debian bookworm's glibc
2.36, so ``dlopen`` binds to GLIBC_2.34) and synthesized HIP offload bundles; ``--against-index``
on a local PEP 503 index (``file://``, and ``http://`` served from this process)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from packaging.utils import parse_wheel_filename

from buildkit.cli import main
from buildkit.compare.diff import IndexFile, choose_baseline, diff_wheels, project_files, project_url
from buildkit.errors import UsageError, WheelReadError
from buildkit.inspect import inspect_wheel
from tests.helpers.offload_bundle import amdgpu_header, plain_bundle
from tests.helpers.shared_library import build_shared_library, have_gcc
from tests.helpers.wheel_zip import write_wheel

pytestmark = pytest.mark.skipif(not have_gcc(), reason="gcc is needed to build test libraries")

OLD_C = "#include <string.h>\nint f(const char *s) { return (int)strlen(s); }\n"  # GLIBC_2.2.5 only
NEW_C = '#include <dlfcn.h>\nvoid *g(void) { return dlopen("x", 0); }\n'  # dlopen@GLIBC_2.34
FOO_USER = "int foo(void);\nint h(void) { return foo(); }\n"
# code object v4 headers with xnack "any" (0x100): target ids "gfx908" / "gfx90a"
E_FLAGS = {"gfx908": 0x30 | 0x100, "gfx90a": 0x3F | 0x100}


def fatbin(archs: list[str]) -> bytes:
    entries = [("host-x86_64-unknown-linux-gnu-", b"")]
    for arch in archs:
        entries.append((f"hipv4-amdgcn-amd-amdhsa--{arch}", amdgpu_header(E_FLAGS[arch], 2) + b"\0" * 256))
    return plain_bundle(entries)


def so(tmp: Path, name: str, source: str, archs: list[str] | None = None, **kw: Any) -> bytes:
    out = build_shared_library(tmp / name, source, fatbin=fatbin(archs) if archs else None, **kw)
    return out.read_bytes()


def wheel(directory: Path, filename: str, members: dict[str, bytes]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    tag = filename.removesuffix(".whl").split("-", 2)[2]
    return write_wheel(directory / filename, members, tag=tag)


def _valid_diff(doc: dict[str, Any]) -> None:
    """Issue 36: diff --json carries the envelope and follows its schema in `buildkit schema --list`."""
    schema = json.loads(resources.files("buildkit").joinpath("schema/diff.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert (doc["schema"], doc["schema_version"]) == ("rocm-buildkit/diff", 1)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(["diff", *args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("libs")
    return {
        "old": so(tmp, "old.so", OLD_C, ["gfx908", "gfx90a"]),
        "new": so(tmp, "new.so", NEW_C, ["gfx90a"]),
        "plain_old": so(tmp, "plain.so", OLD_C),
    }


def test_symbol_raise_and_removed_arch_are_regressions(
    tmp_path: Path, libs: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    old = wheel(tmp_path, "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/_k.so": libs["old"]})
    new = wheel(
        tmp_path / "n",
        "demo-1.1-cp311-cp311-manylinux_2_34_x86_64.whl",
        {"demo/_k.so": libs["new"], "demo/extra.py": b"x = 1\n"},
    )
    d = diff_wheels(old, new)
    glibc = [s for s in d.symbols if (s.library, s.prefix) == ("libc.so.6", "GLIBC")]
    assert [(s.old, s.new, s.change, s.regression) for s in glibc] == [("2.2.5", "2.34", "raised", True)]
    assert [(g.file, g.removed, g.added, g.regression) for g in d.gfx] == [
        ("demo/_k.so", ("gfx908",), (), True)
    ]
    assert d.gfx_removed == ("gfx908",)
    assert d.tags_removed == ("cp311-cp311-manylinux_2_28_x86_64",)
    assert d.tags_uncovered == d.tags_removed  # a manylinux_2_34 wheel does not install on 2.28 systems
    assert d.tags_added == ("cp311-cp311-manylinux_2_34_x86_64",)
    assert (d.old_policy, d.new_policy, d.policy_regression) == (
        "manylinux_2_5_x86_64",
        "manylinux_2_34_x86_64",
        True,
    )
    # the dist-info directories were renamed with the version: not members added/removed
    assert d.members_added == ("demo/extra.py",) and d.members_removed == ()
    assert d.size_delta == new.stat().st_size - old.stat().st_size
    assert d.regression

    code, out, err = run(capsys, str(old), str(new))
    assert code == 0 and "REGRESSION" in out and "libc.so.6" in out and "-gfx908" in out
    code, out, err = run(capsys, str(old), str(new), "--fail-on-regression")
    assert code == 7 and "regression" in err
    code, out, _ = run(capsys, str(old), str(new), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["schema_version"] == 1 and doc["regression"] is True
    _valid_diff(doc)
    assert doc["gfx"]["objects"][0]["removed"] == ["gfx908"]
    assert doc["size"]["old"] == old.stat().st_size and doc["size"]["new"] == new.stat().st_size
    assert doc["size"]["percent"] == round(100 * (doc["size"]["delta"]) / doc["size"]["old"], 2)
    assert any("GLIBC 2.2.5 -> 2.34" in r for r in doc["regressions"])


def test_reverse_direction_is_an_improvement(
    tmp_path: Path, libs: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    old = wheel(tmp_path, "demo-1.0-cp311-cp311-manylinux_2_34_x86_64.whl", {"demo/_k.so": libs["new"]})
    new = wheel(tmp_path, "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/_k.so": libs["old"]})
    d = diff_wheels(old, new)
    assert not d.regression, d.regressions
    assert [(s.prefix, s.change) for s in d.symbols if s.library == "libc.so.6"] == [("GLIBC", "lowered")]
    assert d.gfx_added == ("gfx908",) and d.gfx_removed == ()
    assert d.tags_removed == ("cp311-cp311-manylinux_2_34_x86_64",) and d.tags_uncovered == ()
    code, out, _ = run(capsys, str(old), str(new), "--fail-on-regression")
    assert code == 0 and "no regression" in out


def test_identical_content_new_version(tmp_path: Path, libs: dict[str, bytes]) -> None:
    members = {"demo/_k.so": libs["old"]}
    old = wheel(tmp_path, "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", members)
    new = wheel(tmp_path, "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl", members)
    d = diff_wheels(old, new)
    assert d.regressions == () and d.symbols == () and d.gfx == () and d.libraries == ()
    assert d.members_added == () and d.members_removed == () and d.notes == ()
    back = diff_wheels(new, old)
    assert back.notes == ("the new version 1.0 is not newer than 1.1",)


def test_new_external_library_regresses_unless_excluded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, libs: dict[str, bytes]
) -> None:
    libdir = tmp_path / "lib"
    libdir.mkdir()
    build_shared_library(libdir / "libfoo.so", "int foo(void) { return 1; }\n", soname="libfoo.so.1")
    monkeypatch.setenv("LIBRARY_PATH", str(libdir))
    user = so(tmp_path, "user.so", FOO_USER, libs=("foo",))
    old = wheel(tmp_path, "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/a.so": libs["plain_old"]})
    new = wheel(
        tmp_path,
        "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl",
        {"demo/a.so": libs["plain_old"], "demo/b.so": user},
    )
    d = diff_wheels(old, new)
    assert [(c.library, c.old, c.new, c.regression) for c in d.libraries] == [
        ("libfoo.so.1", None, "external", True)
    ]
    assert "external library libfoo.so.1 (new)" in d.regressions
    excluded = diff_wheels(old, new, exclude_globs=["libfoo.so*"])
    assert [(c.library, c.new, c.regression) for c in excluded.libraries] == [
        ("libfoo.so.1", "excluded", False)
    ]
    assert not excluded.regression
    # grafting the library into the wheel (as auditwheel repair does: with an RPATH reaching it) is
    # no regression either
    user_rpath = so(tmp_path, "user_rpath.so", FOO_USER, libs=("foo",), rpath="$ORIGIN/../demo.libs")
    grafted = wheel(
        tmp_path / "g",
        "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl",
        {
            "demo/a.so": libs["plain_old"],
            "demo/b.so": user_rpath,
            "demo.libs/libfoo.so.1": (libdir / "libfoo.so").read_bytes(),
        },
    )
    assert [(c.new, c.regression) for c in diff_wheels(old, grafted).libraries] == [("grafted", False)]


def test_generic_target_covers_feature_specific_one(tmp_path: Path) -> None:
    xnack_off = 0x3F | 0x200  # gfx90a:xnack-
    specific = plain_bundle(
        [("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", amdgpu_header(xnack_off, 2) + b"\0" * 64)]
    )
    generic = fatbin(["gfx90a"])
    old_so = build_shared_library(tmp_path / "s.so", OLD_C, fatbin=specific).read_bytes()
    new_so = build_shared_library(tmp_path / "g.so", OLD_C, fatbin=generic).read_bytes()
    old = wheel(tmp_path, "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/_k.so": old_so})
    new = wheel(tmp_path, "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/_k.so": new_so})
    forward = diff_wheels(old, new)
    assert [(g.removed, g.added, g.regression) for g in forward.gfx] == [
        (("gfx90a:xnack-",), ("gfx90a",), False)
    ]
    assert not forward.regression
    backward = diff_wheels(new, old)  # any-xnack -> xnack- only: narrower
    assert [g.regression for g in backward.gfx] == [True] and backward.gfx_removed == ("gfx90a",)


def test_usage_errors(tmp_path: Path, libs: dict[str, bytes], capsys: pytest.CaptureFixture[str]) -> None:
    w = wheel(tmp_path, "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/_k.so": libs["old"]})
    assert run(capsys, str(w))[0] == 2
    assert run(capsys, str(w), str(w), "--against-index", "file:///nonexistent")[0] == 2
    assert run(capsys, str(w), "--against-index", "ftp://example.invalid/simple/")[0] == 2
    bad = tmp_path / "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    bad.write_bytes(b"not a zip")
    assert run(capsys, str(w), str(bad))[0] == 6


# --------------------------------------------------------------------------- --against-index
def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def index(tmp_path: Path, libs: dict[str, bytes]) -> dict[str, Path]:
    """simple/demo/index.html linking (relative, ../../packages/) to:
    0.9 and 1.0 (cp311 manylinux_2_28, the baseline is 1.0), 1.0 for cp312 (incompatible tag),
    1.0.1 yanked, 2.0 (newer than NEW: skipped)."""
    root = tmp_path / "index"
    packages = root / "packages"
    built = tmp_path / "built"
    files = {
        "demo-0.9-cp311-cp311-manylinux_2_28_x86_64.whl": libs["plain_old"],
        "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl": libs["old"],
        "demo-1.0-cp312-cp312-manylinux_2_28_x86_64.whl": libs["old"],
        "demo-1.0.1-cp311-cp311-manylinux_2_28_x86_64.whl": libs["old"],
        "demo-2.0-cp311-cp311-manylinux_2_28_x86_64.whl": libs["old"],
    }
    links = []
    for name, data in files.items():
        path = wheel(packages, name, {"demo/_k.so": data})
        yanked = ' data-yanked=""' if "1.0.1" in name else ""
        links.append(f'<a href="../../packages/{name}#sha256={sha256(path)}"{yanked}>{name}</a><br/>')
    project = root / "simple" / "demo"
    project.mkdir(parents=True)
    (project / "index.html").write_text(
        "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "</body></html>\n"
    )
    new = wheel(built, "demo-1.1-cp311-cp311-manylinux_2_34_x86_64.whl", {"demo/_k.so": libs["new"]})
    return {"root": root, "new": new, "baseline": packages / "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"}


def test_against_file_index_picks_newest_older_compatible(
    index: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url = (index["root"] / "simple").as_uri() + "/"
    page, files = project_files(url, "Demo")
    assert page == url + "demo/" and len(files) == 5
    chosen, notes = choose_baseline(files, inspect_wheel(index["new"]))
    assert chosen is not None and chosen.filename == index["baseline"].name
    assert chosen.hashes == {"sha256": sha256(index["baseline"])}
    assert any("yanked" in n for n in notes) and any("2.0" in n and "not older" in n for n in notes)

    code, out, _ = run(capsys, "--against-index", url, str(index["new"]), "--json")
    doc = json.loads(out)
    _valid_diff(doc)
    assert code == 0 and doc["old"]["filename"] == index["baseline"].name
    assert doc["old"]["sha256"] == sha256(index["baseline"]) and doc["baseline"]["verified"] == ["sha256"]
    assert doc["regression"] is True
    code, out, _ = run(capsys, "--against-index", url, str(index["new"]), "--fail-on-regression")
    assert code == 7 and "gfx908" in out


def test_against_index_hash_mismatch_and_missing_project(
    index: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = (index["root"] / "simple").as_uri() + "/"
    index["baseline"].write_bytes(index["baseline"].read_bytes() + b"tampered")
    code, _, err = run(capsys, "--against-index", url, str(index["new"]))
    assert code == 6 and "does not match its sha256" in err

    other = wheel(tmp_path / "o", "other-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", {"x.py": b""})
    code, out, _ = run(capsys, "--against-index", url, str(other))
    assert code == 0 and "nothing to compare" in out
    code, _, err = run(capsys, "--against-index", url, str(other), "--require-baseline")
    assert code == 2 and "no earlier compatible release" in err


@pytest.fixture
def http_index(index: dict[str, Path]) -> Iterator[str]:
    """The same index served over real HTTP from a thread of this process."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(index["root"]))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


def test_against_http_index(
    http_index: str, index: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert project_url(http_index, "demo") == http_index + "/demo/"
    assert project_url(http_index + "/demo/", "demo") == http_index + "/demo/"
    code, out, _ = run(capsys, "--against-index", http_index, str(index["new"]), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["old"]["filename"] == index["baseline"].name
    assert doc["baseline"]["file"]["url"].startswith("http://127.0.0.1:")


def test_bare_directory_index_without_html(
    index: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A plain directory of wheels (no index.html, no hashes) is listed like a page."""
    flat = index["root"] / "flat" / "demo"
    flat.mkdir(parents=True)
    shutil.copy(index["baseline"], flat)
    code, out, _ = run(
        capsys, "--against-index", (index["root"] / "flat").as_uri(), str(index["new"]), "--json"
    )
    doc = json.loads(out)
    assert code == 0 and doc["old"]["filename"] == index["baseline"].name
    assert doc["baseline"]["verified"] == []


def test_missing_file_index_root_is_an_error_not_a_first_release(
    tmp_path: Path, libs: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    """A file:// index directory that does not exist (a wrong URL) is exit 2 and not "no earlier
    release" (exit 0, which even --fail-on-regression let through); a missing project page inside an
    existing index stays a first release."""
    new = wheel(
        tmp_path / "dist", "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/_k.so": libs["old"]}
    )
    missing = (tmp_path / "nonexistent" / "simple").as_uri() + "/"
    for extra in ((), ("--fail-on-regression",), ("--json",)):
        code, out, err = run(capsys, "--against-index", missing, str(new), *extra)
        assert code == 2 and "does not exist" in err and str(tmp_path / "nonexistent" / "simple") in err
        assert "no earlier compatible release" not in out + err
    with pytest.raises(UsageError, match="does not exist"):
        project_files(missing + "demo/", "demo")  # the URL naming the project page: its index root
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("x")
    code, _, err = run(capsys, "--against-index", a_file.as_uri(), str(new))
    assert code == 2 and "is not a directory" in err

    existing = tmp_path / "index" / "simple"
    existing.mkdir(parents=True)
    code, out, _ = run(capsys, "--against-index", existing.as_uri() + "/", str(new), "--fail-on-regression")
    assert code == 0 and "no earlier compatible release" in out


def test_regression_rule_refuses_a_missing_file_index(tmp_path: Path, libs: dict[str, bytes]) -> None:
    """The gate rule (buildkit.gate.rules.regression, through diff_against_index) behaves the same: a missing
    index root is a UsageError, not a first release with nothing to report."""
    from buildkit.compare.baseline import check_regression, compare_with_last_release
    from tests.unit.test_regression import job_for

    new = wheel(
        tmp_path / "dist", "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/_k.so": libs["old"]}
    )
    missing = (tmp_path / "nonexistent" / "simple").as_uri() + "/"
    job = job_for(tmp_path, missing)
    with pytest.raises(UsageError, match="does not exist") as err:
        check_regression(job, new)
    assert err.value.exit_code == 2
    (tmp_path / "empty" / "simple").mkdir(parents=True)
    first = compare_with_last_release(job_for(tmp_path, (tmp_path / "empty" / "simple").as_uri() + "/"), new)
    assert first is not None and first.baseline.file is None and first.passed


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


UNREADABLE = {
    "no dist-info": ({"demo/__init__.py": b""}, "not a wheel: expected one top-level *.dist-info/WHEEL"),
    "two dist-infos": (
        {"a-1.dist-info/WHEEL": b"Wheel-Version: 1.0\n", "b-1.dist-info/WHEEL": b"Wheel-Version: 1.0\n"},
        "found dist-info dirs: a-1.dist-info, b-1.dist-info",
    ),
    "absolute member": ({"/etc/x": b"", "demo-1.1.dist-info/WHEEL": b""}, "is an absolute path"),
    "dotdot member": ({"../x": b"", "demo-1.1.dist-info/WHEEL": b""}, "escapes the install directory"),
    "bad RECORD": (
        {"demo-1.1.dist-info/WHEEL": b"Wheel-Version: 1.0\n", "demo-1.1.dist-info/RECORD": b"a,,big\n"},
        "size 'big' of 'a' is not a number",
    ),
    "truncated ELF": (
        {
            "demo-1.1.dist-info/WHEEL": b"Wheel-Version: 1.0\n",
            "demo/_k.so": b"\x7fELF\x02\x01\x01" + b"\0" * 40,
        },
        "demo/_k.so",
    ),
}


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_unreadable_wheel_messages_name_the_wheel(
    case: str, tmp_path: Path, libs: dict[str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    """``buildkit diff`` prints inspect_wheel's message as is: it must say which wheel it is about
    ("not a wheel: expected one top-level *.dist-info/WHEEL" alone did not)."""
    import re

    members, message = UNREADABLE[case]
    old = wheel(tmp_path, "demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/_k.so": libs["old"]})
    new = _zip(tmp_path / "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl", members)
    code, _, err = run(capsys, str(old), str(new))
    assert code == 6 and message in err
    assert re.search(rf"^{re.escape(new.name)}: .*{re.escape(message)}", err, re.MULTILINE)
    with pytest.raises(WheelReadError) as exc:
        inspect_wheel(new)
    assert str(exc.value).startswith(f"{new.name}: ") and str(exc.value).count(new.name) == 1


# --------------------------------------------------------------------------- baseline: product lines
def listed(*names: str, yanked: tuple[str, ...] = ()) -> list[IndexFile]:
    out = []
    for name in names:
        _, version, build, tags = parse_wheel_filename(name)
        out.append(
            IndexFile(name, f"https://example.invalid/{name}", {}, version, build, tags, name in yanked)
        )
    return out


@pytest.mark.parametrize(
    ("new_name", "expected", "note"),
    [
        # the sibling 1.0+rocm7.0 is another product line: 1.1+rocm7.2 is the first rocm7.2 release
        (
            "demo-1.1+rocm7.2-cp311-cp311-manylinux_2_28_x86_64.whl",
            None,
            "no earlier release with local label rocm7.2",
        ),
        # the same line wins even over a newer sibling of another line
        (
            "demo-1.2+rocm7.0-cp311-cp311-manylinux_2_28_x86_64.whl",
            "demo-1.0+rocm7.0-cp311-cp311-manylinux_2_28_x86_64.whl",
            "other product lines",
        ),
        # no label: only releases without one (0.9), never a labelled 1.0+rocm7.0
        (
            "demo-1.1-cp311-cp311-manylinux_2_28_x86_64.whl",
            "demo-0.9-cp311-cp311-manylinux_2_28_x86_64.whl",
            "+rocm7.0",
        ),
    ],
)
def test_baseline_stays_in_the_product_line_of_the_local_label(
    tmp_path: Path, new_name: str, expected: str | None, note: str
) -> None:
    files = listed(
        "demo-0.9-cp311-cp311-manylinux_2_28_x86_64.whl",
        "demo-1.0+rocm7.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        "demo-1.1+rocm6.4-cp311-cp311-manylinux_2_28_x86_64.whl",
    )
    new = inspect_wheel(wheel(tmp_path, new_name, {"demo/__init__.py": b""}))
    chosen, notes = choose_baseline(files, new)
    assert (chosen.filename if chosen else None) == expected
    assert any(note in n for n in notes), notes


def test_baseline_same_label_picks_the_newest_earlier_of_that_line(tmp_path: Path) -> None:
    files = listed(
        "demo-1.0+rocm7.2-cp311-cp311-manylinux_2_28_x86_64.whl",
        "demo-1.1+rocm7.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        "demo-1.1+rocm7.2-cp311-cp311-manylinux_2_28_x86_64.whl",
        "demo-1.1.1+rocm7.2-cp311-cp311-manylinux_2_28_x86_64.whl",
        yanked=("demo-1.1.1+rocm7.2-cp311-cp311-manylinux_2_28_x86_64.whl",),
    )
    new = inspect_wheel(
        wheel(tmp_path, "demo-1.2+rocm7.2-cp311-cp311-manylinux_2_28_x86_64.whl", {"demo/__init__.py": b""})
    )
    chosen, _ = choose_baseline(files, new)
    assert chosen is not None and chosen.filename == "demo-1.1+rocm7.2-cp311-cp311-manylinux_2_28_x86_64.whl"
