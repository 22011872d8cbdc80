"""Reading a recipe file and turning it into a :class:`~buildkit.recipe.model.Recipe`: every section of
:data:`~buildkit.recipe.sections.SECTIONS` in turn, every problem collected and reported in one
:class:`RecipeError`, sorted by position.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from buildkit.errors import RecipeError
from buildkit.recipe.model import PartialRecipe, Recipe
from buildkit.recipe.schema import problems as schema_problems
from buildkit.recipe.section import Context
from buildkit.recipe.sections import SECTIONS
from buildkit.recipe.yamlspan import load_with_spans

#: The recipe's keys that can change neither a wheel nor its gate: editing them keeps built wheels the
#: recipe's (:func:`build_digest`; ``publish --recipe`` takes them without a rebuild)
_NOT_BUILD_KEYS = frozenset({"publish", "smoke"})

#: A recipe is a short YAML file: anything larger is refused before it is read into memory.
MAX_RECIPE_BYTES = 2**20
_FILE_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
}


def _read_recipe_bytes(path: Path, display: str) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_RECIPE_BYTES`.

    Opened non-blocking, so a FIFO cannot hang the open; devices (``/dev/zero``), FIFOs and
    directories are refused from ``fstat`` of the opened file (no race with a check by name).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise RecipeError(f"cannot read the recipe: {exc.strerror or exc}", file=display) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = _FILE_KINDS.get(stat.S_IFMT(st.st_mode), "an unknown kind of file")
        raise RecipeError(
            f"the recipe is not a regular file ({kind})", file=display, hint="give the path of a YAML file"
        )
    with os.fdopen(fd, "rb") as handle:
        limit = MAX_RECIPE_BYTES
        try:
            raw = handle.read(limit + 1)
        except OSError as exc:
            raise RecipeError(f"cannot read the recipe: {exc.strerror or exc}", file=display) from None
    if len(raw) > limit:
        raise RecipeError(
            f"the recipe is larger than {limit // 2**20} MiB ({max(st.st_size, len(raw))} bytes)",
            file=display,
            hint="a recipe is a short YAML file; is this the right path?",
        )
    return raw


def load_recipe(path: str | Path) -> Recipe:
    """Read and validate a recipe; raises :class:`RecipeError` at ``file:line:column``."""
    p = Path(path)
    display = str(path)
    raw = _read_recipe_bytes(p, display)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecipeError(f"the recipe is not UTF-8 text (byte {exc.start})", file=display) from None
    return parse_recipe(text, path=p, sha256=hashlib.sha256(raw).hexdigest())


def parse_recipe(text: str, *, path: Path, sha256: str | None = None) -> Recipe:
    """Validate recipe ``text`` (read from ``path``, which positions errors and relative paths), as the
    module docstring says."""
    display = str(path)
    data, spans = load_with_spans(text, display)
    errors, unusable = schema_problems(data, spans, display)
    if errors and not isinstance(data, dict):
        raise RecipeError.combine(errors)
    digest = sha256 or hashlib.sha256(text.encode("utf-8")).hexdigest()
    ctx = Context(data, spans, path, errors, unusable)
    for section in SECTIONS:
        if any(n in ctx.unusable or n in ctx.failed for n in section.needs):
            ctx.failed.add(section.part)
            continue
        try:
            ctx.results[section.part] = section.parse(ctx)
        except RecipeError as exc:
            ctx.report(exc)
            ctx.failed.add(section.part)
    if ctx.problems or ctx.unusable:
        if not ctx.problems:  # pragma: no cover - the schema reports what makes a key unusable
            raise AssertionError(f"unusable recipe keys without a problem: {sorted(ctx.unusable)}")
        error = RecipeError.combine(ctx.problems)
        loaded: dict[str, Any] = {}
        for section in SECTIONS:
            if section.part in ctx.results and section.part not in ctx.failed:
                loaded.update(section.values(ctx.results[section.part]))
        kept = {k: loaded[k] for k in ("rocm", "python", "image", "manylinux") if loaded.get(k) is not None}
        error.partial = PartialRecipe(path=path, spans=spans, **kept)
        raise error
    fields: dict[str, Any] = {}
    for section in SECTIONS:
        fields.update(section.values(ctx.results[section.part]))
    return Recipe(
        path=path,
        sha256=digest,
        build_sha256=build_digest(data),
        build_keys=build_keys(data),
        spans=spans,
        **fields,
    )


def build_keys(data: dict[str, Any]) -> dict[str, str]:
    """Per top-level key of what can change a recipe's wheels (the :data:`_NOT_BUILD_KEYS` left out): the
    sha256 of its value as sorted JSON (16 hex). A wheel's manifest records them, so that ``plan`` names
    the keys an edit changed since the wheel was built (:func:`buildkit.service.plan.stale_notes`)."""
    return {
        k: hashlib.sha256(json.dumps(v, sort_keys=True, default=str).encode()).hexdigest()[:16]
        for k, v in sorted(data.items())
        if k not in _NOT_BUILD_KEYS
    }


def build_digest(data: dict[str, Any]) -> str:
    """The sha256 of what of a recipe can change its wheels or their gate: its data (YAML read, so comments
    and layout do not count) without the :data:`_NOT_BUILD_KEYS`, as sorted JSON."""
    kept = {k: v for k, v in data.items() if k not in _NOT_BUILD_KEYS}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()
