"""The recipe's ``version:``: where the wheels' version comes from (a fixed ``base``, or the source's
git tags with ``from: git-tag`` and a ``tag_pattern``) and the ``local`` label template, whose
placeholders name the job's axes (``{rocm}``, ``{torch_nodot}``, a ``matrix.axes`` name). A local
label is refused when the recipe publishes to PyPI."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from buildkit import version as ver
from buildkit.recipe.schema import did_you_mean
from buildkit.recipe.section import Context, ErrorAt, Section
from buildkit.recipe.sections.matrix import Matrix
from buildkit.recipe.sections.publish import Publish
from buildkit.recipe.sections.torch import TorchStable, pins


@dataclass(frozen=True)
class VersionSpec:
    base: str | None  # normalised PEP 440, or None with from_git_tag
    from_git_tag: bool
    tag_pattern: str
    local: str  # template, "" for none


def _base(v: Mapping[str, Any], err: ErrorAt) -> str | None:
    """``version.base`` normalised, or None with ``from: git-tag`` (whose ``tag_pattern`` is checked)."""
    if "base" in v:
        try:
            base = ver.check_base(v["base"])
        except ver.VersionProblem as exc:
            raise err(f"version.base: {exc}", ("version", "base")) from None
        if "tag_pattern" in v:
            raise err(
                "version.tag_pattern applies only with from: git-tag", ("version", "tag_pattern"), key=True
            )
        return base
    if "tag_pattern" in v:
        try:
            pattern = re.compile(v["tag_pattern"])
        except re.error as exc:
            raise err(
                f"version.tag_pattern is not a regular expression: {exc}", ("version", "tag_pattern")
            ) from None
        if pattern.groups and "version" not in pattern.groupindex:
            raise err(
                "version.tag_pattern has groups but none named 'version'",
                ("version", "tag_pattern"),
                hint="write e.g. ^v(?P<version>.+)$",
            )
    return None


def _check_local(local: str, torch_part: Any, matrix: Matrix, err: ErrorAt) -> None:
    """Every placeholder of ``version.local`` names an axis the recipe has."""
    try:
        fields = ver.template_fields(local)
    except ver.VersionProblem as exc:
        raise err(f"version.local: {exc}", ("version", "local")) from None
    allowed = ver.PLACEHOLDERS + tuple(n for n, _ in matrix.axes)
    for f in fields:
        if f not in allowed:
            raise err(
                f"version.local: unknown placeholder {{{f}}}",
                ("version", "local"),
                hint=did_you_mean(f, allowed) or f"placeholders: {', '.join(allowed)}",
            )
        if f.startswith("torch") and isinstance(torch_part, TorchStable):
            raise err(
                f"version.local uses {{{f}}} but the recipe's torch is the stable ABI: its wheels serve "
                f"every torch from {torch_part.lowest} on, so their version names none",
                ("version", "local"),
                hint="drop the placeholder",
            )
        if f.startswith("torch") and not pins(torch_part):
            raise err(
                f"version.local uses {{{f}}} but the recipe pins no torch",
                ("version", "local"),
                hint="add a torch pin or drop the placeholder",
            )


def _parse_version(ctx: Context) -> VersionSpec:
    v = ctx.data["version"]
    base = _base(v, ctx.err)
    local = v.get("local", "")
    _check_local(local, ctx.part("torch"), ctx.part("matrix", Matrix()), ctx.err)
    publish: Publish | None = ctx.part("publish")
    if local and publish is not None and publish.kind == "pypi":
        raise ctx.err(
            f"publish.pypi with a local version label ({local!r}): {ver.PYPI_LOCAL_REASON}",
            ("publish", "pypi"),
            key=True,
        )
    return VersionSpec(
        base=base,
        from_git_tag=v.get("from") == "git-tag",
        tag_pattern=v.get("tag_pattern", ver.DEFAULT_TAG_PATTERN),
        local=local,
    )


SECTION = Section("version", ("version", "torch", "matrix", "publish"), _parse_version, "version")
