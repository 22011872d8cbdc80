"""Issue 38, cases 1-3: a job's wheel whose METADATA contradicts its file name or hides a field, and
a wheel holding symbolic links, are refused by ``check --recipe --job``, ``split`` and ``publish
--recipe`` (each passed them before: ``pip install`` then refused the wheel, or installed a hidden
dependency, and ``unzip`` of the published wheel recreated the links).

The wheels are real job wheels (a gcc-built library, tests/helpers/wheels_for_publish.py) whose
METADATA or members are rewritten with RECORD, manifest and attestation made again for the new bytes,
as a careless or hostile build would leave them.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from buildkit import manifest
from buildkit.errors import GateFailed, PublishRefused
from buildkit.gate.config import GateConfig
from buildkit.gate.evaluate import evaluate
from buildkit.inspect import inspect_wheel
from buildkit.publish.run import publish
from buildkit.publish.target import parse_target
from buildkit.recipe import load_recipe
from buildkit.split.run import split_wheel
from tests.helpers.shared_library import have_gcc
from tests.helpers.wheel_edit import edit_wheel, read_members, record_row
from tests.helpers.wheel_zip import write_wheel
from tests.helpers.wheels_for_publish import DEMO_RECIPE, job_wheel, public_key_file, sign

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
JOB = "cp312-rocm6.4"
GOOD = "Metadata-Version: 2.1\nName: demo\nVersion: {version}\n"

#: (case, METADATA text ({version}: the file name's), what the finding says)
METADATA_CASES = [
    ("version", "Metadata-Version: 2.1\nName: demo\nVersion: 9.9\n", "has inconsistent version: expected"),
    ("name", "Metadata-Version: 2.1\nName: other-project\nVersion: {version}\n", "Name is 'other-project'"),
    (
        "crlf",
        GOOD + "Summary: hi\r\nRequires-Dist: injected-evil\n",
        "line 4 (Summary field) ends with CR LF, the first line with LF",
    ),
    (
        "lone-cr",
        GOOD + "Summary: hi\rRequires-Dist: injected-evil\n",
        "line 4 (Summary field) ends with a lone CR",
    ),
    ("two-names", GOOD + "Name: demo\n", "Name appears 2 times; it is a single-use field"),
    ("two-versions", GOOD + "Version: {version}\n", "Version appears 2 times"),
    ("requires-python", GOOD + "Requires-Python: >=3.x\n", "'>=3.x' is invalid for 'requires-python'"),
    ("requires-dist", GOOD + "Requires-Dist: torch>>2\n", "'torch>>2' is invalid for 'requires-dist'"),
    ("provides-extra", GOOD.replace("2.1", "2.3") + "Provides-Extra: a b\n", "'a b'"),
    ("metadata-version", GOOD.replace("2.1", "7.0"), "not a valid metadata version"),
]


@pytest.fixture
def recipe(tmp_path: Path) -> Path:
    path = tmp_path / "recipes" / "demo.yaml"
    path.parent.mkdir()
    path.write_text(DEMO_RECIPE)
    return path


def _remanifest(wheel: Path) -> None:
    """Manifest and attestation for the wheel's new bytes (what a build that wrote it leaves)."""
    data = manifest.read(wheel)
    data["wheel"].update(sha256=manifest.sha256_file(wheel), size=wheel.stat().st_size)
    manifest.write(wheel, data)
    sign(wheel)


def _with_metadata(wheel: Path, text: str) -> Path:
    version = wheel.name.split("-")[1]
    dist_info = "-".join(wheel.name.split("-")[:2]) + ".dist-info"
    edit_wheel(wheel, put={f"{dist_info}/METADATA": text.format(version=version).encode()}, rerecord=True)
    _remanifest(wheel)
    return wheel


def _with_links(wheel: Path, links: dict[str, str]) -> Path:
    """``wheel`` with symlink members added (the Unix mode S_IFLNK|0777 in the external attributes,
    the target as data, as Info-ZIP's ``zip -y`` stores them), RECORD listing them."""
    members = read_members(wheel)
    record = next(n for n in members if n.endswith(".dist-info/RECORD"))
    rows = [r for r in members[record].decode().splitlines() if not r.startswith(record)]
    rows += [record_row(name, target.encode()) for name, target in links.items()] + [f"{record},,"]
    members[record] = ("\n".join(rows) + "\n").encode()
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in links.items():
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    _remanifest(wheel)
    return wheel


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "buildkit", *args], capture_output=True, text=True, env=env)


def test_a_wheel_the_build_wrote_passes(tmp_path: Path) -> None:
    """The premise: the helpers' METADATA (and an old bdist_wheel's 2.0, a name and version written
    otherwise than normalised, CR LF in the body) has no core-metadata finding."""
    wheel = write_wheel(tmp_path / "fine-1.0-py3-none-any.whl", {"fine/a.py": b""})
    verdict = evaluate(inspect_wheel(wheel), GateConfig())
    assert verdict.passed and not [f for f in verdict.findings if f.rule == "core-metadata"]
    old = b"Metadata-Version: 2.0\nName: Fine\nVersion: 1.0.0\n\nbody\r\n"
    edit_wheel(wheel, put={"fine-1.0.dist-info/METADATA": old}, rerecord=True)
    verdict = evaluate(inspect_wheel(wheel), GateConfig())
    assert verdict.passed, verdict.findings


def test_the_inspection_keeps_the_header_section_and_the_links(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/a.py": b""})
    edit_wheel(
        wheel, put={"demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\r\n\nthe body\n"}
    )
    _add_raw_links(wheel, {"demo/passwd": "/etc/passwd"})
    report = inspect_wheel(wheel, verify_record=False)
    assert report.core_metadata is not None
    assert report.core_metadata.headers == "Metadata-Version: 2.1\nName: demo\r\n"
    assert [(s.member, s.kind, s.target) for s in report.special_members] == [
        ("demo/passwd", "symlink", "/etc/passwd")
    ]


def _add_raw_links(wheel: Path, links: dict[str, str]) -> None:
    with zipfile.ZipFile(wheel, "a") as zf:
        for name, target in links.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)


def test_a_wheel_without_metadata_is_refused(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/a.py": b""})
    edit_wheel(wheel, drop=["demo-1.0.dist-info/METADATA"], rerecord=True)
    verdict = evaluate(inspect_wheel(wheel), GateConfig())
    assert not verdict.passed
    assert any("METADATA is missing: pip refuses the wheel" in f.message for f in verdict.findings)


needs_gcc = pytest.mark.skipif(not have_gcc(), reason="gcc/g++ build the job wheels' libraries")


@needs_gcc
@pytest.mark.parametrize(("case", "text", "said"), METADATA_CASES, ids=[c[0] for c in METADATA_CASES])
def test_check_with_the_job_refuses_bad_metadata(
    tmp_path: Path, recipe: Path, case: str, text: str, said: str
) -> None:
    wheel = _with_metadata(job_wheel(tmp_path / "dist", recipe, JOB), text)
    result = _cli("check", str(wheel), "--recipe", str(recipe), "--job", JOB)
    assert result.returncode == 7, result.stdout + result.stderr
    assert "core-metadata" in result.stdout and said in result.stdout, result.stdout


@needs_gcc
@pytest.mark.parametrize("case", ["version", "crlf", "two-names", "requires-python"])
def test_split_and_publish_refuse_bad_metadata(tmp_path: Path, recipe: Path, case: str) -> None:
    text, said = next((t, s) for c, t, s in METADATA_CASES if c == case)
    dist = tmp_path / "dist"
    wheel = _with_metadata(job_wheel(dist / JOB, recipe, JOB), text)
    with pytest.raises(GateFailed, match="fails the gate, so it is not split") as split_info:
        split_wheel(wheel, tmp_path / "split")
    assert said in str(split_info.value)
    for trust in ({"recipe": load_recipe(recipe)}, {"public_key": public_key_file(tmp_path / "key")}):
        with pytest.raises(PublishRefused) as info:
            publish(dist, parse_target(str(tmp_path / "idx")), **trust)  # type: ignore[arg-type]
        assert f"{wheel}: the gate, run again, fails it: " in str(info.value) and said in str(info.value)
    assert not (tmp_path / "idx").exists()


@needs_gcc
def test_symlink_members_are_refused_naming_the_target(tmp_path: Path, recipe: Path) -> None:
    dist = tmp_path / "dist"
    wheel = _with_links(
        job_wheel(dist / JOB, recipe, JOB), {"demo/passwd": "/etc/passwd", "demo/up": "../../../.."}
    )
    result = _cli("check", str(wheel), "--recipe", str(recipe), "--job", JOB)
    assert result.returncode == 7, result.stdout + result.stderr
    assert "demo/passwd is a symbolic link to '/etc/passwd'" in result.stdout
    assert "demo/up is a symbolic link to '../../../..'" in result.stdout
    out = tmp_path / "split"
    result = _cli("split", str(wheel), "--out", str(out))
    assert result.returncode == 7 and "symbolic link to '/etc/passwd'" in result.stdout + result.stderr
    assert not list(out.glob("*.whl"))
    with pytest.raises(PublishRefused, match="demo/passwd is a symbolic link to '/etc/passwd'"):
        publish(dist, parse_target(str(tmp_path / "idx")), recipe=load_recipe(recipe))
    assert not (tmp_path / "idx").exists()


def test_a_field_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    """PyPI and packaging read METADATA as UTF-8; a Latin-1 byte leaves the field unparsed there."""
    wheel = write_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/a.py": b""})
    text = GOOD.format(version="1.0") + "Summary: caf\xe9\n"
    edit_wheel(wheel, put={"demo-1.0.dist-info/METADATA": text.encode("latin-1")}, rerecord=True)
    verdict = evaluate(inspect_wheel(wheel), GateConfig())
    messages = [f.message for f in verdict.findings if f.rule == "core-metadata"]
    assert any("Summary is not valid UTF-8" in m for m in messages), messages
    assert not verdict.passed


def test_an_extra_no_provides_extra_declares_is_refused(tmp_path: Path) -> None:
    """Issue 38, case 9: a Requires-Dist behind ``extra == "device-gfx942"`` without the Provides-Extra:
    ``pip install 'demo[device-gfx942]'`` warned and installed no device code."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    needs = ('demo-device-gfx942==1.0; extra == "device-gfx942"',)
    lacking = write_wheel(tmp_path / "a" / "demo-1.0-py3-none-any.whl", {"demo/a.py": b""}, requires=needs)
    verdict = evaluate(inspect_wheel(lacking), GateConfig())
    messages = [f.message for f in verdict.findings if f.rule == "core-metadata"]
    assert not verdict.passed and any(
        "names the extra 'device-gfx942', which no Provides-Extra declares" in m for m in messages
    ), messages
    declared = write_wheel(
        tmp_path / "b" / "demo-1.0-py3-none-any.whl",
        {"demo/a.py": b""},
        requires=needs,
        extras=("device-gfx942",),
    )
    assert evaluate(inspect_wheel(declared), GateConfig()).passed
