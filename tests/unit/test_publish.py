"""buildkit.publish: manifest checks, targets, PyPI local-version refusal, static-directory publishing.

The pypiserver (twine) target is tested against a real server in tests/integration/test_pypiserver.py.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from buildkit.errors import PublishRefused, UsageError
from buildkit.manifest import manifest_path, sha256_file
from buildkit.publish.refusal import collect
from buildkit.publish.remote import credentials_for
from buildkit.publish.run import publish
from buildkit.publish.scrub import scrub, secrets_from
from buildkit.publish.target import Target, parse_target, recipe_target
from buildkit.recipe import load_recipe
from tests.helpers.wheels_for_publish import FAILING, job_wheel, make_wheel, trust_test_key


@pytest.fixture(autouse=True)
def publisher_key(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The publisher names the key the test builds sign with (``BUILDKIT_PUBLISH_KEY``): ``publish``
    runs the gate again with the configuration those signed manifests record."""
    path = trust_test_key(monkeypatch, tmp_path_factory.mktemp("publisher"))
    monkeypatch.setitem(CREDS_ENV, "BUILDKIT_PUBLISH_KEY", str(path))  # the environment given to publish()
    return path


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
    assert parse_target("pypi").kind == "pypi"
    assert parse_target("https://upload.pypi.org/legacy/").simple_url == "https://pypi.org/simple/"
    assert parse_target("https://test.pypi.org/legacy/").kind == "pypi"
    srv = parse_target("http://127.0.0.1:8080/")
    assert (srv.kind, srv.simple_url) == ("index", "http://127.0.0.1:8080/simple/")
    assert parse_target("file:///srv/idx").location == "/srv/idx"
    assert parse_target("out/idx") == Target("directory", "out/idx")
    with pytest.raises(UsageError, match="credentials in the URL"):
        parse_target("https://user:s3cret@example.org/")
    with pytest.raises(UsageError, match="unsupported scheme"):
        parse_target("s3://bucket/idx")


@pytest.mark.parametrize("text", ["", "file://", "file:", "  "])
def test_parse_target_refuses_an_empty_directory(text: str) -> None:
    with pytest.raises(UsageError, match="empty directory path"):
        parse_target(text)


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
            publish(dist, parse_target(to))
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
        publish(dist, parse_target(str(tmp_path / "idx")))
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
        publish(tmp_path / "dist", parse_target(str(tmp_path / "idx")))


def test_manifest_for_another_file_is_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    data = json.loads(manifest_path(wheel).read_text())
    data["wheel"]["filename"] = "demo-2.0-py3-none-any.whl"
    manifest_path(wheel).write_text(json.dumps(data))
    with pytest.raises(PublishRefused, match=r"for another file \(demo-2.0"):
        publish(tmp_path / "dist", parse_target(str(tmp_path / "idx")))


def test_pypi_refuses_local_versions_before_any_upload(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    make_wheel(dist, "demo-1.0+rocm7.2.torch210-py3-none-any.whl")
    with pytest.raises(PublishRefused, match=r"local version label '\+rocm7.2.torch210'.*PyPI refuses"):
        publish(dist, parse_target("pypi"))
    # the same wheel is fine for an index of your own
    outcomes = publish(dist, parse_target(str(tmp_path / "idx")))
    assert [o.status for o in outcomes] == ["published"]


def test_directory_publish_is_idempotent_and_refuses_other_bytes(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    make_wheel(dist / "j1", "demo-1.0-py3-none-any.whl")
    make_wheel(dist / "j2", "demo-1.1-py3-none-any.whl")
    target = parse_target((tmp_path / "idx").as_uri())
    assert [o.status for o in publish(dist, target)] == ["published", "published"]
    assert [o.status for o in publish(dist, target)] == ["already published"] * 2

    rebuilt = tmp_path / "rebuilt"
    make_wheel(rebuilt, "demo-1.0-py3-none-any.whl", payload=b"VALUE = 2\n")
    with pytest.raises(PublishRefused, match="already has a file of this name with other bytes"):
        publish(rebuilt, target)


def test_no_wheels_is_refused(tmp_path: Path) -> None:
    (tmp_path / "dist").mkdir()
    with pytest.raises(PublishRefused, match="no wheels"):
        publish(tmp_path / "dist", parse_target(str(tmp_path / "idx")))


def test_scrub_and_secrets() -> None:
    env = {"TWINE_USERNAME": "__token__", "TWINE_PASSWORD": "pypi-AgEI+abc/def", "MY_API_TOKEN": "tok123456"}
    secrets = secrets_from(env)
    assert "__token__" not in secrets
    text = "auth pypi-AgEI+abc/def and pypi-AgEI%2Babc%2Fdef and tok123456"
    assert scrub(text, secrets) == "auth *** and *** and ***"


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


def bind_recipe(wheel: Path, recipe: Path, name: str = "demo") -> Path:
    """Record ``recipe`` in the wheel's manifest as the recipe it was built from, as build does."""
    data = json.loads(manifest_path(wheel).read_text())
    data["recipe"] = {"name": name, "file": recipe.name, "sha256": sha256_file(recipe)}
    manifest_path(wheel).write_text(json.dumps(data))
    return wheel


def test_cli_target_from_the_recipe(tmp_path: Path) -> None:
    """publish.directory is relative to the recipe file, not to the working directory."""
    recipe = tmp_path / "recipes" / "demo.yaml"
    recipe.parent.mkdir()
    recipe.write_text(RECIPE)
    # the gate runs again with the job's configuration: the wheel must be that job's (tags, archs)
    wheel = job_wheel(tmp_path / "dist", recipe, "cp312-rocm6.4")
    result = run_cli("publish", str(tmp_path / "dist"), "--recipe", str(recipe))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "recipes" / "site" / "index" / "simple" / "demo" / wheel.name).is_file()
    neither = run_cli("publish", str(tmp_path / "dist"))
    assert neither.returncode == 2 and "give --to TARGET, --recipe R" in neither.stderr


def test_recipe_and_to_take_the_configuration_from_the_recipe_and_the_target_from_the_flag(
    tmp_path: Path,
) -> None:
    """Issue 36: `give exactly one of --to TARGET or --recipe R` refused the pair."""
    recipe = tmp_path / "demo.yaml"
    recipe.write_text(RECIPE)
    wheel = job_wheel(tmp_path / "dist", recipe, "cp312-rocm6.4")
    site = tmp_path / "elsewhere"
    result = run_cli("publish", str(tmp_path / "dist"), "--recipe", str(recipe), "--to", str(site))
    assert result.returncode == 0, result.stderr
    assert (site / "simple" / "demo" / wheel.name).is_file()
    assert not (tmp_path / "site").exists()  # the recipe's own directory was not the target
    # the recipe still binds: another recipe's wheel is refused whatever the target
    other = tmp_path / "other.yaml"
    other.write_text(RECIPE.replace('base: "1.0"', 'base: "1.1"'))
    refused = run_cli(
        "publish", str(tmp_path / "dist"), "--recipe", str(other), "--to", str(site), "--dry-run"
    )
    assert refused.returncode == 10 and "was built from recipe demo.yaml" in refused.stderr


@pytest.mark.parametrize(
    ("edit", "binds"),
    [
        (lambda t: t.replace("directory: site/index", "directory: public"), True),
        (
            lambda t: (
                t
                + "smoke:\n  - name: imports\n    image: rocm-buildkit/debian-runtime\n    imports: [demo]\n"
            ),
            True,
        ),
        (lambda t: "# a comment\n" + t.replace("name: demo", "name:   demo"), True),
        (lambda t: t.replace('python: ["3.12"]', 'python: ["3.12", "3.13"]'), "python"),
        (lambda t: t.replace("policy: manylinux_2_28", "policy: manylinux_2_34"), "manylinux"),
    ],
    ids=["publish", "smoke", "layout", "python", "policy"],
)
def test_an_edit_that_cannot_change_the_wheel_keeps_it_the_recipes(
    tmp_path: Path, edit: Callable[[str], str], binds: bool | str
) -> None:
    """Issue 36: adding a publish: section to init's recipe refused the wheel built from it (`project tinyhip
    was built from recipe rocm-buildkit.yaml (..., sha256 34a759fd9312), not from --recipe ...`)."""
    recipe = tmp_path / "demo.yaml"
    recipe.write_text(RECIPE)
    job_wheel(tmp_path / "dist", recipe, "cp312-rocm6.4")
    recipe.write_text(edit(RECIPE))
    result = run_cli("publish", str(tmp_path / "dist"), "--recipe", str(recipe), "--dry-run")
    if binds is True:
        assert result.returncode == 0, result.stderr
    else:  # the refusal names the key that changed (the manifest's recipe.build_keys)
        assert result.returncode == 10 and "not from --recipe" in result.stderr, result.stderr
        assert f"({binds} changed): publish it with the recipe" in result.stderr


def test_a_manifest_of_an_older_build_binds_by_the_files_sha256(tmp_path: Path) -> None:
    recipe = tmp_path / "demo.yaml"
    recipe.write_text(RECIPE)
    wheel = job_wheel(tmp_path / "dist", recipe, "cp312-rocm6.4")
    data = json.loads(manifest_path(wheel).read_text())
    del data["recipe"]["build_sha256"]
    manifest_path(wheel).write_text(json.dumps(data))
    recipe.write_text(RECIPE.replace("directory: site/index", "directory: public"))
    result = run_cli("publish", str(tmp_path / "dist"), "--recipe", str(recipe), "--dry-run")
    assert result.returncode == 10 and "not from --recipe" in result.stderr


def test_recipe_target_kinds(tmp_path: Path) -> None:
    """The library function behind --recipe: a directory is resolved against the recipe's folder,
    pypi and index sections become those targets, no publish section is a usage error."""
    recipe = tmp_path / "recipes" / "demo.yaml"
    recipe.parent.mkdir()
    recipe.write_text(RECIPE)
    assert recipe_target(recipe) == Target("directory", str(tmp_path / "recipes" / "site" / "index"))
    recipe.write_text(RECIPE.replace("  directory: site/index", "  pypi: true"))
    assert recipe_target(recipe).kind == "pypi"
    recipe.write_text(RECIPE.replace("  directory: site/index", "  index: https://pkgs.example/upload/"))
    target = recipe_target(recipe)
    assert (target.kind, target.location) == ("index", "https://pkgs.example/upload/")
    recipe.write_text(RECIPE.replace("publish:\n  directory: site/index\n", ""))
    with pytest.raises(UsageError, match="no publish section"):
        recipe_target(recipe)


def test_collect_skips_dot_files_and_dot_folders(tmp_path: Path) -> None:
    dist = tmp_path / ".cache" / "dist"  # a dot-folder ABOVE dist does not matter
    kept = make_wheel(dist / "cp312-rocm6.4", "demo-1.0-py3-none-any.whl")
    make_wheel(dist / ".cp312-rocm6.4.incoming-x1", "demo-1.1-py3-none-any.whl")  # build's staging
    make_wheel(dist / "job" / ".hidden" / "deep", "demo-1.2-py3-none-any.whl")
    make_wheel(dist / "job", ".demo-1.3-py3-none-any.whl")
    assert collect(dist) == [kept]


# ---------------------------------------------------------------- credentials, against local servers
#
# Two real HTTP servers on 127.0.0.1, on two ports (two origins). Each records, for every request, the
# method, the path and the Authorization header it received. No twine run is needed: every case below
# is decided (or refused) before an upload, and a POST would be recorded.

USER, PASSWORD = "__token__", "pypi-s3cret-token-value"
CREDS_ENV = {**os.environ, "TWINE_USERNAME": USER, "TWINE_PASSWORD": PASSWORD}
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


@dataclass
class Route:
    status: int = 200
    body: bytes = b""
    location: str | None = None  # a redirect target
    needs_auth: bool = False  # 401 without the right Authorization


@dataclass
class Recording:
    url: str
    routes: dict[str, Route] = dataclass_field(default_factory=dict)
    seen: list[tuple[str, str, str | None]] = dataclass_field(default_factory=list)

    def authorizations(self) -> list[str]:
        return [auth for _, _, auth in self.seen if auth is not None]


def _handler(rec: Recording) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            auth = self.headers.get("Authorization")
            rec.seen.append((self.command, self.path, auth))
            route = rec.routes.get(self.path, Route(404, b"not found"))
            if route.needs_auth and auth != BASIC:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="test"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(route.status)
            if route.location:
                self.send_header("Location", route.location)
            self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            self.wfile.write(route.body)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def servers() -> Iterator[tuple[Recording, Recording]]:
    """(upload, other): two recording servers on 127.0.0.1, different ports."""
    running = []
    for _ in range(2):
        rec = Recording("")
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(rec))
        rec.url = f"http://127.0.0.1:{httpd.server_address[1]}/"
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        running.append((rec, httpd))
    try:
        yield running[0][0], running[1][0]
    finally:
        for _, httpd in running:
            httpd.shutdown()
            httpd.server_close()


def _page(*links: str) -> bytes:
    return ("<html><body>" + "".join(f'<a href="{h}">x</a>' for h in links) + "</body></html>").encode()


def test_credentials_policy() -> None:
    env = {"TWINE_USERNAME": USER, "TWINE_PASSWORD": PASSWORD}
    pypi = credentials_for("https://upload.pypi.org/legacy/", env)
    assert pypi is not None and PASSWORD not in repr(pypi)
    assert pypi.allows("https://upload.pypi.org:443/other")
    assert not pypi.allows("https://pypi.org/simple/demo/")  # the pypi target's simple index
    assert not pypi.allows("http://upload.pypi.org/legacy/")  # other scheme, other origin
    assert not pypi.allows("https://upload.pypi.org:8443/legacy/")
    assert not pypi.allows("https://files.pythonhosted.org/packages/demo.whl")
    assert credentials_for("http://index.example.org/", env) is None  # would go in clear
    for loopback in ("http://127.0.0.1:8080/", "http://127.3.4.5/", "http://[::1]:9/", "http://localhost/"):
        assert credentials_for(loopback, env) is not None, loopback
    assert credentials_for("https://index.example.org/", {"TWINE_USERNAME": USER}) is None


def test_credentials_reach_only_the_upload_origin_and_only_on_401(
    tmp_path: Path, servers: tuple[Recording, Recording]
) -> None:
    upload, other = servers
    wheel = make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    # the page needs auth; its unhashed file link is on the other origin, so the file is downloaded there
    upload.routes["/simple/demo/"] = Route(body=_page(f"{other.url}files/{wheel.name}"), needs_auth=True)
    other.routes[f"/files/{wheel.name}"] = Route(body=wheel.read_bytes())
    outcomes = publish(tmp_path / "dist", parse_target(upload.url), env=CREDS_ENV)
    assert [o.status for o in outcomes] == ["already published"]
    assert upload.seen == [("GET", "/simple/demo/", None), ("GET", "/simple/demo/", BASIC)]
    assert other.seen == [("GET", f"/files/{wheel.name}", None)]

    # the file server wants credentials too: refused, and still never given them
    other.routes[f"/files/{wheel.name}"] = Route(body=wheel.read_bytes(), needs_auth=True)
    with pytest.raises(PublishRefused, match="not the upload URL's origin"):
        publish(tmp_path / "dist", parse_target(upload.url), env=CREDS_ENV)
    assert other.authorizations() == []
    assert not [m for m, _, _ in upload.seen + other.seen if m != "GET"]  # nothing was uploaded


def test_a_redirect_to_another_origin_does_not_carry_credentials(
    tmp_path: Path, servers: tuple[Recording, Recording]
) -> None:
    upload, other = servers
    wheel = make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    sha = sha256_file(wheel)
    # authenticated on the upload origin, then sent (302) to the other origin
    upload.routes["/simple/demo/"] = Route(302, location=f"{other.url}mirror/demo/", needs_auth=True)
    other.routes["/mirror/demo/"] = Route(body=_page(f"{wheel.name}#sha256={sha}"))
    outcomes = publish(tmp_path / "dist", parse_target(upload.url), env=CREDS_ENV)
    assert [o.status for o in outcomes] == ["already published"]
    assert upload.authorizations() == [BASIC]
    assert other.seen == [("GET", "/mirror/demo/", None)]

    # a redirect that stays on the upload origin keeps them
    upload.seen.clear()
    upload.routes["/simple/demo/"] = Route(301, location="/moved/demo/", needs_auth=True)
    upload.routes["/moved/demo/"] = Route(body=_page(f"{wheel.name}#sha256={sha}"), needs_auth=True)
    publish(tmp_path / "dist", parse_target(upload.url), env=CREDS_ENV)
    assert upload.seen[-1] == ("GET", "/moved/demo/", BASIC)


def test_a_simple_index_on_another_origin_never_gets_credentials(
    tmp_path: Path, servers: tuple[Recording, Recording]
) -> None:
    """Like the pypi target: upload to one origin, --simple-url on another that wants a login."""
    upload, other = servers
    make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")
    other.routes["/simple/demo/"] = Route(body=_page(), needs_auth=True)
    target = parse_target(upload.url, simple_url=other.url + "simple/")
    with pytest.raises(PublishRefused, match=r"asks for credentials.*not the upload URL's origin"):
        publish(tmp_path / "dist", target, env=CREDS_ENV)
    assert other.seen == [("GET", "/simple/demo/", None)]
    assert upload.seen == []


def test_one_remote_conflict_uploads_nothing(tmp_path: Path, servers: tuple[Recording, Recording]) -> None:
    """alpha is new (sorted first), demo conflicts: the state of both is read before any upload."""
    upload, _ = servers
    dist = tmp_path / "dist"
    make_wheel(dist, "alpha-1.0-py3-none-any.whl")
    demo = make_wheel(dist, "demo-1.0-py3-none-any.whl")
    upload.routes["/simple/demo/"] = Route(body=_page(f"{demo.name}#sha256={'e' * 64}"))
    with pytest.raises(PublishRefused) as info:
        publish(dist, parse_target(upload.url), env=CREDS_ENV)
    assert "1 of 2 wheel(s); nothing was published" in str(info.value)
    assert f"{demo.name}: {upload.url}simple/demo/ already has a file of this name" in str(info.value)
    assert [(m, p) for m, p, _ in upload.seen] == [("GET", "/simple/alpha/"), ("GET", "/simple/demo/")]


def test_a_wheel_changed_after_its_check_is_not_uploaded(
    tmp_path: Path, servers: tuple[Recording, Recording]
) -> None:
    """twine would re-read the path: the bytes uploaded come from a private copy hashed while copied."""
    upload, _ = servers
    wheel = make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")

    def tamper(line: str) -> None:
        if "checked" in line:  # logged between the sha256 check and the upload
            wheel.write_bytes(wheel.read_bytes() + b"\0")

    with pytest.raises(PublishRefused, match="changed while it was copied"):
        publish(tmp_path / "dist", parse_target(upload.url), env=CREDS_ENV, log=tamper)
    assert [m for m, _, _ in upload.seen] == ["GET"]  # the state check, no upload


def test_one_directory_conflict_writes_nothing(tmp_path: Path) -> None:
    idx = tmp_path / "idx"
    first = tmp_path / "first"
    make_wheel(first, "demo-1.0-py3-none-any.whl")
    publish(first, parse_target(str(idx)))
    before = sorted(p.relative_to(idx) for p in idx.rglob("*"))

    dist = tmp_path / "dist"
    make_wheel(dist, "alpha-1.0-py3-none-any.whl")  # new, and sorted first
    make_wheel(dist, "demo-1.0-py3-none-any.whl", payload=b"VALUE = 2\n")  # other bytes
    with pytest.raises(PublishRefused, match=r"1 of 2 wheel\(s\); nothing was published"):
        publish(dist, parse_target(str(idx)))
    assert sorted(p.relative_to(idx) for p in idx.rglob("*")) == before


def test_same_file_name_twice_under_dist_with_other_bytes_is_refused(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    make_wheel(dist / "a", "demo-1.0-py3-none-any.whl")
    make_wheel(dist / "b", "demo-1.0-py3-none-any.whl", payload=b"VALUE = 2\n")
    with pytest.raises(PublishRefused, match="has this file name with other bytes"):
        publish(dist, parse_target(str(tmp_path / "idx")))
    assert not (tmp_path / "idx" / "simple" / "demo").exists()


def test_a_directory_wheel_changed_after_its_check_is_not_written(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")

    def tamper(line: str) -> None:
        if "checked" in line:
            wheel.write_bytes(wheel.read_bytes() + b"\0")

    with pytest.raises(PublishRefused, match="changed while it was copied"):
        publish(tmp_path / "dist", parse_target(str(tmp_path / "idx")), log=tamper)
    assert not [p for p in (tmp_path / "idx").rglob("*") if p.name != ".buildkit-index.lock"]


# ---------------------------------------------------------------- --recipe: only that recipe's wheels

OTHER_RECIPE = RECIPE.replace("name: demo", "name: other").replace("site/index", "other/index")


def _two_recipes(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "recipes"
    folder.mkdir()
    demo, other = folder / "demo.yaml", folder / "other.yaml"
    demo.write_text(RECIPE)
    other.write_text(OTHER_RECIPE)
    return demo, other


def test_recipe_refuses_a_wheel_built_from_another_recipe(tmp_path: Path) -> None:
    """The review's case: a wheel of other.yaml does not land in the index of demo.yaml."""
    demo, other = _two_recipes(tmp_path)
    dist = tmp_path / "dist"
    mine = job_wheel(dist / "a", demo, "cp312-rocm6.4")
    theirs = job_wheel(dist / "b", other, "cp312-rocm6.4")
    result = run_cli("publish", str(dist), "--recipe", str(demo))
    assert result.returncode == 10, result.stdout + result.stderr
    assert "1 of 2 wheel(s); nothing was published" in result.stderr
    [line] = [line for line in result.stderr.splitlines() if str(theirs) in line]
    assert f"built from recipe other.yaml (other, sha256 {sha256_file(other)[:12]})" in line
    assert f"not from --recipe {demo} (demo, sha256 {sha256_file(demo)[:12]})" in line
    assert "project other " in line and str(mine) not in result.stderr
    assert not (tmp_path / "recipes" / "site").exists() and not (tmp_path / "recipes" / "other").exists()

    # each recipe publishes its own wheel; an explicit --to takes wheels of any recipe, as before
    assert run_cli("publish", str(dist / "a"), "--recipe", str(demo)).returncode == 0
    assert run_cli("publish", str(dist / "b"), "--recipe", str(other)).returncode == 0
    assert (tmp_path / "recipes" / "other" / "index" / "simple" / "other" / theirs.name).is_file()
    mixed = run_cli("publish", str(dist), "--to", str(tmp_path / "any"))
    assert mixed.returncode == 0, mixed.stderr


def test_recipe_edited_since_the_build_is_refused(tmp_path: Path) -> None:
    """Same name, other bytes: the wheel was not built from this recipe file."""
    demo, _ = _two_recipes(tmp_path)
    wheel = bind_recipe(make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl"), demo)
    built_from = sha256_file(demo)
    demo.write_text(RECIPE.replace('base: "1.0"', 'base: "1.1"'))
    with pytest.raises(PublishRefused) as info:
        publish(tmp_path / "dist", recipe_target(demo), recipe=load_recipe(demo))
    assert f"{wheel}: project demo was built from recipe demo.yaml (demo, sha256 {built_from[:12]})" in str(
        info.value
    )
    assert f"sha256 {sha256_file(demo)[:12]}" in str(info.value) and "rebuild" in str(info.value)
    assert info.value.exit_code == 10


def test_recipe_refuses_a_manifest_that_names_no_recipe(tmp_path: Path) -> None:
    demo, _ = _two_recipes(tmp_path)
    make_wheel(tmp_path / "dist", "demo-1.0-py3-none-any.whl")  # manifest without a recipe section
    refused = run_cli("publish", str(tmp_path / "dist"), "--recipe", str(demo))
    assert refused.returncode == 10
    assert "the manifest records no recipe" in refused.stderr and "Traceback" not in refused.stderr
    assert run_cli("publish", str(tmp_path / "dist"), "--to", str(tmp_path / "idx")).returncode == 0


def test_recipe_refuses_a_project_named_otherwise(tmp_path: Path) -> None:
    """The recipe's name is its wheels' distribution name (the schema): another project's wheel, even
    one whose manifest records this recipe, is refused (the gate's job-identity rule fails it at build)."""
    demo, _ = _two_recipes(tmp_path)
    wheel = bind_recipe(make_wheel(tmp_path / "dist", "demo_extra-1.0-py3-none-any.whl"), demo)
    target = recipe_target(demo)
    assert target.kind == "directory"
    with pytest.raises(PublishRefused) as info:
        publish(tmp_path / "dist", target, recipe=load_recipe(demo))
    assert f"{wheel}: project demo-extra is not the distribution --recipe" in str(info.value)
    assert "(demo): the recipe's name is its wheels' distribution name" in str(info.value)
    assert info.value.exit_code == 10
    assert not list(Path(target.location).rglob("*.whl"))  # nothing published


# ---------------------------------------------------------------- --dry-run


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }


def test_dry_run_directory_writes_nothing(tmp_path: Path) -> None:
    dist, idx = tmp_path / "dist", tmp_path / "idx"
    demo = make_wheel(dist, "demo-1.0-py3-none-any.whl")
    first = run_cli("publish", str(dist), "--to", str(idx), "--dry-run")
    assert first.returncode == 0, first.stderr
    assert f"would publish     {demo.name}  {idx / 'simple' / 'demo' / demo.name}" in first.stdout
    assert "dry run: nothing was written" in first.stderr
    assert not idx.exists()  # not even the folder or its lock

    publish(dist, parse_target(str(idx)))
    before = _snapshot(idx)
    alpha = make_wheel(dist, "alpha-1.0-py3-none-any.whl")
    again = run_cli("publish", str(dist), "--to", str(idx), "--dry-run", "--json")
    assert again.returncode == 0, again.stderr
    data = json.loads(again.stdout)
    assert data["dry_run"] is True
    assert {Path(w["wheel"]).name: w["status"] for w in data["wheels"]} == {
        alpha.name: "would publish",
        demo.name: "already published",
    }
    assert _snapshot(idx) == before


def test_dry_run_refuses_what_publish_refuses(tmp_path: Path) -> None:
    idx = tmp_path / "idx"
    released = tmp_path / "released"
    make_wheel(released, "demo-1.0-py3-none-any.whl")
    publish(released, parse_target(str(idx)))
    before = _snapshot(idx)

    conflict = tmp_path / "conflict"
    make_wheel(conflict, "demo-1.0-py3-none-any.whl", payload=b"VALUE = 2\n")
    result = run_cli("publish", str(conflict), "--to", str(idx), "--dry-run")
    assert result.returncode == 10 and "already has a file of this name with other bytes" in result.stderr

    failed = tmp_path / "failed"
    make_wheel(failed, "bad-1.0-py3-none-any.whl", verdict=FAILING)
    result = run_cli("publish", str(failed), "--to", str(idx), "--dry-run")
    assert result.returncode == 10 and "the gate failed" in result.stderr
    assert _snapshot(idx) == before


def test_dry_run_remote_reads_the_index_and_uploads_nothing(
    tmp_path: Path, servers: tuple[Recording, Recording]
) -> None:
    upload, _ = servers
    dist = tmp_path / "dist"
    make_wheel(dist, "alpha-1.0-py3-none-any.whl")
    demo = make_wheel(dist, "demo-1.0-py3-none-any.whl")
    upload.routes["/simple/demo/"] = Route(body=_page(f"{demo.name}#sha256={sha256_file(demo)}"))
    outcomes = publish(dist, parse_target(upload.url), env=CREDS_ENV, dry_run=True)
    assert [(o.wheel.name, o.status, o.where) for o in outcomes] == [
        ("alpha-1.0-py3-none-any.whl", "would publish", f"{upload.url}simple/alpha/"),
        (demo.name, "already published", f"{upload.url}simple/demo/"),
    ]
    assert [(m, p) for m, p, _ in upload.seen] == [("GET", "/simple/alpha/"), ("GET", "/simple/demo/")]

    upload.routes["/simple/demo/"] = Route(body=_page(f"{demo.name}#sha256={'e' * 64}"))
    with pytest.raises(PublishRefused, match="already has a file of this name with other bytes"):
        publish(dist, parse_target(upload.url), env=CREDS_ENV, dry_run=True)
    assert {m for m, _, _ in upload.seen} == {"GET"}


def test_recipe_target_takes_simple_url(tmp_path: Path) -> None:
    """--simple-url applies to a recipe's index target too (it was ignored with --recipe)."""
    from buildkit.publish.target import target_of

    indexed = tmp_path / "indexed.yaml"
    indexed.write_text(
        RECIPE.replace("  directory: site/index\n", "  index: https://pkgs.example.org/upload/\n")
    )
    recipe = load_recipe(indexed)
    assert target_of(recipe).simple_url == "https://pkgs.example.org/upload/simple/"
    given = target_of(recipe, simple_url="https://pkgs.example.org/simple/")
    assert (given.kind, given.simple_url) == ("index", "https://pkgs.example.org/simple/")
    demo, _ = _two_recipes(tmp_path)
    with pytest.raises(UsageError, match="publishes to a directory, which has no simple pages"):
        target_of(load_recipe(demo), simple_url="https://pkgs.example.org/simple/")


def test_collect_skips_a_directory_target_inside_dist(tmp_path: Path) -> None:
    """`publish dist --to dist/index`: the index's own copies are not wheels to publish."""
    dist = tmp_path / "dist"
    kept = make_wheel(dist / "cp312-rocm6.4", "demo-1.0-py3-none-any.whl")
    copy = make_wheel(dist / "index" / "simple" / "demo", "demo-0.9-py3-none-any.whl", with_manifest=False)
    inside = Target("directory", str(dist / "index"))
    assert collect(dist, inside) == [kept]
    assert collect(dist) == sorted([copy, kept])  # without the target, nothing tells them apart
    # the same target written another way (relative, through "..") is recognised
    relative = Target("directory", os.path.relpath(dist / "x" / ".." / "index"))
    assert collect(dist, relative) == [kept]
    # a target outside DIST, or a remote one, skips nothing
    assert collect(dist, Target("directory", str(tmp_path / "site"))) == sorted([copy, kept])
    assert collect(dist, parse_target("https://pkgs.example/upload/")) == sorted([copy, kept])


def test_publishing_twice_into_an_index_inside_dist(tmp_path: Path) -> None:
    """The second run reports "already published" instead of refusing the index's copies (exit 10)."""
    dist = tmp_path / "dist"
    make_wheel(dist / "j1", "demo-1.0-py3-none-any.whl")
    target = parse_target(str(dist / "index"))
    assert [o.status for o in publish(dist, target)] == ["published"]
    assert sorted(p.name for p in (dist / "index").rglob("*.whl")) == ["demo-1.0-py3-none-any.whl"]
    assert [o.status for o in publish(dist, target)] == ["already published"]
    again = run_cli("publish", str(dist), "--to", str(dist / "index"))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "already published" in again.stdout
