"""The recipe's ``publish:``: where ``buildkit publish`` sends the gated wheels: PyPI (``pypi``), an
index server (``index``: its upload URL) or a static PEP 503 tree (``directory``, relative to the
recipe). The schema allows exactly one."""

from __future__ import annotations

from dataclasses import dataclass

from buildkit.recipe.section import Context, Section

PYPI_UPLOAD = "https://upload.pypi.org/legacy/"


@dataclass(frozen=True)
class Publish:
    kind: str  # "pypi" | "index" | "directory"
    target: str  # "https://upload.pypi.org/legacy/", an index URL, or a directory relative to the recipe


def parse_publish(ctx: Context) -> Publish | None:
    p = ctx.data.get("publish")
    if p is None:
        return None
    if "pypi" in p:
        return Publish("pypi", PYPI_UPLOAD)
    if "index" in p:
        return Publish("index", p["index"])
    return Publish("directory", p["directory"])


SECTION = Section("publish", ("publish",), parse_publish, "publish")
