"""Every repository path a document names exists.

A document names a path in backticks (```buildkit/building/job.py```, ```tests/unit/test_x.py::test_y```,
```docker/<name>.Dockerfile```, ```buildkit/rocm/*.yaml```) or as a Markdown link (``[text](REFERENCE.md)``,
relative to the document). A path is a word starting with a top-level folder of the repository; a
``:line`` or ``::test`` suffix and a ``#anchor`` are dropped; ``<placeholder>``, ``{a,b}`` and globs must
match at least one file.

The documents: README.md, docs/*.md, the gate's rules as shipped in the package, bench/README.md and
the text files of docker/ except two kinds, which are not scanned: ``docker/*.Dockerfile`` and
``docker/sysroot.sh``. Their bytes are the content tag of the builder images (buildkit/image/content.py),
so an edit of a comment forces every builder image to be built again (about 15 minutes); their comments
may name a path as it was when the image was last built.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: The folders a repository path starts with.
TOP = ("buildkit", "tests", "docker", "recipes", "bench", "docs", "csrc", ".github")

#: Files that are not scanned, and why.
NOT_SCANNED = {
    "docker/*.Dockerfile": "its bytes key the builder images: an edit rebuilds them (15 minutes)",
    "docker/sysroot.sh": "its bytes key the builder images: an edit rebuilds them (15 minutes)",
}

#: Paths a document names that are not (or not yet) in this repository, with the reason.
ELSEWHERE = {
    ("docs/PRODUCTION_BUILDER.md", "docs/design/manylinux_builds.md"): "a file of ROCm/TheRock",
    ("docs/PRODUCTION_BUILDER.md", "docs/install/install-methods/package-manager/package-manager-rhel.rst"): (
        "a file of ROCm/rocm-install-on-linux"
    ),
    ("docs/PRODUCTION_BUILDER.md", "docs/how-to/native-install/rhel.rst"): "of ROCm/rocm-install-on-linux",
    ("docs/PRODUCTION_BUILDER.md", "docs/conf.py"): "a file of ROCm/rocm-install-on-linux",
    ("docs/PRODUCTION_BUILDER.md", "docs/reference/package-manager-integration.rst"): (
        "a file of ROCm/rocm-install-on-linux"
    ),
    ("docs/PRODUCTION_BUILDER.md", ".github/workflows/build_wheels.yml"): "a file of onlyxItachi/GAFIME",
    ("docs/PRODUCTION_BUILDER.md", ".github/scripts"): "a folder of onlyxItachi/GAFIME",
    ("bench/README.md", "tests/data/fuzz/"): "bench/fuzz.py's output folder, made on its first crash",
}

_WORD = re.compile(rf"(?<![\w./-])((?:{'|'.join(re.escape(t) for t in TOP)})/[^\s`'\"),;\]]*)")
_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def documents(root: Path) -> list[Path]:
    """The documents under ``root`` whose paths are checked (see the module docstring)."""
    docs = [root / "README.md", *sorted((root / "docs").glob("*.md")), root / "bench" / "README.md"]
    docs.append(root / "buildkit" / "gate" / "GATE-RULES.md")
    skipped = {p for pattern in NOT_SCANNED for p in root.glob(pattern)}
    docs += sorted(p for p in (root / "docker").iterdir() if p.is_file() and p not in skipped)
    return [p for p in docs if p.is_file()]


def _exists(root: Path, path: str) -> bool:
    path = re.sub(r"::.*$|:\d.*$|#.*$", "", path).rstrip(".:")
    pattern = re.sub(r"<[^>]*>|\{[^}]*\}", "*", path)
    if any(c in pattern for c in "*?["):
        return bool(glob.glob(str(root / pattern)))
    return (root / pattern).exists()


def missing_paths(root: Path, doc: Path) -> list[str]:
    """``doc:line: path`` for each path ``doc`` names that does not exist under ``root``."""
    name = doc.relative_to(root).as_posix()
    text = doc.read_text(encoding="utf-8")
    missing = []
    for number, line in enumerate(text.splitlines(), 1):
        named = [word for code in _CODE.findall(line) for word in _WORD.findall(code)]
        for path in named:
            if (name, path) not in ELSEWHERE and not _exists(root, path):
                missing.append(f"{name}:{number}: {path}")
        # the shipped copy of the gate's rules is docs/GATE-RULES.md's: its links are the original's
        if doc.suffix != ".md" or name == "buildkit/gate/GATE-RULES.md":
            continue
        for target in _LINK.findall(line):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            relative = (doc.parent / target.split("#")[0]).resolve().relative_to(root.resolve()).as_posix()
            if not _exists(root, relative):
                missing.append(f"{name}:{number}: link {target}")
    return missing


def test_every_path_a_document_names_exists() -> None:
    problems = [problem for doc in documents(REPO) for problem in missing_paths(REPO, doc)]
    assert problems == []


def test_the_documents_include_the_architecture_and_the_reference() -> None:
    names = {p.relative_to(REPO).as_posix() for p in documents(REPO)}
    assert {"README.md", "docs/ARCHITECTURE.md", "docs/REFERENCE.md", "docker/README.md"} <= names
    assert not any(n.endswith(".Dockerfile") or n == "docker/sysroot.sh" for n in names)


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("see `buildkit/building/job.py`", []),
        ("see `buildkit/build/job.py:50`", ["docs/X.md:1: buildkit/build/job.py:50"]),
        ("`pytest tests/unit/test_nothing.py::test_x`", ["docs/X.md:1: tests/unit/test_nothing.py::test_x"]),
        ("`docker/<name>.Dockerfile` and `buildkit/rocm/*.yaml`", []),
        ("`docker/<name>.nothing`", ["docs/X.md:1: docker/<name>.nothing"]),
        ("[the reference](REFERENCE.md#exit-codes), [gone](NOWHERE.md)", ["docs/X.md:1: link NOWHERE.md"]),
        ("buildkit/build/ outside backticks is prose", []),
    ],
)
def test_a_wrong_path_in_a_document_is_found(tmp_path: Path, line: str, found: list[str]) -> None:
    root = tmp_path / "repo"
    for path in ("buildkit/building/job.py", "buildkit/rocm/releases.yaml", "docker/a.Dockerfile"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("")
    (root / "docs").mkdir()
    (root / "docs" / "REFERENCE.md").write_text("# Reference\n")
    doc = root / "docs" / "X.md"
    doc.write_text(line + "\n")
    assert doc in documents(root)
    assert missing_paths(root, doc) == found


def test_the_image_keyed_files_are_not_scanned(tmp_path: Path) -> None:
    (tmp_path / "docker").mkdir()
    for name in ("a.Dockerfile", "sysroot.sh", "README.md"):
        (tmp_path / "docker" / name).write_text("`buildkit/build/nothing.py`\n")
    assert [p.name for p in documents(tmp_path)] == ["README.md"]
