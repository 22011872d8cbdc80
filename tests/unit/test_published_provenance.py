"""Issue 38, "provenance on the default path": a static index serves each wheel's verified attestation
beside it (``<wheel>.provenance``, linked by PEP 740's ``data-provenance``), and ``buildkit verify
--index URL --public-key K WHEEL`` checks a downloaded wheel against it (exit 12 when it does not hold).

The wheels are small real wheels with an attestation signed by the test key (tests/helpers/
wheels_for_publish.py), published by ``publish --public-key`` to a ``file://`` index and read back
through :mod:`buildkit.pyindex`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from buildkit.attestation import attestation_path, load_public_key, verify_published
from buildkit.cli import cli
from buildkit.errors import BuildkitError, NotReproducible
from buildkit.publish import index
from buildkit.publish.run import publish
from buildkit.publish.target import parse_target
from buildkit.pyindex import IndexClient
from tests.helpers.wheels_for_publish import OTHER_KEY, make_wheel, public_key_file, write_wheel

NAME = "demo_pkg-1.0-py3-none-any.whl"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def no_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BUILDKIT_PUBLISH_KEY", raising=False)


def _published(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A signed wheel published with the test key: (the wheel under dist, the index root, the key)."""
    wheel = make_wheel(tmp_path / "dist", NAME)
    key = public_key_file(tmp_path / "keys")
    publish(tmp_path / "dist", parse_target(str(tmp_path / "idx")), public_key=key)
    return wheel, tmp_path / "idx", key


def _downloaded(root: Path, folder: Path) -> Path:
    """The wheel as a user gets it: downloaded from the index's page through the index client."""
    client = IndexClient()
    page = client.page((root / "simple" / "demo-pkg").as_uri() + "/")
    link = next(x for x in page.links if x.filename == NAME)
    folder.mkdir(parents=True, exist_ok=True)
    client.download(link.url, folder / NAME, hashes=link.hashes)
    return folder / NAME


def _invoke(*args: str) -> tuple[int, str]:
    """``buildkit verify ARGS`` in this process: its exit code (``buildkit``'s main maps an error to
    its code, as test_bytes_changed_after_publishing_fail checks end to end) and what it said."""
    done = CliRunner().invoke(cli, ["verify", *args])
    if isinstance(done.exception, BuildkitError):
        return done.exception.exit_code, done.exception.message
    return done.exit_code, done.output


def _verify(wheel: Path, root: Path, key: Path) -> tuple[int, str]:
    return _invoke("--index", (root / "simple").as_uri(), "--public-key", str(key), str(wheel))


def test_the_index_serves_the_attestation_that_verified(tmp_path: Path) -> None:
    wheel, root, _key = _published(tmp_path)
    project = root / "simple" / "demo-pkg"
    served = project / (NAME + index.PROVENANCE_SUFFIX)
    assert served.read_bytes() == attestation_path(wheel).read_bytes()
    assert f'data-provenance="{served.name}"' in (project / "index.html").read_text()
    entry = json.loads((project / "index.json").read_text())["files"][0]
    assert entry["provenance"] == served.name
    link = IndexClient().page(project.as_uri() + "/").links[0]
    assert link.provenance == served.as_uri()


def test_a_wheel_without_a_verified_attestation_gets_no_provenance(tmp_path: Path) -> None:
    """A wheel added without one (``publish --recipe`` alone verifies none) has no file and no attribute,
    also once another wheel with provenance is added beside it."""
    root = tmp_path / "idx"
    plain = write_wheel(tmp_path / "demo_pkg-0.9-py3-none-any.whl", {"demo_pkg/__init__.py": b""})
    index.add_wheel(root, plain, index.sha256_file(plain))
    newer = write_wheel(tmp_path / NAME, {"demo_pkg/__init__.py": b"X = 1\n"})
    index.add_wheel(root, newer, index.sha256_file(newer), b'{"payload": ""}')
    project = root / "simple" / "demo-pkg"
    assert not (project / (plain.name + index.PROVENANCE_SUFFIX)).exists()
    links = {x.filename: x.provenance for x in IndexClient().page(project.as_uri() + "/").links}
    assert links == {plain.name: None, NAME: (project / (NAME + index.PROVENANCE_SUFFIX)).as_uri()}


def test_verify_index_accepts_the_downloaded_wheel(tmp_path: Path) -> None:
    _wheel, root, key = _published(tmp_path)
    downloaded = _downloaded(root, tmp_path / "download")
    check = verify_published(downloaded, load_public_key(key), str(root / "simple"))
    assert check.wheel == NAME
    code, output = _verify(downloaded, root, key)
    assert code == 0 and f"{NAME}: attestation verified" in output, output


def test_bytes_changed_after_publishing_fail(tmp_path: Path) -> None:
    """The index's wheel rewritten after publish (page and hash fragment too): downloads, fails, 12."""
    _wheel, root, key = _published(tmp_path)
    project = root / "simple" / "demo-pkg"
    (tmp_path / "evil").mkdir()
    replaced = write_wheel(tmp_path / "evil" / NAME, {"demo_pkg/__init__.py": b"import os  # evil\n"})
    old, new = index.sha256_file(project / NAME), index.sha256_file(replaced)
    shutil.copyfile(replaced, project / NAME)
    page = project / "index.html"
    page.write_text(page.read_text().replace(old, new))
    downloaded = _downloaded(root, tmp_path / "download")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    url = (root / "simple").as_uri()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "buildkit",
            "verify",
            "--index",
            url,
            "--public-key",
            str(key),
            str(downloaded),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == NotReproducible.exit_code, done.stderr
    assert f"{NAME} (sha256:{new}) is not the attested subject" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_provenance_fails(tmp_path: Path) -> None:
    _wheel, root, key = _published(tmp_path)
    project = root / "simple" / "demo-pkg"
    downloaded = _downloaded(root, tmp_path / "download")
    (project / (NAME + index.PROVENANCE_SUFFIX)).unlink()
    code, output = _verify(downloaded, root, key)
    assert code == NotReproducible.exit_code and "cannot read the provenance of" in output, output
    page = project / "index.html"
    page.write_text(page.read_text().replace(f' data-provenance="{NAME}.provenance"', ""))
    code, output = _verify(downloaded, root, key)
    assert code == NotReproducible.exit_code, output
    assert "serves no provenance for demo_pkg-1.0-py3-none-any.whl" in output


def test_a_wheel_the_index_does_not_list_fails(tmp_path: Path) -> None:
    _wheel, root, key = _published(tmp_path)
    other = make_wheel(tmp_path / "other", "demo_pkg-2.0-py3-none-any.whl")
    code, output = _verify(other, root, key)
    assert code == NotReproducible.exit_code and "does not list demo_pkg-2.0" in output, output


def test_wrong_key_fails(tmp_path: Path) -> None:
    _wheel, root, _key = _published(tmp_path)
    downloaded = _downloaded(root, tmp_path / "download")
    code, output = _verify(downloaded, root, public_key_file(tmp_path / "other", OTHER_KEY))
    assert code == NotReproducible.exit_code, output
    assert "no signature verifies with the given public key" in output
    served = root / "simple" / "demo-pkg" / (NAME + index.PROVENANCE_SUFFIX)
    assert output.startswith(f"{served.as_uri()}: ") and "buildkit-provenance-" not in output


def test_index_is_an_attestation_check_not_a_rebuild(tmp_path: Path) -> None:
    wheel, root, key = _published(tmp_path)
    url = (root / "simple").as_uri()
    code, output = _invoke("--index", url, str(wheel))
    assert code == 2 and "need --public-key" in output, output
    code, output = _invoke("--index", url, "--public-key", str(key), "--attestation-file", "x", str(wheel))
    assert code == 2 and "drop --attestation-file" in output, output
    code, output = _invoke("--index", url, "--public-key", str(key), "--cache", str(wheel))
    assert code == 2 and "apply to a rebuild" in output, output
