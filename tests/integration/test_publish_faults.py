"""Publishing into one static index under faults, with real processes (``python -m buildkit publish``).

* Concurrent publishers: three runs started together into one index all land (the index lock), and
  the index is consistent: every page whole, every file a page lists present with its sha256 and its
  ``.metadata``, every wheel listed, no temporary file left.
* SIGKILL: a publish killed at a filesystem operation inside the index (chosen by an audit hook in the
  publishing process: ``open``, ``os.replace``, ``os.remove``, ``os.mkdir``, ...; a random sample of all
  of them, ``BUILDKIT_KILL_POINTS=all`` for every one) or after a random delay leaves pages a reader can
  use (each page whole, nothing listed that is not there with its metadata); once recovered (the next
  update, or :func:`buildkit.publish.index.recover`), the index is exactly as before or as after.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from buildkit.manifest import sha256_file
from buildkit.publish import index
from tests.helpers.wheels_for_publish import make_wheel, trust_test_key

ROOT = Path(__file__).resolve().parents[2]

#: runs the CLI in a process that SIGKILLs itself before its K-th filesystem operation under the index
#: (K = argv[2]; 0: never, and the number of operations is written to argv[3] at exit)
KILLER = """\
import atexit, os, signal, sys
root, kill_at, count_file = os.path.realpath(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
WATCH = {"open", "os.replace", "os.rename", "os.remove", "os.mkdir", "os.rmdir", "os.chmod", "os.truncate"}
seen = 0
def hook(event, args):
    global seen
    if event not in WATCH or not args or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    path = os.path.realpath(os.fsdecode(args[0]))
    if path != root and not path.startswith(root + os.sep):
        return
    seen += 1
    if seen == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
def report():
    with open(count_file, "w") as fh:
        fh.write(str(seen))
atexit.register(report)
sys.addaudithook(hook)
from buildkit.cli import main
main(["publish", sys.argv[4], "--to", sys.argv[1]])
"""


@pytest.fixture(autouse=True)
def publisher_key(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    return trust_test_key(monkeypatch, tmp_path_factory.mktemp("publisher"))


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[dict[str, str | None]] = []
        self.closed = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links.append(dict(attrs))

    def handle_endtag(self, tag: str) -> None:
        self.closed = self.closed or tag == "html"


def _page(path: Path) -> list[dict[str, str | None]]:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    assert parser.closed, f"{path} is not a whole page"
    return parser.links


def assert_readable(root: Path) -> dict[str, set[str]]:
    """What a reader (pip) sees is sound, page by page (an interrupted update may have renamed a
    project's JSON page and not yet its HTML page: each is whole, of before or of after): each page
    whole; each file a project page lists is there, with the listed sha256 and a ``.metadata`` of the
    listed sha256; each project the root pages list has its pages. Returns project -> files listed
    in its JSON page."""
    simple = root / "simple"
    listed: dict[str, set[str]] = {}
    if not (simple / "index.html").exists():
        assert not (simple / "index.json").exists()
        return listed
    projects = {str(link["href"]).rstrip("/") for link in _page(simple / "index.html")}
    projects |= {p["name"] for p in json.loads((simple / "index.json").read_text())["projects"]}
    for project in sorted(projects):
        folder = simple / project
        files = {f["filename"]: f for f in json.loads((folder / "index.json").read_text())["files"]}
        for entry in files.values():
            wheel = folder / entry["filename"]
            assert sha256_file(wheel) == entry["hashes"]["sha256"]
            meta = (folder / (entry["filename"] + ".metadata")).read_bytes()
            assert hashlib.sha256(meta).hexdigest() == entry["core-metadata"]["sha256"]
        for link in _page(folder / "index.html"):
            name, _, digest = str(link["href"]).partition("#sha256=")
            assert sha256_file(folder / name) == digest
            meta = (folder / (name + ".metadata")).read_bytes()
            assert link["data-core-metadata"] == f"sha256={hashlib.sha256(meta).hexdigest()}"
            if link.get("data-provenance"):  # the attestation a page names is there, whole
                json.loads((folder / str(link["data-provenance"])).read_bytes())
        listed[project] = set(files)
    return listed


def assert_consistent(root: Path) -> dict[str, set[str]]:
    """:func:`assert_readable`, and nothing else in the tree: every wheel listed, every .metadata and
    .provenance a wheel's, no temporary file, no journal."""
    listed = assert_readable(root)
    simple = root / "simple"
    if listed:  # the HTML and JSON pages agree
        assert {str(link["href"]).rstrip("/") for link in _page(simple / "index.html")} == set(listed)
        for project, files in listed.items():
            links = _page(simple / project / "index.html")
            assert {str(link["href"]).partition("#")[0] for link in links} == files
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if path.is_dir():
            assert len(rel.parts) <= 2 and rel.parts[0] == "simple", rel
            continue
        if rel.name == index.LOCK_NAME and len(rel.parts) == 1:
            continue
        assert len(rel.parts) in (2, 3) and rel.parts[0] == "simple", rel
        if len(rel.parts) == 2:
            assert rel.name in ("index.html", "index.json"), rel
            continue
        project, name = rel.parts[1], rel.parts[2]
        wheel = name.removesuffix(".metadata").removesuffix(".provenance")
        assert name in ("index.html", "index.json") or wheel in listed.get(project, set()), rel
    return listed


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != index.LOCK_NAME
    }


def _batch(folder: Path, names: list[str]) -> Path:
    for name in names:
        make_wheel(folder / name.split("-")[0], name, payload=name.encode())
    return folder


def test_concurrent_publishers_all_land_in_a_consistent_index(tmp_path: Path) -> None:
    idx = tmp_path / "idx"
    batches = [
        _batch(tmp_path / "a", ["demo-1.0-py3-none-any.whl", "alpha-1.0-py3-none-any.whl"]),
        _batch(tmp_path / "b", ["demo-1.1-py3-none-any.whl", "beta-1.0-py3-none-any.whl"]),
        _batch(tmp_path / "c", ["demo-1.2-py3-none-any.whl", "alpha-1.1-py3-none-any.whl"]),
    ]
    for round_ in range(2):  # the second round: every file again, all "already published"
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "buildkit", "publish", str(dist), "--to", str(idx), "--json"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=_env(),
            )
            for dist in batches
        ]
        outputs = [p.communicate(timeout=120) for p in procs]
        for proc, (out, err) in zip(procs, outputs, strict=True):
            assert proc.returncode == 0, err
            statuses = {w["status"] for w in json.loads(out)["wheels"]}
            assert statuses == ({"published"} if round_ == 0 else {"already published"})
        listed = assert_consistent(idx)
        assert listed == {
            "alpha": {"alpha-1.0-py3-none-any.whl", "alpha-1.1-py3-none-any.whl"},
            "beta": {"beta-1.0-py3-none-any.whl"},
            "demo": {f"demo-1.{n}-py3-none-any.whl" for n in range(3)},
        }
        for dist in batches:
            for wheel in dist.rglob("*.whl"):
                project = wheel.name.split("-")[0]
                assert (idx / "simple" / project / wheel.name).read_bytes() == wheel.read_bytes()


@pytest.fixture
def scene(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes], dict[str, bytes], int]:
    """An index holding a release, a batch to publish into it (a new project and new versions of the
    released one), the index's files before and after, and how many filesystem operations under the
    index a full publish makes."""
    released = _batch(tmp_path / "released", ["demo-0.9-py3-none-any.whl"])
    before_idx = tmp_path / "before"
    assert (
        subprocess.run(
            [sys.executable, "-m", "buildkit", "publish", str(released), "--to", str(before_idx)],
            env=_env(),
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )
    dist = _batch(
        tmp_path / "dist",
        ["demo-1.0-py3-none-any.whl", "demo-1.1-py3-none-any.whl", "gamma-2.0-py3-none-any.whl"],
    )
    after_idx = tmp_path / "after"
    shutil.copytree(before_idx, after_idx)
    count = tmp_path / "count"
    killer = tmp_path / "killer.py"
    killer.write_text(KILLER)
    done = subprocess.run(
        [sys.executable, str(killer), str(after_idx), "0", str(count), str(dist)],
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    before, after = snapshot(before_idx), snapshot(after_idx)
    assert set(after) - set(before) >= {"simple/gamma/gamma-2.0-py3-none-any.whl"}
    assert_consistent(after_idx)
    return before_idx, dist, before, after, int(count.read_text())


def _killed_run(
    tmp_path: Path, before_idx: Path, dist: Path, kill_at: int, delay: float | None = None
) -> Path:
    idx = tmp_path / "idx"
    if idx.exists():
        shutil.rmtree(idx)
    shutil.copytree(before_idx, idx)
    args = [
        sys.executable,
        str(tmp_path / "killer.py"),
        str(idx),
        str(kill_at),
        str(tmp_path / "n"),
        str(dist),
    ]
    proc = subprocess.Popen(args, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if delay is not None:
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    if delay is None:
        assert proc.returncode == -signal.SIGKILL, err.decode()
    return idx


def test_sigkill_at_any_filesystem_operation_leaves_the_index_as_before_or_as_after(
    tmp_path: Path, scene: tuple[Path, Path, dict[str, bytes], dict[str, bytes], int]
) -> None:
    before_idx, dist, before, after, total = scene
    assert total >= 20  # the lock, the reads, the staging, the journal and the renames
    points = list(range(1, total + 1))
    if os.environ.get("BUILDKIT_KILL_POINTS") != "all":
        rng = random.Random(os.environ.get("BUILDKIT_KILL_SEED", "28"))
        points = sorted({1, total, *rng.sample(points, min(10, total))})
    outcomes: dict[int, str] = {}
    for point in points:
        idx = _killed_run(tmp_path, before_idx, dist, point)
        assert_readable(idx)  # what a reader sees before any recovery
        journal = (idx / ".buildkit-index.journal").exists()
        index.recover(idx)
        state = snapshot(idx)
        assert state in (before, after), f"killed at operation {point} of {total}: neither before nor after"
        assert_consistent(idx)
        outcomes[point] = ("after" if state == after else "before") + (" (journal)" if journal else "")
    assert outcomes[1] == "before" and outcomes[total] == "after", outcomes
    # both sides of the commit point were hit (every run of all 44 points here: 1-26 before, 27-43
    # committed and completed by recovery, 44 after)
    assert {"before", "after (journal)"} <= set(outcomes.values()), outcomes

    # the next publish recovers by itself: killed mid-commit, then run again: exactly "after"
    committed = [p for p, o in outcomes.items() if o == "after (journal)"]
    idx = _killed_run(tmp_path, before_idx, dist, committed[0])
    again = subprocess.run(
        [sys.executable, "-m", "buildkit", "publish", str(dist), "--to", str(idx)],
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert snapshot(idx) == after and re.search(r"already published\s+gamma-2\.0", again.stdout)


def test_sigkill_after_a_random_delay(
    tmp_path: Path, scene: tuple[Path, Path, dict[str, bytes], dict[str, bytes], int]
) -> None:
    """Killed from outside at random moments of the whole run (start-up, the gate, the writes)."""
    before_idx, dist, before, after, _ = scene
    rng = random.Random(os.environ.get("BUILDKIT_KILL_SEED", "28"))
    for _ in range(4):
        idx = _killed_run(tmp_path, before_idx, dist, 0, delay=rng.uniform(0.05, 2.5))
        assert_readable(idx)
        index.recover(idx)
        assert snapshot(idx) in (before, after)
        assert_consistent(idx)


def test_an_unreadable_journal_stops_the_next_publish_without_a_traceback(tmp_path: Path) -> None:
    """The journal is written atomically, so it is whole or absent; one damaged by hand is not guessed
    at: the next publish stops (exit 2) naming it, and writes nothing."""
    idx = tmp_path / "idx"
    released = _batch(tmp_path / "released", ["demo-0.9-py3-none-any.whl"])
    run = [sys.executable, "-m", "buildkit", "publish"]
    assert subprocess.run([*run, str(released), "--to", str(idx)], env=_env(), check=False).returncode == 0
    before = snapshot(idx)
    (idx / ".buildkit-index.journal").write_text("{not json")
    dist = _batch(tmp_path / "dist", ["gamma-2.0-py3-none-any.whl"])
    result = subprocess.run(
        [*run, str(dist), "--to", str(idx)], env=_env(), capture_output=True, text=True, check=False
    )
    assert result.returncode == 2, result.stderr
    assert "the record of an interrupted update is unreadable" in result.stderr
    assert "Traceback" not in result.stderr
    assert {k: v for k, v in snapshot(idx).items() if k != ".buildkit-index.journal"} == before
