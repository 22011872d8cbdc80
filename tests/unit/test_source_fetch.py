"""Fetching pinned source archives (buildkit/source/fetch.py, buildkit/source/tree.py): url sources
from local HTTP and HTTPS servers, sdists from PEP 503/691 indexes pip is configured with (a
``file://`` index, an HTTP index with credentials, find-links), the sha256 pin, the cache, the size
bound, and the recipe's errors at their positions."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

import pytest

from buildkit.building.staging import fetch_source
from buildkit.errors import IndexUnavailable, RecipeError
from buildkit.recipe import Recipe, parse_recipe
from buildkit.source import fetch
from buildkit.source.fetch import FetchFailed, HashMismatch, PipConfig, SourceRefused, fetch_sdist, fetch_url
from tests.helpers.sources import Served, isolate_pip, sdist, self_signed, serve, sha256, simple_index, targz

DEMO_NAME, DEMO = sdist("demo_pkg", "1.0", {"setup.py": "from setuptools import setup\nsetup()\n"})
OTHER = "f" * 64


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The source cache in tmp_path; pip configured with PyPI only (no file, no PIP_* of this host)."""
    root = tmp_path / "cache"
    isolate_pip(monkeypatch, root)
    return root / "rocm-buildkit" / "sources"


def _leftovers(cache: Path) -> list[str]:
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*")) if cache.exists() else []


# ---------------------------------------------------------------- url sources


def test_url_is_downloaded_verified_and_cached(cache: Path) -> None:
    served = Served(routes={"/r/demo-1.0.tar.gz": (DEMO, "application/gzip")})
    digest = sha256(DEMO)
    with serve(served):
        url = served.url + "/r/demo-1.0.tar.gz"
        path = fetch_url(url, digest)
        assert path == cache / digest / "demo-1.0.tar.gz"
        assert path.read_bytes() == DEMO
        assert _leftovers(cache) == [digest, f"{digest}/demo-1.0.tar.gz"]  # no .part file left
        assert fetch_url(url, digest) == path
        assert served.paths() == ["/r/demo-1.0.tar.gz"]  # the second fetch asked no server
    assert fetch_url(url, digest) == path  # the server is gone: the cache answers


def test_url_with_other_bytes_names_both_hashes_and_keeps_nothing(cache: Path) -> None:
    served = Served(routes={"/demo.tar.gz": (DEMO, "application/gzip")})
    with serve(served), pytest.raises(HashMismatch) as info:
        fetch_url(served.url + "/demo.tar.gz", OTHER)
    assert f"has sha256 {sha256(DEMO)}, but the recipe pins sha256 {OTHER}" in str(info.value)
    assert _leftovers(cache) == []


def test_a_cached_file_that_changed_is_fetched_again(cache: Path) -> None:
    served = Served(routes={"/demo.tar.gz": (DEMO, "application/gzip")})
    digest = sha256(DEMO)
    said: list[str] = []
    with serve(served):
        path = fetch_url(served.url + "/demo.tar.gz", digest)
        path.write_bytes(b"bit rot")
        assert fetch_url(served.url + "/demo.tar.gz", digest, said.append).read_bytes() == DEMO
    assert len(served.requests) == 2
    assert said[0] == f"removed {path} from the source cache: its bytes no longer have sha256 {digest}"


def test_a_killed_download_s_temporary_file_is_swept_once_stale(cache: Path) -> None:
    served = Served(routes={"/demo.tar.gz": (DEMO, "application/gzip")})
    digest = sha256(DEMO)
    (cache / digest).mkdir(parents=True)
    stale, fresh = cache / digest / ".demo.tar.gz.old.part", cache / digest / ".demo.tar.gz.new.part"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"another download, running now")
    os.utime(stale, (0, 0))
    with serve(served):
        fetch_url(served.url + "/demo.tar.gz", digest)
    assert fetch.cached(digest) == cache / digest / "demo.tar.gz"
    assert not stale.exists() and fresh.exists()


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "no-content-length"])
def test_a_download_over_the_bound_is_refused(
    cache: Path, monkeypatch: pytest.MonkeyPatch, length: bool
) -> None:
    monkeypatch.setattr(fetch, "MAX_DOWNLOAD_BYTES", 100)
    big = os.urandom(5000)
    served = Served(routes={"/big.tar.gz": (big, "application/gzip")}, length=length)
    with serve(served), pytest.raises(SourceRefused, match=r"big\.tar\.gz from .* is .*100") as info:
        fetch_url(served.url + "/big.tar.gz", sha256(big))
    assert ("5000 bytes" in str(info.value)) is length
    assert _leftovers(cache) == []


def test_default_download_bound() -> None:
    assert fetch.MAX_DOWNLOAD_BYTES == 2 * 2**30


def test_https_url_trusts_the_ca_of_ssl_cert_file_or_pip_cert(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = self_signed(tmp_path)
    served = Served(routes={"/demo.tar.gz": (DEMO, "application/gzip")})
    digest = sha256(DEMO)
    with serve(served, tls=(cert, key)):
        url = served.url + "/demo.tar.gz"
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        with pytest.raises(FetchFailed, match="CERTIFICATE_VERIFY_FAILED"):
            fetch_url(url, digest)  # the system's CAs do not know this certificate
        monkeypatch.setenv("PIP_CERT", str(cert))
        assert fetch_url(url, digest).read_bytes() == DEMO
        fetch.cached(digest).unlink()  # type: ignore[union-attr]
        monkeypatch.delenv("PIP_CERT")
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        assert fetch_url(url, digest).read_bytes() == DEMO


def test_url_not_found_is_refused(cache: Path) -> None:
    with serve(Served()) as served, pytest.raises(SourceRefused, match="answers 404"):
        fetch_url(served.url + "/nope.tar.gz", OTHER)


def test_unreachable_host_is_index_unavailable(cache: Path) -> None:
    """Exit 13, as every command gives it for an index or URL it cannot reach (was FetchFailed, 9)."""
    with serve(Served()) as served:
        url = served.url  # closed below: nothing listens there any more
    with pytest.raises(IndexUnavailable, match=r"127\.0\.0\.1") as info:
        fetch_url(url + "/x.tar.gz", OTHER)
    assert info.value.exit_code == 13


# ---------------------------------------------------------------- sdists


def test_pip_config_precedence() -> None:
    listing = "\n".join(
        [
            "global.index-url='https://global.example/simple'",
            "global.extra-index-url='https://a.example/simple https://b.example/simple'",
            "global.cert='/etc/ca.pem'",
            "download.index-url='https://download.example/simple'",
            "install.index-url='https://install.example/simple'",  # not pip download's
            ":env:.timeout='7'",
            ":env:.find-links='/opt/wheels /opt/more'",
        ]
    )
    config = PipConfig.parse(listing)
    assert config.index_urls == (
        "https://download.example/simple",
        "https://a.example/simple",
        "https://b.example/simple",
    )
    assert config.find_links == ("/opt/wheels", "/opt/more")
    assert (config.cert, config.timeout) == ("/etc/ca.pem", 7.0)
    assert PipConfig.parse(":env:.no-index='1'\n").index_urls == ()
    assert PipConfig.parse("").index_urls == ("https://pypi.org/simple",)


def test_sdist_from_a_file_index_with_a_non_normalised_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = "demo_pkg-1.0-py3-none-any.whl"
    index = simple_index(tmp_path / "idx", "demo-pkg", {DEMO_NAME: DEMO, wheel: b"not used"})
    isolate_pip(monkeypatch, tmp_path / "cache", index_url=index.as_uri())
    said: list[str] = []
    path = fetch_sdist("Demo.Pkg==1.0", sha256(DEMO), said.append)
    assert path.name == DEMO_NAME and path.read_bytes() == DEMO
    assert said == [f"fetching {DEMO_NAME} from {index.as_uri()}"]


def test_the_configured_pip_is_asked_only_on_a_cache_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = simple_index(tmp_path / "idx", "demo-pkg", {DEMO_NAME: DEMO})
    isolate_pip(monkeypatch, tmp_path / "cache", index_url=index.as_uri())
    calls: list[PipConfig] = []
    real = fetch.pip_config

    def counted() -> PipConfig:
        calls.append(real())
        return calls[-1]

    monkeypatch.setattr(fetch, "pip_config", counted)
    first = fetch_sdist("demo-pkg==1.0", sha256(DEMO))
    assert len(calls) == 1
    (index.parent / "files" / DEMO_NAME).unlink()  # the index cannot serve it any more either
    assert fetch_sdist("demo-pkg==1.0", sha256(DEMO)) == first
    assert len(calls) == 1


def test_sdist_from_an_http_index_with_credentials_sent_to_the_index_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = Served(routes={f"/f/{DEMO_NAME}": (DEMO, "application/gzip")})
    auth = "Basic " + base64.b64encode(b"ci:s3cret").decode()
    index = Served(auth=auth)
    with serve(files), serve(index):
        page = {
            "meta": {"api-version": "1.0"},
            "name": "demo-pkg",
            "files": [
                {
                    "filename": DEMO_NAME,
                    "url": f"{files.url}/f/{DEMO_NAME}",
                    "hashes": {"sha256": sha256(DEMO)},
                }
            ],
        }
        index.routes["/simple/demo-pkg/"] = (json.dumps(page).encode(), "application/vnd.pypi.simple.v1+json")
        netloc = index.url.removeprefix("http://")
        isolate_pip(monkeypatch, tmp_path / "cache", index_url=f"http://ci:s3cret@{netloc}/simple")
        assert fetch_sdist("demo-pkg==1.0", sha256(DEMO)).read_bytes() == DEMO
    ((page_path, page_headers),) = index.requests
    assert page_path == "/simple/demo-pkg/"
    assert page_headers["Authorization"] == auth
    assert "application/vnd.pypi.simple.v1+json" in page_headers["Accept"]
    ((_, file_headers),) = files.requests
    assert "Authorization" not in file_headers  # another host: no credentials


def test_credentials_never_appear_in_messages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with serve(Served()) as index:
        netloc = index.url.removeprefix("http://")
        isolate_pip(monkeypatch, tmp_path / "cache", index_url=f"http://ci:s3cret@{netloc}/simple")
        with pytest.raises(SourceRefused) as info:
            fetch_sdist("demo-pkg==1.0", OTHER)
    assert "s3cret" not in str(info.value)
    assert f"http://ci:***@{netloc}/simple" in str(info.value)


def test_an_index_listing_another_hash_is_refused_without_downloading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = simple_index(tmp_path / "idx", "demo-pkg", {DEMO_NAME: DEMO})
    isolate_pip(monkeypatch, tmp_path / "cache", index_url=index.as_uri())
    with pytest.raises(HashMismatch) as info:
        fetch_sdist("demo-pkg==1.0", OTHER)
    assert str(info.value) == (
        f"{DEMO_NAME} from {index.as_uri()} is listed by the index with sha256 {sha256(DEMO)}, "
        f"but the recipe pins sha256 {OTHER}"
    )
    assert _leftovers(tmp_path / "cache") == []


def test_an_unlisted_hash_is_checked_on_the_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = simple_index(tmp_path / "idx", "demo-pkg", {DEMO_NAME: DEMO}, hashes=False)
    isolate_pip(monkeypatch, tmp_path / "cache", index_url=index.as_uri())
    with pytest.raises(HashMismatch, match=f"{DEMO_NAME} from .* has sha256 {sha256(DEMO)}"):
        fetch_sdist("demo-pkg==1.0", OTHER)
    assert fetch_sdist("demo-pkg==1.0", sha256(DEMO)).read_bytes() == DEMO


def test_a_release_with_wheels_only_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = simple_index(tmp_path / "idx", "demo-pkg", {"demo_pkg-1.0-py3-none-any.whl": b"w"})
    isolate_pip(monkeypatch, tmp_path / "cache", index_url=index.as_uri())
    with pytest.raises(SourceRefused) as info:
        fetch_sdist("demo-pkg==1.0", OTHER)
    assert str(info.value) == (
        f"no sdist of demo-pkg==1.0 on {index.as_uri()}; they list 1 wheel(s) of 1.0 but no sdist"
    )
    assert info.value.hint is not None and "demo-pkg/" in info.value.hint


def test_sdist_from_find_links_without_an_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    links = tmp_path / "links"
    links.mkdir()
    (links / DEMO_NAME).write_bytes(DEMO)
    (links / "demo_pkg-2.0.tar.gz").write_bytes(b"another release")
    isolate_pip(monkeypatch, tmp_path / "cache", no_index="1", find_links=str(links))
    assert fetch_sdist("demo-pkg==1.0", sha256(DEMO)).read_bytes() == DEMO


def test_a_failing_index_is_index_unavailable_when_no_other_has_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve(Served()) as down:
        url = down.url
    isolate_pip(monkeypatch, tmp_path / "cache", index_url=url + "/simple")
    with pytest.raises(IndexUnavailable, match="demo-pkg/"):
        fetch_sdist("demo-pkg==1.0", OTHER)


# ---------------------------------------------------------------- through the recipe

RECIPE = """\
name: demo
source:
  url: {url}
  sha256: {sha256}
{extra}version: {{base: "1.0"}}
python: ["3.12"]
rocm: ["6.4"]
archs: {{list: [gfx90a]}}
manylinux: {{policy: manylinux_2_28}}
image: manylinux_2_28-rocm
"""


def _recipe(tmp_path: Path, url: str, digest: str, extra: str = "") -> Recipe:
    text = RECIPE.format(url=url, sha256=digest, extra=extra)
    return parse_recipe(text, path=tmp_path / "r.yaml")


def test_fetch_source_unpacks_a_url_source_with_its_subdirectory(cache: Path, tmp_path: Path) -> None:
    archive = targz({"mono-2.0/README": "hi", "mono-2.0/python/setup.py": "setup()\n"})
    served = Served(routes={"/mono-2.0.tar.gz": (archive, "application/gzip")})
    with serve(served):
        recipe = _recipe(
            tmp_path, served.url + "/mono-2.0.tar.gz", sha256(archive), "  subdirectory: python\n"
        )
        into = tmp_path / "work"
        into.mkdir()
        src = fetch_source(recipe, into)
    assert src == (into / "source" / "python").resolve()
    assert (src / "setup.py").read_text() == "setup()\n"


def test_subdirectory_missing_from_the_archive_is_positioned(cache: Path, tmp_path: Path) -> None:
    archive = targz({"mono-2.0/python/setup.py": "", "mono-2.0/cpp/x.h": ""})
    served = Served(routes={"/mono.tar.gz": (archive, "application/gzip")})
    with serve(served):
        recipe = _recipe(tmp_path, served.url + "/mono.tar.gz", sha256(archive), "  subdirectory: py\n")
        with pytest.raises(RecipeError) as info:
            fetch_source(recipe, tmp_path)
    assert (info.value.line, info.value.column) == (5, 17)
    assert info.value.detail == "source.subdirectory 'py' is not a folder inside mono.tar.gz"
    assert info.value.hint == "its top-level folders (the archive's own top folder stripped): cpp, python"


def test_hash_mismatch_is_a_recipe_error_at_the_sha256_value(cache: Path, tmp_path: Path) -> None:
    served = Served(routes={"/demo-1.0.tar.gz": (DEMO, "application/gzip")})
    with serve(served):
        recipe = _recipe(tmp_path, served.url + "/demo-1.0.tar.gz", OTHER)
        with pytest.raises(RecipeError) as info:
            fetch_source(recipe, tmp_path)
    err = info.value
    assert str(err).startswith(f"{tmp_path / 'r.yaml'}:4:11: error: source.sha256: demo-1.0.tar.gz from ")
    assert sha256(DEMO) in err.detail and OTHER in err.detail
    assert err.exit_code == 3


def test_hostile_archive_is_a_recipe_error_and_leaves_nothing(cache: Path, tmp_path: Path) -> None:
    archive = targz({"x-1/ok": "", "x-1/../../escaped": "boo"})
    served = Served(routes={"/x.tar.gz": (archive, "application/gzip")})
    into = tmp_path / "work"
    into.mkdir()
    with serve(served):
        recipe = _recipe(tmp_path, served.url + "/x.tar.gz", sha256(archive))
        with pytest.raises(RecipeError) as info:
            fetch_source(recipe, into)
    assert (info.value.line, info.value.column) == (3, 8)
    assert info.value.detail == (
        "source.url: x.tar.gz: member 'x-1/../../escaped': has a '..' component: it would be written "
        "outside the tree"
    )
    assert os.listdir(into) == []
    assert not (tmp_path / "escaped").exists()


def test_network_trouble_is_index_unavailable(cache: Path, tmp_path: Path) -> None:
    """An unreachable URL is exit 13 from a source fetch, as from diff and publish (was BuildFailed, 9)."""
    with serve(Served()) as served:
        url = served.url
    recipe = _recipe(tmp_path, url + "/x.tar.gz", OTHER)
    with pytest.raises(IndexUnavailable, match=r"cannot fetch http://127\.0\.0\.1:\d+/x\.tar\.gz: "):
        fetch_source(recipe, tmp_path)


def test_the_manifest_records_the_pin_without_credentials_or_a_stray_commit(tmp_path: Path) -> None:
    import dataclasses

    from buildkit.building.steps.record import _source_info

    # a recipe refuses credentials in its URLs (recipe/sections/secrets.py); the manifest redacts
    # them anyway, should a Recipe get one another way
    plain = _recipe(tmp_path, "https://example.org/x-1.0.tar.gz", OTHER)
    source = dataclasses.replace(plain.source, url="https://ci:s3cret@example.org/x-1.0.tar.gz")
    recipe = dataclasses.replace(plain, source=source)
    repo = tmp_path / "inside-a-checkout"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)  # rev-parse finds it
    assert _source_info(recipe, repo) == {"url": "https://ci:***@example.org/x-1.0.tar.gz", "sha256": OTHER}
