"""Issue 38, case 7: a password in the recipe's ``publish.index`` URL passed ``plan`` silently, and a
token in a query string was echoed in the publish log. A credential in any URL of a recipe is now a
recipe error at its ``file:line:column`` naming the key (exit 3, the secret not shown); a query-string
token is scrubbed from logs as a URL's userinfo is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from buildkit.credentials import redact, url_secrets
from buildkit.errors import PublishRefused, RecipeError
from buildkit.publish.scrub import scrub, strip_userinfo
from buildkit.recipe import load_recipe
from buildkit.service.publish import run_publish

ROOT = Path(__file__).resolve().parents[2]
SECRET = "hunter2pass"


def _recipe(tmp_path: Path, key: str, new: str) -> Path:
    """recipes/reference-trixie.yaml with the line of ``key`` under its section replaced by ``new``."""
    lines = (ROOT / "recipes" / "reference-trixie.yaml").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"  {key}:"))
    lines[at : at + 1] = new.splitlines()
    path = tmp_path / "r.yaml"
    path.write_text("\n".join(lines).replace("path: ../csrc", f"path: {ROOT / 'csrc'}") + "\n")
    return path


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if needle in line)


def test_plan_refuses_a_password_in_publish_index_at_its_position(tmp_path: Path) -> None:
    path = _recipe(tmp_path, "directory", f"  index: https://ci:{SECRET}@pypi.example.com/legacy/")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "buildkit", "plan", str(path)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 3, done.stdout + done.stderr
    line = _line_of(path, "index: https://ci:")
    assert (
        f"{path}:{line}:10: error: publish.index: the URL https://ci:***@pypi.example.com/legacy/ holds a "
        "password in its user part" in done.stderr
    )
    assert "~/.netrc" in done.stderr and SECRET not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("https://example.org/x-1.0.tar.gz?token=ab12cd34", "a credential in its query string (token=)"),
        ("https://bucket.s3.amazonaws.com/x.tar.gz?X-Amz-Signature=ff00", "(X-Amz-Signature=)"),
        ("https://ghp_abcdefghijklmnop1234@example.org/x.tar.gz", "a token as its user name"),
        ("https://u:p4ssw0rd@example.org/x.tar.gz", "a password in its user part"),
    ],
)
def test_any_url_of_the_recipe_is_checked(tmp_path: Path, url: str, said: str) -> None:
    path = _recipe(tmp_path, "path", f"  url: {url}\n  sha256: {'0' * 64}")
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    problems = [str(p) for p in getattr(info.value, "problems", [info.value])] or [str(info.value)]
    joined = "\n".join(problems) + str(info.value)
    assert "source.url: the URL " in joined and said in joined, joined
    assert f":{_line_of(path, 'url: ')}:" in joined


def test_a_plain_url_or_a_user_name_alone_is_no_credential() -> None:
    assert url_secrets("https://pypi.example.org/rocm/") == []
    assert url_secrets("https://__token__@upload.pypi.org/legacy/") == []  # the password comes elsewhere
    assert url_secrets("https://download.pytorch.org/whl/rocm6.4?keyword=x") == []
    assert url_secrets("https://ci:${INDEX_PASSWORD}@pypi.example.org/") == []  # names a variable


def test_query_tokens_are_scrubbed_from_logs_like_userinfo(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:9/legacy/?token={SECRET}&project=demo"
    assert SECRET not in scrub(f"uploading to {url}: 403 Forbidden", [])
    assert (
        scrub(f"uploading to {url}: 403", [])
        == "uploading to http://127.0.0.1:9/legacy/?token=***&project=demo: 403"
    )
    assert strip_userinfo(f"https://u:pw@h/x?access_token={SECRET}") == "https://h/x?access_token=***"
    assert (
        redact(f"https://h/?X-Amz-Signature={SECRET}&X-Amz-Date=1")
        == "https://h/?X-Amz-Signature=***&X-Amz-Date=1"
    )
    # the publish log, written and echoed (nothing to publish: the run stops after its first lines)
    dist, log = tmp_path / "dist", tmp_path / "publish.log"
    dist.mkdir()
    echoed: list[str] = []
    with pytest.raises(PublishRefused):
        run_publish(dist, to=url, log_file=log, echo=echoed.append)
    assert echoed and SECRET not in "\n".join(echoed) and SECRET not in log.read_text()
    assert "token=***" in log.read_text()
