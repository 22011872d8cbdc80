"""No credential in a recipe: a recipe is committed, shared and printed (``plan``, manifests, logs),
so a URL holding a password, a token as its user name or a credential query parameter
(:func:`buildkit.credentials.url_secrets`) anywhere in it is refused at its ``file:line:column``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from buildkit.credentials import redact, url_secrets
from buildkit.recipe.schema import where_of
from buildkit.recipe.section import Context, Section
from buildkit.recipe.yamlspan import Path as JsonPath

_HINT = (
    "keep credentials out of the recipe: ~/.netrc (pip, uv, twine and buildkit read it), "
    "TWINE_USERNAME/TWINE_PASSWORD for an upload, or a CI secret in the environment; then revoke "
    "the credential, which the recipe's history keeps"
)


def _strings(value: Any, at: JsonPath) -> Iterator[tuple[JsonPath, str]]:
    if isinstance(value, str):
        yield at, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*at, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, (*at, i))


def _check_secrets(ctx: Context) -> None:
    """Every string of the recipe that is a URL with a credential, one problem each."""
    for at, text in _strings(ctx.data, ()):
        if "://" not in text:
            continue
        found = url_secrets(text.strip())
        if found:
            ctx.report(
                ctx.err(
                    f"{where_of(at)}: the URL {redact(text.strip())} holds {' and '.join(found)}",
                    at,
                    hint=_HINT,
                )
            )


SECTION = Section("secrets", (), _check_secrets, None)
