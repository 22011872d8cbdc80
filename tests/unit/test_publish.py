"""buildkit.publish: manifest checks, targets, PyPI local-version refusal, static-directory publishing.

The pypiserver (twine) target is tested against a real server in tests/integration/test_pypiserver.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit import publish as pub
from buildkit.errors import PublishRefused, UsageError
from buildkit.manifest import manifest_path, sha256_file
from tests.helpers.wheels_for_publish import FAILING, make_wheel

ROOT = Path(__file__).resolve().parents[2]


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    if cwd is not None:  # run this tree's buildkit from another working directory
        env = {**(env or dict(os.environ)), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "buildkit", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=cwd,
    )


def test_parse_target() -> None:
    assert pub.parse_target("pypi").kind == "pypi"
    assert pub.parse_target("https://upload.pypi.org/legacy/").simple_url == "https://pypi.org/simple/"
    assert pub.parse_target("https://test.pypi.org/legacy/").kind == "pypi"
    srv = pub.parse_target("http://127.0.0.1:8080/")
    assert (srv.kind, srv.simple_url) == ("index", "http://127.0.0.1:8080/simple/")
    assert pub.parse_target("file:///srv/idx").location == "/srv/idx"
    assert pub.parse_target("out/idx") == pub.Target("directory", "out/idx")
    with pytest.raises(UsageError, match="credentials in the URL"):
        pub.parse_target("https://user:s3cret@example.org/")
    with pytest.raises(UsageError, match="unsupported scheme"):
        pub.parse_target("s3://bucket/idx")


@pytest.mark.parametrize("text", ["", "file://", "file:", "  "])
def test_parse_target_refuses_an_empty_directory(text: str) -> None:
    with pytest.raises(UsageError, match="empty directory path"):
        pub.parse_target(text)


@pytest.mark.parametrize("to", ["", "file://"])
def test_cli_empty_target_writes_nothing_in_the_working_directory(tmp_path: Path, to: str) -> None:
    dist = tmp_path / "dist"
    make_wheel(dist, "demo-1.0-py3-none-any.whl")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    result = run_cli("publish", str(dist), "--to", to, cwd=cwd)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "empty directory path" in result.stderr and "Traceback" not in result.stderr
    assert list(cwd.iterdir()) == []


def _unwritable_targets(tmp_path: Path) -> list[tuple[str, str]]:
    afile = tmp_path / "afile"
    afile.write_text("keep me\n")
    return [
        (str(afile), "exists and is not a directory"),
        (str(afile / "sub"), "is a file, not a directory"),
        ("/proc/idx", "cannot write the index there"),  # /proc refuses new entries, even to root
    ]


def test_unwritable_directory_target_is_a_usage_error(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    make_wheel(dist, "demo-1.0-py3-none-any.whl")
    for to, message in _unwritable_targets(tmp_path):
        with pytest.raises(UsageError, match=message):
            pub.publish(dist, pub.parse_target(to))
    assert (tmp_path / "afile").read_text() == "keep me\n"
    assert not Path("/proc/idx").exists()


def test_cli_unwritable_target_exits_2_without_traceback(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    make_wheel(dist, "demo-1.0-py3-none-any.whl")
    for to, message in _unwritable_targets(tmp_path):
        result = run_cli("publish", str(dist), "--to", to)
        assert result.returncode == 2, (to, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_each_refusal_is_named_and_nothing_is_published(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    good = make_wheel(dist / "job-a", "good-1.0-py3-none-any.whl")
    missing = make_wheel(dist / "job-b", "nomani-1.0-py3-none-any.whl", with_manifest=False)
    failed = make_wheel(dist / "job-c", "failed-1.0-py3-none-any.whl", verdict=FAILING)
    other = make_wheel(dist / "job-d", "other-1.0-py3-none-any.whl", manifest_sha256="ab" * 32)
    with pytest.raises(PublishRefused) as info:
        pub.publish(dist, pub.parse_target(str(tmp_path / "idx")))
    text = str(info.value)
    assert info.value.exit_code == 10
    assert "3 of 4 wheel(s); nothing was published" in text
    assert f"{missing}: no manifest" in text
    assert f"{failed}: the gate failed" in text and "GLIBC_2.38 > ceiling 2.28" in text
    assert f"{other}: sha256 mismatch" in text and sha256_file(other) in text and "ab" * 32 in text
    assert str(good) not in text
    assert not (tmp_path / "idx").exists()


def test_tampered_wheel_is_refused(tmp_path: Path) -> None:
    """The manifest is not trusted for the hash: the sha256 is recomputed from the bytes."""
    wheel = make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    with wheel.open("ab") as fh:
        fh.write(b"\0")
    with pytest.raises(PublishRefused, match="sha256 mismatch"):
        pub.publish(tmp_path / "dist", pub.parse_target(str(tmp_path / "idx")))


def test_manifest_for_another_file_is_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    data = json.loads(manifest_path(wheel).read_text())
    data["wheel"]["filename"] = "demo-2.0-py3-none-any.whl"
    manifest_path(wheel).write_text(json.dumps(data))
    with pytest.raises(PublishRefused, match=r"for another file \(demo-2.0"):
        pub.publish(tmp_path / "dist", pub.parse_target(str(tmp_path / "idx")))


def test_pypi_refuses_local_versions_before_any_upload(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    make_wheel(dist, "demo-1.0+rocm7.2.torch210-py3-none-any.whl")
    with pytest.raises(PublishRefused, match=r"local version label '\+rocm7.2.torch210'.*PyPI refuses"):
        pub.publish(dist, pub.parse_target("pypi"))
    # the same wheel is fine for an index of your own
    outcomes = pub.publish(dist, pub.parse_target(str(tmp_path / "idx")))
    assert [o.status for o in outcomes] == ["published"]


def test_directory_publish_is_idempotent_and_refuses_other_bytes(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    make_wheel(dist / "j1", "demo-1.0-py3-none-any.whl")
    make_wheel(dist / "j2", "demo-1.1-py3-none-any.whl")
    target = pub.parse_target((tmp_path / "idx").as_uri())
    assert [o.status for o in pub.publish(dist, target)] == ["published", "published"]
    assert [o.status for o in pub.publish(dist, target)] == ["already published"] * 2

    rebuilt = tmp_path / "rebuilt"
    make_wheel(rebuilt, "demo-1.0-py3-none-any.whl", payload=b"VALUE = 2\n")
    with pytest.raises(PublishRefused, match="already has a file of this name with other bytes"):
        pub.publish(rebuilt, target)


def test_no_wheels_is_refused(tmp_path: Path) -> None:
    (tmp_path / "dist").mkdir()
    with pytest.raises(PublishRefused, match="no wheels"):
        pub.publish(tmp_path / "dist", pub.parse_target(str(tmp_path / "idx")))


def test_scrub_and_secrets() -> None:
    env = {"TWINE_USERNAME": "__token__", "TWINE_PASSWORD": "pypi-AgEI+abc/def", "MY_API_TOKEN": "tok123456"}
    secrets = pub.secrets_from(env)
    assert "__token__" not in secrets
    text = "auth pypi-AgEI+abc/def and pypi-AgEI%2Babc%2Fdef and tok123456"
    assert pub.scrub(text, secrets) == "auth *** and *** and ***"


def test_cli_exit_codes_and_log(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    make_wheel(dist, "demo-1.0-py3-none-any.whl")
    log = tmp_path / "publish.log"
    ok = run_cli("publish", str(dist), "--to", str(tmp_path / "idx"), "--log", str(log))
    assert ok.returncode == 0, ok.stderr
    assert "published" in ok.stdout and "demo-1.0-py3-none-any.whl" in ok.stdout
    again = run_cli("publish", str(dist), "--to", str(tmp_path / "idx"), "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["wheels"][0]["status"] == "already published"

    make_wheel(dist, "bad-1.0-py3-none-any.whl", verdict=FAILING)
    refused = run_cli("publish", str(dist), "--to", str(tmp_path / "idx"), "--log", str(log))
    assert refused.returncode == 10
    assert "bad-1.0-py3-none-any.whl: the gate failed" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert "the gate failed" in log.read_text()


RECIPE = """\
name: demo
source:
  path: .
version:
  base: "1.0"
python: ["3.12"]
rocm: ["6.4"]
archs:
  list: [gfx90a]
manylinux:
  policy: manylinux_2_28
image: manylinux_2_28-rocm
publish:
  directory: site/index
"""


def test_cli_target_from_the_recipe(tmp_path: Path) -> None:
    """publish.directory is relative to the recipe file, not to the working directory."""
    recipe = tmp_path / "recipes" / "demo.yaml"
    recipe.parent.mkdir()
    recipe.write_text(RECIPE)
    make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    result = run_cli("publish", str(tmp_path / "dist"), "--recipe", str(recipe))
    assert result.returncode == 0, result.stderr
    assert (
        tmp_path / "recipes" / "site" / "index" / "simple" / "demo" / "demo-1.0-py3-none-any.whl"
    ).is_file()
    both = run_cli("publish", str(tmp_path / "dist"), "--recipe", str(recipe), "--to", "x")
    assert both.returncode == 2 and "exactly one of --to" in both.stderr
