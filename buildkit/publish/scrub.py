"""What ``publish`` never shows: the values of credential variables (twine's, and any
``*TOKEN*``/``*PASSWORD*``/``*SECRET*``/``*API_KEY*`` one), the userinfo of a URL and the value of a
query parameter named as a credential (``?token=``, ``X-Amz-Signature=``: :func:`buildkit.pyindex.redact`)."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping

from buildkit.credentials import SECRET_QUERY, redact_text

_SECRET_ENV = ("TWINE_PASSWORD", "TWINE_USERNAME")
_SECRET_NAME = re.compile(r"(TOKEN|PASSWORD|SECRET|API_KEY)", re.IGNORECASE)
REDACTED = "***"


def strip_userinfo(url: str) -> str:
    """``url`` without its user part, and with each credential query value replaced by ``***``."""
    parts = urllib.parse.urlsplit(url)
    if parts.query:
        pairs = [pair.partition("=") for pair in parts.query.split("&")]
        query = "&".join(
            f"{k}={REDACTED if v and SECRET_QUERY.match(urllib.parse.unquote(k)) else v}" if eq else k
            for k, eq, v in pairs
        )
        parts = parts._replace(query=query)
    if parts.username is None and parts.password is None:
        return urllib.parse.urlunsplit(parts)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def secrets_from(env: Mapping[str, str]) -> list[str]:
    """Values that must never be echoed: twine credentials and any *TOKEN*/*PASSWORD* variable."""
    values = {env[k] for k in _SECRET_ENV if env.get(k)}
    values |= {v for k, v in env.items() if _SECRET_NAME.search(k) and v}
    # a username such as __token__ is not secret; short values would redact ordinary words
    return sorted((v for v in values if len(v) >= 6 and v != "__token__"), key=len, reverse=True)


def scrub(text: str, secrets: list[str]) -> str:
    """``text`` without the ``secrets`` (plain or URL-quoted) nor any URL's credentials."""
    text = redact_text(text)
    for secret in secrets:
        text = text.replace(secret, REDACTED)
        quoted = urllib.parse.quote(secret, safe="")
        if quoted != secret:
            text = text.replace(quoted, REDACTED)
    return text
