"""The static PEP 503 index writer (buildkit.publish.index): layout, hashes, PEP 658 files, idempotency."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from buildkit.errors import PublishRefused
from buildkit.manifest import sha256_file
from buildkit.publish import index
from tests.helpers.wheels_for_publish import write_wheel


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.anchors.append(dict(attrs))


def anchors(page: Path) -> list[dict[str, str | None]]:
    parser = _Anchors()
    parser.feed(page.read_text())
    return parser.anchors


def test_layout_hashes_and_metadata(tmp_path: Path) -> None:
    wheel = write_wheel(
        tmp_path / "My.Pkg-1.0-py3-none-any.whl", {"my/__init__.py": b""}, requires_python=">=3.9"
    )
    root = tmp_path / "idx"
    result = index.add_wheel(root, wheel, sha256_file(wheel))
    assert result.status == "published"
    project = root / "simple" / "my-pkg"
    assert result.path == project / wheel.name
    assert (project / wheel.name).read_bytes() == wheel.read_bytes()

    [root_link] = anchors(root / "simple" / "index.html")
    assert root_link["href"] == "my-pkg/"
    [link] = anchors(project / "index.html")
    metadata = (project / f"{wheel.name}.metadata").read_bytes()
    assert b"Name: My.Pkg" in metadata and b"Requires-Python: >=3.9" in metadata
    meta_sha = hashlib.sha256(metadata).hexdigest()
    assert link["href"] == f"{wheel.name}#sha256={sha256_file(wheel)}"
    assert link["data-requires-python"] == ">=3.9"  # the parser unescapes &gt;
    assert "&gt;=3.9" in (project / "index.html").read_text()
    assert link["data-dist-info-metadata"] == f"sha256={meta_sha}"
    assert link["data-core-metadata"] == f"sha256={meta_sha}"

    page = json.loads((project / "index.json").read_text())
    assert page["meta"]["api-version"] == "1.1"
    assert page["versions"] == ["1.0"]
    [entry] = page["files"]
    assert entry["hashes"] == {"sha256": sha256_file(wheel)}
    assert entry["core-metadata"] == {"sha256": meta_sha}
    assert entry["size"] == wheel.stat().st_size
    assert json.loads((root / "simple" / "index.json").read_text())["projects"] == [{"name": "my-pkg"}]
    # atomic writes leave no temporary files behind
    assert not [p for p in root.rglob(".*tmp*")]


def test_same_file_is_noop_other_bytes_refused(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    (tmp_path / "a").mkdir()
    one = write_wheel(tmp_path / "a" / "demo-1.0-py3-none-any.whl", {"demo/__init__.py": b"A = 1\n"})
    assert index.add_wheel(root, one, sha256_file(one)).status == "published"
    page = root / "simple" / "demo" / "index.html"
    before = page.stat().st_mtime_ns
    assert index.add_wheel(root, one, sha256_file(one)).status == "already"
    assert page.stat().st_mtime_ns == before

    (tmp_path / "b").mkdir()
    other = write_wheel(tmp_path / "b" / "demo-1.0-py3-none-any.whl", {"demo/__init__.py": b"A = 2\n"})
    with pytest.raises(PublishRefused, match="other bytes"):
        index.add_wheel(root, other, sha256_file(other))
    assert (root / "simple" / "demo" / one.name).read_bytes() == one.read_bytes()


def test_second_version_and_second_project_are_listed(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    for name in (
        "demo-1.0-py3-none-any.whl",
        "demo-1.1-py3-none-any.whl",
        "Other_Thing-2.0-py3-none-any.whl",
    ):
        w = write_wheel(tmp_path / name, {"x/__init__.py": name.encode()})
        index.add_wheel(root, w, sha256_file(w))
    hrefs = [a["href"] for a in anchors(root / "simple" / "demo" / "index.html")]
    assert [h.split("#")[0] for h in hrefs if h] == ["demo-1.0-py3-none-any.whl", "demo-1.1-py3-none-any.whl"]
    assert [a["href"] for a in anchors(root / "simple" / "index.html")] == ["demo/", "other-thing/"]


def test_changed_bytes_during_copy_are_detected(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/__init__.py": b""})
    with pytest.raises(PublishRefused, match="changed while it was copied"):
        index.add_wheel(tmp_path / "idx", wheel, "0" * 64)
    assert not (tmp_path / "idx" / "simple" / "demo" / wheel.name).exists()


def test_pip_downloads_from_the_static_index(tmp_path: Path) -> None:
    """pip (the real client) resolves the package through file://ROOT/simple/ and checks the hash."""
    wheel = write_wheel(
        tmp_path / "demo_static-0.3-py3-none-any.whl", {"demo_static/__init__.py": b"X = 3\n"}
    )
    root = tmp_path / "idx"
    index.add_wheel(root, wheel, sha256_file(wheel))
    out = tmp_path / "out"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
            "--index-url",
            (root / "simple").as_uri() + "/",
            "--dest",
            str(out),
            "demo-static==0.3",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (out / wheel.name).read_bytes() == wheel.read_bytes()


def test_unwritable_root_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    from buildkit.errors import UsageError

    wheel = write_wheel(tmp_path / "demo-1.0-py3-none-any.whl", {"demo/__init__.py": b""})
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(UsageError, match="is a file, not a directory"):
        index.check_root(afile / "sub")
    with pytest.raises(UsageError, match="exists and is not a directory"):
        index.check_root(afile)
    index.check_root(tmp_path / "new" / "idx")  # creatable: accepted, and nothing is written
    assert not (tmp_path / "new").exists()
    # /proc passes the permission check as root but refuses new entries: add_wheel says so
    with pytest.raises(UsageError, match="cannot write the index there"):
        index.add_wheel(Path("/proc/idx"), wheel, sha256_file(wheel))
